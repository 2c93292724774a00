package engine_test

import (
	"math/rand/v2"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

// BenchmarkWeights codes the LLC weights of a fresh buffer's batch of
// 9,300 neighbourhoods of 10 at d = 256 (BenchmarkSmallExact's shape), as
// the neighbours stage does once per batch of rows.
func BenchmarkWeights(b *testing.B) {
	const n, k, d = 9300, 10, 256
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n*d)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	m := knn.Matrix{Rows: n, Cols: d, Data: x}
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
	x := make([]float32, n*d)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	m := knn.Matrix{Rows: n, Cols: d, Data: x}
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
	if err := (llc.CPU{}).Code(want, llc.Batch{B: n, K: k, D: d, X: x, N: nbr, Dist: res.Dist, Len: lens}, lp); err != nil {
		t.Fatal(err)
	}
	for e := range want {
		if got[e] != want[e] {
			t.Fatalf("weight %d (row %d): %v, coded whole %v", e, e/k, got[e], want[e])
		}
	}
}
