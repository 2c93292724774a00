package ivf_test

import (
	"context"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/relabel/relabel/internal/devdata"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

var sweep = flag.Bool("ivf.sweep", false, "print Recall@10 over a grid of partition sizes and nprobe (docs/perf/scale.md)")

// loadParquet reads a whole dataset: keys, features (z-scored) and labels.
func loadParquet(t testing.TB, path string) (keys []int64, x knn.Matrix, labels []int32) {
	t.Helper()
	ctx := context.Background()
	opts := shardio.ReadOptions{}
	shards, err := shardio.Scan(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.D = shards[0].D
	if opts.Classes, err = shardio.ScanNumClasses(ctx, shards, opts); err != nil {
		t.Fatal(err)
	}
	x.Cols = opts.D
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := shardio.ReadUnit(ctx, u, opts)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, r.IDs...)
			x.Data = append(x.Data, r.Features...)
			labels = append(labels, r.Labels...)
		}
	}
	x.Rows = len(keys)
	mean, std := engine.Moments(x.Data, x.Rows, x.Cols)
	engine.Standardise(x.Data, x.Cols, mean, std)
	return keys, x, labels
}

// fit fits a model the way the pipeline does: the sample is the rows with the
// smallest Hash.
func fit(t testing.TB, keys []int64, x knn.Matrix, p ivf.Params) *ivf.Model {
	t.Helper()
	s := ivf.Sample{Cap: p.Sample}
	for i, k := range keys {
		s.Add(ivf.Hash(p.Seed, k), k, x.Row(i))
	}
	s.Trim()
	m, err := ivf.Fit(knn.Matrix{Rows: s.Len(), Cols: x.Cols, Data: s.Features}, int64(len(keys)), p, knn.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// recall is the mean fraction of each query's exact k nearest (rows of x)
// that got[q] holds.
func recall(t testing.TB, x knn.Matrix, keys []int64, queries []int, got *knn.Result, k int) float64 {
	t.Helper()
	idx, err := knn.CPU{}.Index(x, keys, knn.L2)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	q := knn.Matrix{Rows: len(queries), Cols: x.Cols}
	qk := make([]int64, len(queries))
	for a, i := range queries {
		q.Data = append(q.Data, x.Row(i)...)
		qk[a] = keys[i]
	}
	var ex knn.Result
	if err := idx.Search(&ex, q, qk, k); err != nil {
		t.Fatal(err)
	}
	hit := 0
	for a, i := range queries {
		want := map[int32]bool{}
		for _, c := range ex.Index[a*k : (a+1)*k] {
			want[c] = true
		}
		for _, c := range got.Index[i*got.K : i*got.K+k] {
			if want[c] {
				hit++
			}
		}
	}
	return float64(hit) / float64(len(queries)*k)
}

// TestRecallFashion checks the ivf bar: Recall@10 of the ivf neighbours
// against the exact ones >= 0.95 on fashion_mnist_pca50 (70k x 50, z-scored)
// at the default partition size and nprobe, over a 2k-query sample.
func TestRecallFashion(t *testing.T) {
	dir := devdata.Dir(t, "fashion_mnist_pca50")
	keys, x, _ := loadParquet(t, filepath.Join(dir, "clean.parquet"))
	const k = 10
	queries := make([]int, 0, 2000)
	for i := 0; i < x.Rows && len(queries) < cap(queries); i += x.Rows / cap(queries) {
		queries = append(queries, i)
	}
	type cfg struct{ size, nprobe int }
	grid := []cfg{{ivf.DefaultPartitionSize, ivf.DefaultNProbe}}
	if *sweep {
		grid = nil
		for _, size := range []int{250, 500, 1000, 2000} {
			for _, np := range []int{2, 4, 8, 12, 16} {
				grid = append(grid, cfg{size, np})
			}
		}
	}
	for _, c := range grid {
		t0 := time.Now()
		p := ivf.DefaultParams(int64(x.Rows)).WithPartitions(int64(x.Rows), (x.Rows+c.size-1)/c.size).WithNProbe(c.nprobe)
		p.Seed = 1
		m := fit(t, keys, x, p)
		tFit := time.Since(t0)
		pt, err := ivf.Assign(x, m, p.NProbe, knn.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		var got knn.Result
		st, err := ivf.Search(&got, x, keys, pt, m.P(), k, knn.L2, knn.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		r := recall(t, x, keys, queries, &got, k)
		t.Logf("size %d (P=%d) nprobe %d: Recall@%d = %.4f; pairs/item %.0f, max stored %d, max home %d; fit %v, total %v",
			c.size, m.P(), p.NProbe, k, r, float64(st.Pairs)/float64(x.Rows), st.MaxStored, st.MaxSearched, tFit.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
		if !*sweep && r < 0.95 {
			t.Errorf("Recall@%d = %.4f at partition size %d, nprobe %d; want >= 0.95", k, r, c.size, c.nprobe)
		}
	}
}
