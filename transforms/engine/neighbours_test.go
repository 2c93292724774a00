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
	cands := normalMatrix(rng, n, d)
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

// normalMatrix is an n x d matrix of standard normal draws from rng.
func normalMatrix(rng *rand.Rand, n, d int) knn.Matrix {
	m := knn.Matrix{Rows: n, Cols: d, Data: make([]float32, n*d)}
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
	return m
}

// BenchmarkWeights codes the LLC weights of a fresh buffer's batch of
// 9,300 neighbourhoods of 10 at d = 256 (BenchmarkSmallExact's shape), as
// the neighbours stage does once per batch of rows.
func BenchmarkWeights(b *testing.B) {
	const n, k, d = 9300, 10, 256
	rng := rand.New(rand.NewPCG(1, 2))
	m := normalMatrix(rng, n, d)
	var res knn.Result
	res.Reset(n, k)
	for i := range res.Index {
		res.Index[i] = int32(rng.IntN(n))
		res.Dist[i] = float32(rng.Float64())
	}
	dst := make([]float64, n*k)
	lp := llc.DefaultParams()
	for b.Loop() {
		var wb engine.WeightBuffer
		if err := wb.Weights(dst, m, m, &res, engine.Blend, lp, llc.CPU{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWeightsSliced: a batch too large to gather at once is coded a slice
// of rows at a time, to the same bits as coding its whole gather in one
// call, missing neighbours included.
func TestWeightsSliced(t *testing.T) {
	const n, k, d = 3000, 10, 200 // more than two slices
	rng := rand.New(rand.NewPCG(5, 6))
	m := normalMatrix(rng, n, d)
	var res knn.Result
	res.Reset(n, k)
	lens := make([]int32, n)
	for i := 0; i < n; i++ {
		l := k - i%3 // some neighbourhoods short
		lens[i] = int32(l)
		for j := 0; j < k; j++ {
			res.Index[i*k+j] = -1
			if j < l {
				res.Index[i*k+j] = int32(rng.IntN(n))
				res.Dist[i*k+j] = float32(rng.Float64())
			}
		}
	}
	lp := llc.DefaultParams()
	got := make([]float64, n*k)
	var wb engine.WeightBuffer
	if err := wb.Weights(got, m, m, &res, engine.LLC, lp, llc.CPU{}); err != nil {
		t.Fatal(err)
	}
	nbr := make([]float32, n*k*d)
	for e, c := range res.Index {
		if c >= 0 {
			copy(nbr[e*d:(e+1)*d], m.Row(int(c)))
		}
	}
	want := make([]float64, n*k)
	if err := (llc.CPU{}).Code(want, llc.Batch{B: n, K: k, D: d, X: m.Data, N: nbr, Dist: res.Dist, Len: lens}, lp); err != nil {
		t.Fatal(err)
	}
	for e := range want {
		if got[e] != want[e] {
			t.Fatalf("weight %d (row %d): %v, coded whole %v", e, e/k, got[e], want[e])
		}
	}
}
