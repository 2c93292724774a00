package shardio

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/internal/devdata"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

var update = flag.Bool("update", false, "regenerate the committed test data under testdata/ from ../shared/data")

// testdataDigits holds the example data of the README's quick start and the
// pipeline tests: sklearn_digits with instance-dependent noise, in two
// Parquet shards of two row groups each, the label files, and the 5-annotator
// file.
const testdataDigits = "../../testdata/digits"

// digitsShards is how the 1797 rows are cut: shard -> row group -> [from, to).
var digitsShards = [][][2]int{
	{{0, 512}, {512, 899}},
	{{899, 1411}, {1411, 1797}},
}

// genDigits writes testdata/digits into out from the sklearn_digits folder src.
func genDigits(ctx context.Context, src, out string) error {
	shards, rows, err := readAll(ctx, filepath.Join(src, "noisy-idn-0.4.parquet"), ReadOptions{Classes: 10})
	if err != nil {
		return err
	}
	if len(shards) != 1 || len(rows) != 1 {
		return fmt.Errorf("%d shards, %d units: the split below assumes one unit", len(shards), len(rows))
	}
	all := rows[0]
	for i, groups := range digitsShards {
		var parts []*schemas.Rows
		for _, g := range groups {
			parts = append(parts, slice(all, g[0], g[1]))
		}
		path := filepath.Join(out, fmt.Sprintf("noisy-idn-0.4-part-%04d.parquet", i))
		if err := WriteInput(ctx, blobio.Local{}, path, Parquet, parts, schemas.LabelInt32, nil, nil); err != nil {
			return err
		}
	}
	// annotators-5.parquet is copied as parquet-rs wrote it: a file of another
	// writer, with list<float64> features and list<int32> annotations.
	for _, name := range []string{"truth.i32", "noisy-idn-0.4.i32", "annotators-5.parquet"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// slice copies rows [from, to) of a single-label batch.
func slice(r *schemas.Rows, from, to int) *schemas.Rows {
	s := &schemas.Rows{
		Shard: r.Shard, Offset: r.Offset + int64(from), IDKind: r.IDKind, D: r.D,
		IDs:      append([]int64(nil), r.IDs[from:to]...),
		Features: append([]float32(nil), r.Features[from*r.D:to*r.D]...),
		Labels:   append([]int32(nil), r.Labels[from:to]...),
	}
	for i := 0; i <= to-from; i++ {
		s.LabelOff = append(s.LabelOff, int32(i))
	}
	return s
}

// TestTestdataDigits checks the committed example data: that it reads as the
// contract says (1797 rows, ids 0..1796, labels equal to the committed noisy
// labels), and, where ../shared/data is present, that regenerating it gives
// the same bytes. With -update it rewrites it.
func TestTestdataDigits(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(sharedData, "sklearn_digits")
	if *update {
		if _, err := os.Stat(src); err != nil {
			t.Fatalf("-update needs the development data: %v", err)
		}
		if err := os.MkdirAll(testdataDigits, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := genDigits(ctx, src, testdataDigits); err != nil {
			t.Fatal(err)
		}
	}

	_, rows, err := readAll(ctx, filepath.Join(testdataDigits, "noisy-idn-0.4-part-*.parquet"), ReadOptions{Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	noisy := devdata.ReadLE[int32](t, filepath.Join(testdataDigits, "noisy-idn-0.4.i32"))
	truth := devdata.ReadLE[int32](t, filepath.Join(testdataDigits, "truth.i32"))
	if len(noisy) != 1797 || len(truth) != 1797 {
		t.Fatalf("%d noisy and %d true labels, want 1797", len(noisy), len(truth))
	}
	if len(rows) != 4 {
		t.Errorf("%d units, want 4 (2 shards x 2 row groups)", len(rows))
	}
	id := int64(0)
	agree := 0
	for _, r := range rows {
		if r.D != 64 {
			t.Fatalf("%s: D = %d", r.Shard, r.D)
		}
		for i := 0; i < r.Len(); i++ {
			if r.IDs[i] != id || r.Labels[i] != noisy[id] {
				t.Fatalf("%s row %d: id %d label %d, want id %d label %d", r.Shard, r.Offset+int64(i), r.IDs[i], r.Labels[i], id, noisy[id])
			}
			if noisy[id] == truth[id] {
				agree++
			}
			id++
		}
	}
	if id != 1797 {
		t.Errorf("%d rows, want 1797", id)
	}
	shards, err := Scan(ctx, filepath.Join(testdataDigits, "annotators-5.parquet"), ReadOptions{})
	if err != nil || shards[0].Rows != 1797 || !shards[0].Input.Multi || shards[0].D != 64 {
		t.Errorf("annotators-5.parquet: %+v, %v; want 1797 rows of 64 features and lists of annotations", shards, err)
	}
	// data/README.md: the idn-0.4 labels are .601 accurate.
	if acc := float64(agree) / 1797; acc < 0.59 || acc > 0.61 {
		t.Errorf("noisy labels %.3f accurate, want about .601", acc)
	}

	if _, err := os.Stat(src); err != nil {
		t.Logf("development data absent (%v): not checking that testdata/digits is up to date", err)
		return
	}
	tmp := t.TempDir()
	if err := genDigits(ctx, src, tmp); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got, _ := os.ReadFile(filepath.Join(testdataDigits, e.Name()))
		want, _ := os.ReadFile(filepath.Join(tmp, e.Name()))
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/digits/%s is not what the generator writes now: run go test ./io/shardio -run TestTestdataDigits -update", e.Name())
		}
	}
}
