package ivf_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

// fitAssign fits and assigns the partitioning of x as the pipeline does: k-means
// on the hash sample of p.Sample rows, every row probed.
func fitAssign(x knn.Matrix, keys []int64, p ivf.Params) (*ivf.Model, *ivf.Partitioning, error) {
	sm := ivf.Sample{Cap: p.Sample, D: x.Cols}
	for i := 0; i < x.Rows; i++ {
		sm.Add(ivf.Hash(p.Seed, keys[i]), keys[i], x.Row(i))
	}
	sm.Trim()
	model, err := ivf.Fit(knn.Matrix{Rows: sm.Len(), Cols: x.Cols, Data: sm.Features}, int64(x.Rows), p, knn.CPU{})
	if err != nil {
		return nil, nil, err
	}
	pt, err := ivf.Assign(x, model, p.NProbe, knn.CPU{})
	return model, pt, err
}

// TestIndex: the search of a few query rows in their home partitions
// against all rows (an incremental lake run's) gives each query the neighbours the full run's ivf search
// (ivf.Search over every row, same partitioning) gives it, except for rows
// that search found fewer than min(K, n-1) for (alone in their home
// partition), which get the exact search's; every query gets min(K, n-1)
// neighbours, never itself, at their true distances, ascending, whatever
// the worker count.
func TestIndex(t *testing.T) {
	for _, c := range []struct {
		name       string
		n, d, k    int
		partitions int
		minShort   int // queries short of K in their home partition, at least
	}{
		{"d=1 default partitions", 3000, 1, 10, 0, 0},
		{"d=33 few partitions", 4000, 33, 10, 8, 0},
		{"many tiny partitions", 600, 8, 10, 300, 1},
		{"k >= n", 12, 4, 20, 3, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.d)))
			x := knn.Matrix{Rows: c.n, Cols: c.d, Data: make([]float32, c.n*c.d)}
			for i := range x.Data {
				x.Data[i] = float32(rng.NormFloat64())
			}
			keys := make([]int64, c.n)
			for i := range keys {
				keys[i] = int64(1000 + i)
			}
			p := ivf.DefaultParams(int64(c.n))
			if c.partitions > 0 {
				p = p.WithPartitions(int64(c.n), c.partitions).WithNProbe(3)
			}
			p.Seed = 1
			var queries []int
			for i := 0; i < c.n; i += 3 {
				queries = append(queries, i)
			}
			var (
				model *ivf.Model
				pt    *ivf.Partitioning
			)
			run := func(workers int) *knn.Result {
				var err error
				if model, pt, err = fitAssign(x, keys, p); err != nil {
					t.Fatal(err)
				}
				ix := ivf.NewIndex(x, keys, pt, model.P(), knn.CPU{}, knn.L2, workers)
				var res knn.Result
				if err := ix.Search(&res, queries, c.k); err != nil {
					t.Fatal(err)
				}
				return &res
			}
			got := run(1)
			var full knn.Result
			if _, err := ivf.Search(&full, x, keys, pt, model.P(), c.k, knn.L2, knn.CPU{}); err != nil {
				t.Fatal(err)
			}
			if again := run(3); !slices.Equal(again.Index, got.Index) {
				t.Errorf("1 and 3 workers give different neighbours")
			}
			idx, err := knn.CPU{}.Index(x, keys, knn.L2)
			if err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			var want knn.Result
			if err := ivf.SearchRows(&want, idx, x, keys, queries, c.k); err != nil {
				t.Fatal(err)
			}
			found, total, short := 0, 0, 0
			for a, i := range queries {
				ref := full.Index[i*c.k : (i+1)*c.k]
				if m := min(c.k, c.n-1); m > 0 && ref[m-1] < 0 {
					short++
					ref = want.Index[a*c.k : (a+1)*c.k]
				}
				if !slices.Equal(got.Index[a*c.k:(a+1)*c.k], ref) {
					t.Errorf("query %d: neighbours %v, want %v", i, got.Index[a*c.k:(a+1)*c.k], ref)
				}
				nb, dist := got.Index[a*c.k:(a+1)*c.k], got.Dist[a*c.k:(a+1)*c.k]
				valid := 0
				for j, n := range nb {
					if n < 0 {
						continue
					}
					valid++
					if int(n) == i {
						t.Fatalf("query %d is its own neighbour", i)
					}
					if j > 0 && dist[j] < dist[j-1] {
						t.Errorf("query %d: distances not ascending: %v", i, dist)
					}
					var s float64
					for f := 0; f < c.d; f++ {
						v := float64(x.Row(i)[f] - x.Row(int(n))[f])
						s += v * v
					}
					if diff := s - float64(dist[j]); diff > 1e-3*(1+s) || diff < -1e-3*(1+s) {
						t.Errorf("query %d neighbour %d: distance %g, true %g", i, n, dist[j], s)
					}
				}
				if want := min(c.k, c.n-1); valid != want {
					t.Errorf("query %d: %d neighbours, want %d", i, valid, want)
				}
				w := want.Index[a*c.k : (a+1)*c.k]
				for _, n := range w {
					if n >= 0 {
						total++
						if slices.Contains(nb, n) {
							found++
						}
					}
				}
			}
			t.Logf("recall %.3f against the exact search; %d of %d queries short of K in their home partition", float64(found)/float64(total), short, len(queries))
			if short < c.minShort {
				t.Errorf("%d queries short of K in their home partition, want at least %d (the case is meant to test them)", short, c.minShort)
			}
		})
	}
}
