package engine_test

import (
	"math/rand/v2"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

// TestWeightsIsolated: a query with no valid neighbour (every index -1, as
// ivf leaves a row whose home partition stored only itself) gets all-zero
// weights, and the other queries of its batch get the weights they get in a
// batch without it, for every weighting. llc.Coder alone refuses such a
// neighbourhood (Len 0), which used to fail the run.
func TestWeightsIsolated(t *testing.T) {
	const n, k, d = 12, 4, 3
	rng := rand.New(rand.NewPCG(5, 6))
	cands := knn.Matrix{Rows: n, Cols: d, Data: make([]float32, n*d)}
	for i := range cands.Data {
		cands.Data[i] = float32(rng.NormFloat64())
	}
	q := knn.Matrix{Rows: 3, Cols: d, Data: append([]float32(nil), cands.Data[:3*d]...)}
	var res knn.Result
	res.Reset(3, k)
	for a := 0; a < 3; a++ {
		for j := 0; j < k; j++ {
			res.Index[a*k+j] = int32(3 + (a*k+j)%(n-3))
			res.Dist[a*k+j] = float32(j + 1)
		}
	}
	// Query 1 is isolated; query 2 has two valid neighbours.
	for j := 0; j < k; j++ {
		res.Index[1*k+j], res.Dist[1*k+j] = -1, 0
	}
	res.Index[2*k+2], res.Index[2*k+3] = -1, -1
	for _, w := range []engine.Weighting{engine.Uniform, engine.LLC, engine.Blend} {
		var wb engine.WeightBuffer
		got := make([]float64, 3*k)
		for i := range got {
			got[i] = 7 // must be overwritten
		}
		if err := wb.Weights(got, q, cands, &res, w, llc.DefaultParams(), llc.CPU{}); err != nil {
			t.Fatalf("weighting %v: %v", w, err)
		}
		for j := 0; j < k; j++ {
			if got[1*k+j] != 0 {
				t.Errorf("weighting %v: isolated query's weight %d = %g, want 0", w, j, got[1*k+j])
			}
		}
		// The same two other queries alone.
		q2 := knn.Matrix{Rows: 2, Cols: d, Data: append(append([]float32(nil), q.Row(0)...), q.Row(2)...)}
		var r2 knn.Result
		r2.Reset(2, k)
		copy(r2.Index[:k], res.Index[:k])
		copy(r2.Index[k:], res.Index[2*k:])
		copy(r2.Dist[:k], res.Dist[:k])
		copy(r2.Dist[k:], res.Dist[2*k:])
		want := make([]float64, 2*k)
		var wb2 engine.WeightBuffer
		if err := wb2.Weights(want, q2, cands, &r2, w, llc.DefaultParams(), llc.CPU{}); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < k; j++ {
			if got[j] != want[j] || got[2*k+j] != want[k+j] {
				t.Errorf("weighting %v: neighbour %d: got %g, %g; alone %g, %g", w, j, got[j], got[2*k+j], want[j], want[k+j])
			}
		}
		if s := got[0] + got[1] + got[2] + got[3]; s < 0.999 || s > 1.001 {
			t.Errorf("weighting %v: query 0's weights sum to %g", w, s)
		}
	}
}
