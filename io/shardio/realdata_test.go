package shardio

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/internal/devdata"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// TestRealDigits reads the sklearn_digits files written by parquet-rs and
// Arrow JS: ids 0..n-1, d = 64, features equal to features.f32, labels equal
// to the .i32 files.
func TestRealDigits(t *testing.T) {
	dir := needShared(t, "sklearn_digits")
	const n, d, c = 1797, 64, 10
	feats := devdata.ReadLE[float32](t, filepath.Join(dir, "features.f32"))
	truth := devdata.ReadLE[int32](t, filepath.Join(dir, "truth.i32"))
	for _, tc := range []struct {
		file   string
		format Format
		labels string // the .i32 file the labels must equal; "" for annotators
	}{
		{"clean.parquet", Parquet, "truth.i32"},
		{"noisy-idn-0.4.parquet", Parquet, "noisy-idn-0.4.i32"},
		{"noisy-sym-0.4.arrow", ArrowFile, "noisy-sym-0.4.i32"},
		{"annotators-5.parquet", Parquet, ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			opts := ReadOptions{Classes: c, Mem: mem}
			shards, rows, err := readAll(context.Background(), filepath.Join(dir, tc.file), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(shards) != 1 || shards[0].Format != tc.format || shards[0].Rows != n || shards[0].D != d {
				t.Fatalf("Scan: %d shards, first %+v; want one %v shard of %d rows, d=%d", len(shards), shards[0], tc.format, n, d)
			}
			if got := shards[0].Input.Multi; got != (tc.labels == "") {
				t.Errorf("Multi = %v", got)
			}
			var want []int32
			if tc.labels != "" {
				want = devdata.ReadLE[int32](t, filepath.Join(dir, tc.labels))
			}
			row := int64(0)
			majorityRight := 0
			for _, r := range rows {
				if err := r.Validate(); err != nil {
					t.Fatal(err)
				}
				if r.Offset != row || r.D != d || r.IDKind != schemas.IDInt64 {
					t.Fatalf("unit at offset %d (want %d), D %d, IDKind %v", r.Offset, row, r.D, r.IDKind)
				}
				for i := 0; i < r.Len(); i++ {
					g := row + int64(i)
					if r.IDs[i] != g {
						t.Fatalf("row %d: id %d", g, r.IDs[i])
					}
					for j := 0; j < d; j++ {
						if r.Features[i*d+j] != feats[g*d+int64(j)] {
							t.Fatalf("row %d dim %d: feature %v, features.f32 has %v", g, j, r.Features[i*d+j], feats[g*d+int64(j)])
						}
					}
					ann := r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]
					if want != nil {
						if len(ann) != 1 || ann[0] != want[g] {
							t.Fatalf("row %d: labels %v, %s has %d", g, ann, tc.labels, want[g])
						}
						continue
					}
					if len(ann) != 5 {
						t.Fatalf("row %d: %d annotations, want 5", g, len(ann))
					}
					if majority(ann, c) == truth[g] {
						majorityRight++
					}
				}
				row += int64(r.Len())
			}
			if row != n {
				t.Errorf("read %d rows, want %d", row, n)
			}
			if want == nil {
				// data/README.md: the majority vote of the 5 annotators is .912 accurate.
				if acc := float64(majorityRight) / n; math.Abs(acc-0.912) > 0.01 {
					t.Errorf("majority vote accuracy %.3f, README says .912", acc)
				}
			}
		})
	}
}

// majority is the most frequent class of ann, the smallest on ties.
func majority(ann []int32, c int) int32 {
	counts := make([]int, c)
	for _, a := range ann {
		counts[a]++
	}
	best := int32(0)
	for k := range counts {
		if counts[k] > counts[best] {
			best = int32(k)
		}
	}
	return best
}

// TestRealFashionUnits checks the units of a multi-row-group file written by
// parquet-rs: contiguous offsets over all 70,000 rows, and the last unit read.
func TestRealFashionUnits(t *testing.T) {
	path := needShared(t, "fashion_mnist_pca50/noisy-idn-0.4.parquet")
	ctx := context.Background()
	shards, err := Scan(ctx, path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	units := shards[0].Units
	if len(units) < 2 {
		t.Fatalf("%d units, want several row groups", len(units))
	}
	off := int64(0)
	for i, u := range units {
		if u.Index != i || u.Offset != off || u.D != 50 {
			t.Errorf("unit %d: %+v, want index %d offset %d D 50", i, u, i, off)
		}
		off += u.Rows
	}
	if off != 70000 {
		t.Errorf("units cover %d rows, want 70000", off)
	}
	last := units[len(units)-1]
	r, err := ReadUnit(ctx, last, ReadOptions{Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := devdata.ReadLE[int32](t, filepath.Join(filepath.Dir(path), "noisy-idn-0.4.i32"))
	for i := 0; i < r.Len(); i++ {
		g := last.Offset + int64(i)
		if r.IDs[i] != g || r.Labels[i] != want[g] {
			t.Fatalf("row %d: id %d label %d, want id %d label %d", g, r.IDs[i], r.Labels[i], g, want[g])
		}
	}
}

// BenchmarkReadUnit reads one row group of fashion_mnist_pca50 (8192 rows,
// d = 50, written by parquet-rs); throughput counts the float32 features
// produced.
func BenchmarkReadUnit(b *testing.B) {
	path := filepath.Join(sharedData, "fashion_mnist_pca50/noisy-idn-0.4.parquet")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("development data absent (%v)", err)
	}
	ctx := context.Background()
	shards, err := Scan(ctx, path, ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	u := shards[0].Units[0]
	b.SetBytes(u.Rows * int64(u.D) * 4)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ReadUnit(ctx, u, ReadOptions{Classes: 10}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteShard writes 8192 cleaned rows with a top-3 posterior.
func BenchmarkWriteShard(b *testing.B) {
	const n, c0 = 8192, 3
	cl := &schemas.Cleaned{LabelOff: []int32{0}, PostOff: []int32{0}}
	for i := 0; i < n; i++ {
		cl.IDs = append(cl.IDs, int64(i))
		cl.Labels = append(cl.Labels, int32(i%10))
		cl.LabelOff = append(cl.LabelOff, int32(i+1))
		cl.CleanLabel = append(cl.CleanLabel, int32(i%10))
		cl.CleanProb = append(cl.CleanProb, 0.5)
		cl.GivenProb = append(cl.GivenProb, 0.5)
		cl.Changed = append(cl.Changed, i%3 == 0)
		for k := 0; k < c0; k++ {
			cl.PostClass = append(cl.PostClass, int32((i+k)%10))
			cl.PostProb = append(cl.PostProb, 1.0/c0)
		}
		cl.PostOff = append(cl.PostOff, int32((i+1)*c0))
	}
	dir := b.TempDir()
	for _, format := range []Format{Parquet, ArrowFile} {
		b.Run(format.String(), func(b *testing.B) {
			b.ReportMetric(0, "ns/op")
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if err := WriteShard(context.Background(), blobio.Local{}, filepath.Join(dir, "out"+format.Ext()), format, []*schemas.Cleaned{cl}, nil, schemas.LabelInt32, nil, schemas.IDInt64, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "rows/s")
		})
	}
}
