package knn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/relabel/relabel/transforms/knn"
)

// TestPackedOnce: an index searched a second time, or with more than one
// query block, packs its candidates once and reads them from there; the
// lists are the bits of a search that packs each candidate block for its
// query block (the first search of one block), for every kernel, L2 and
// Cosine, a last candidate block shorter than the others, and 1 or 3
// workers.
func TestPackedOnce(t *testing.T) {
	const n, d, k = 233, 37, 6
	r := rand.New(rand.NewPCG(7, 8))
	gauss := func(rows int) knn.Matrix {
		m := knn.Matrix{Rows: rows, Cols: d, Data: make([]float32, rows*d)}
		for i := range m.Data {
			m.Data[i] = float32(r.NormFloat64())
		}
		return m
	}
	c, q := gauss(n), gauss(40)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	for _, name := range knn.KernelNames() {
		for _, m := range []knn.Metric{knn.L2, knn.Cosine} {
			for _, workers := range []int{1, 3} {
				s := knn.WithKernel(knn.CPU{Workers: workers, QueryBlock: 64, CandidateBlock: 50}, name)
				fresh := func() knn.Index {
					x, err := s.Index(c, ids, m)
					if err != nil {
						t.Fatal(err)
					}
					return x
				}
				var want, again, blocks knn.Result
				x := fresh()
				if err := x.Search(&want, q, nil, k); err != nil { // one block: packed per block
					t.Fatal(err)
				}
				if err := x.Search(&again, q, nil, k); err != nil { // packed once
					t.Fatal(err)
				}
				sb := knn.WithKernel(knn.CPU{Workers: workers, QueryBlock: 7, CandidateBlock: 50}, name)
				y, err := sb.Index(c, ids, m)
				if err != nil {
					t.Fatal(err)
				}
				if err := y.Search(&blocks, q, nil, k); err != nil { // six blocks: packed once
					t.Fatal(err)
				}
				for _, got := range []*knn.Result{&again, &blocks} {
					for i := range want.Index {
						if got.Index[i] != want.Index[i] || math.Float32bits(got.Dist[i]) != math.Float32bits(want.Dist[i]) {
							t.Fatalf("%s %v %d workers, entry %d: %d %v, want %d %v", name, m, workers, i, got.Index[i], got.Dist[i], want.Index[i], want.Dist[i])
						}
					}
				}
			}
		}
	}
}
