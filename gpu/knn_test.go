//go:build cuda || cudaemu

package gpu

import (
	"testing"

	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/knn/knntest"
)

// needDevice skips a test only when no device is present (cuda build on a
// machine without a GPU or driver); the cudaemu build always has one.
func needDevice(tb testing.TB) {
	tb.Helper()
	if !Available() {
		tb.Skipf("gpu: no CUDA device, skipping (%v)", Err())
	}
	tb.Logf("gpu: device %s", Device())
}

// TestSearcher runs the kNN conformance suite on the default tiling, and
// again with tiny query and candidate blocks so that the running top-K lists
// are merged across many candidate tiles and query blocks.
func TestSearcher(t *testing.T) {
	needDevice(t)
	t.Run("default", func(t *testing.T) { knntest.Run(t, Searcher{}) })
	t.Run("small-blocks", func(t *testing.T) { knntest.Run(t, Searcher{QueryBlock: 64, CandidateBlock: 100}) })
}

func TestSearcherMaxK(t *testing.T) {
	needDevice(t)
	c := knntest.Gaussian(3000, 8, 1, 0)
	ids := make([]int64, c.Rows)
	for i := range ids {
		ids[i] = int64(i)
	}
	x, err := Searcher{}.Index(c, ids, knn.L2)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	q := knn.Matrix{Rows: 2, Cols: c.Cols, Data: c.Data[:2*c.Cols]}
	var got, want knn.Result
	if err := x.Search(&got, q, ids[:2], MaxK); err != nil {
		t.Fatalf("k = MaxK: %v", err)
	}
	y, _ := knn.CPU{}.Index(c, ids, knn.L2)
	if err := y.Search(&want, q, ids[:2], MaxK); err != nil {
		t.Fatal(err)
	}
	for i := range want.Index {
		if got.Index[i] != want.Index[i] {
			// Near-ties may swap; the distances must then agree.
			if d := got.Dist[i] - want.Dist[i]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("k = MaxK: entry %d: (%d, %v), CPU (%d, %v)", i, got.Index[i], got.Dist[i], want.Index[i], want.Dist[i])
			}
		}
	}
	if err := x.Search(&got, q, ids[:2], MaxK+1); err == nil {
		t.Errorf("k = MaxK+1: no error")
	}
}

// BenchmarkSearch times the CUDA and the CPU searcher at knntest's shapes,
// reporting GFLOP/s of the distance SGEMM (2*B*S*d). It needs a GPU (the
// cudaemu build measures the emulator, which means nothing).
func BenchmarkSearch(b *testing.B) {
	needDevice(b)
	for _, sh := range knntest.BenchShapes {
		b.Run("cuda/"+sh.String(), func(b *testing.B) { knntest.Bench(b, Searcher{}, sh) })
		b.Run("cpu/"+sh.String(), func(b *testing.B) { knntest.Bench(b, knn.CPU{}, sh) })
	}
}
