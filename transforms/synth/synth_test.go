package synth_test

import (
	"math"
	"slices"
	"testing"

	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/synth"
)

func gen(t *testing.T, g *synth.Generator, lo, hi int64) ([]int64, []float32, []int32, []int32) {
	t.Helper()
	n := hi - lo
	ids, x := make([]int64, n), make([]float32, n*int64(g.Params().D))
	truth, given := make([]int32, n), make([]int32, n)
	g.Rows(lo, hi, ids, x, truth, given)
	return ids, x, truth, given
}

// TestChunking: rows do not depend on how the range is split, nor on which
// generator instance makes them; another seed gives other rows.
func TestChunking(t *testing.T) {
	p := synth.DefaultParams(1000, 33, 7, 0.3, 5)
	g1, err := synth.New(p)
	if err != nil {
		t.Fatal(err)
	}
	g2, _ := synth.New(p)
	ids, x, tr, gv := gen(t, g1, 0, 300)
	for _, cut := range []int64{1, 137, 299} {
		i1, x1, t1, v1 := gen(t, g2, 0, cut)
		i2, x2, t2, v2 := gen(t, g2, cut, 300)
		if !slices.Equal(ids, append(i1, i2...)) || !slices.Equal(x, append(x1, x2...)) ||
			!slices.Equal(tr, append(t1, t2...)) || !slices.Equal(gv, append(v1, v2...)) {
			t.Errorf("cut at %d: rows differ from the unsplit range", cut)
		}
	}
	p.Seed = 6
	g3, _ := synth.New(p)
	_, x3, _, _ := gen(t, g3, 0, 300)
	if slices.Equal(x, x3) {
		t.Error("seeds 5 and 6 gave the same features")
	}
}

// TestNoiseAndBalance: the flip rate is Noise, flips go to another class, the
// classes are balanced.
func TestNoiseAndBalance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		noise float64
	}{{"clean", 0}, {"noisy", 0.3}} {
		t.Run(tc.name, func(t *testing.T) {
			const n, c = 20000, 20
			g, err := synth.New(synth.DefaultParams(n, 8, c, tc.noise, 1))
			if err != nil {
				t.Fatal(err)
			}
			_, x, truth, given := gen(t, g, 0, n)
			flips := 0
			count := make([]int, c)
			for i := range truth {
				count[truth[i]]++
				if truth[i] != given[i] {
					flips++
				}
				if given[i] < 0 || given[i] >= c {
					t.Fatalf("row %d: label %d", i, given[i])
				}
			}
			sd := math.Sqrt(tc.noise * (1 - tc.noise) / n)
			if got := float64(flips) / n; math.Abs(got-tc.noise) > 4*sd+1e-12 {
				t.Errorf("flip rate %.4f, want %.2f", got, tc.noise)
			}
			for k, m := range count {
				if math.Abs(float64(m)-n/c) > 5*math.Sqrt(n/c) {
					t.Errorf("class %d has %d rows, want about %d", k, m, n/c)
				}
			}
			for _, v := range x {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatal("non-finite feature")
				}
			}
		})
	}
}

// TestLearnable: the clusters are separable enough that a 10-NN majority vote
// of the given (30% flipped) labels recovers most true classes, and not so
// separable that it is trivial.
func TestLearnable(t *testing.T) {
	const n, d, c, k = 4000, 64, 20, 10
	g, err := synth.New(synth.DefaultParams(n, d, c, 0.3, 2))
	if err != nil {
		t.Fatal(err)
	}
	ids, x, truth, given := gen(t, g, 0, n)
	idx, err := knn.CPU{}.Index(knn.Matrix{Rows: n, Cols: d, Data: x}, ids, knn.L2)
	if err != nil {
		t.Fatal(err)
	}
	var res knn.Result
	if err := idx.Search(&res, knn.Matrix{Rows: n, Cols: d, Data: x}, ids, k); err != nil {
		t.Fatal(err)
	}
	right := 0
	for i := 0; i < n; i++ {
		votes := make([]int, c)
		for _, j := range res.Index[i*k : (i+1)*k] {
			votes[given[j]]++
		}
		best := 0
		for v := range votes {
			if votes[v] > votes[best] {
				best = v
			}
		}
		if int32(best) == truth[i] {
			right++
		}
	}
	acc := float64(right) / n
	t.Logf("10-NN vote accuracy %.3f (given labels %.2f)", acc, 0.7)
	if acc < 0.85 || acc > 0.98 {
		t.Errorf("10-NN vote accuracy %.3f, want in [0.85, 0.98]", acc)
	}
}

func TestValidate(t *testing.T) {
	rank0 := synth.DefaultParams(10, 4, 3, 0, 1)
	rank0.Rank = 0 // an explicit 0 is refused, not replaced by the default
	for _, p := range []synth.Params{
		synth.DefaultParams(0, 4, 3, 0, 1),
		synth.DefaultParams(10, 0, 3, 0, 1),
		synth.DefaultParams(10, 4, 1, 0, 1),
		synth.DefaultParams(10, 4, 3, 1, 1),
		synth.DefaultParams(10, 4, 3, -0.1, 1),
		rank0,
		{Rows: 10, D: 4, Classes: 3},
	} {
		if _, err := synth.New(p); err == nil {
			t.Errorf("New(%+v) accepted", p)
		}
	}
	if p := synth.DefaultParams(10, 33, 3, 0.2, 1); p.Rank != 8 || p.Jitter != 0.6 || p.Noise != 0.2 {
		t.Errorf("DefaultParams = %+v, want rank 8, jitter 0.6, noise 0.2", p)
	} else if _, err := synth.New(p); err != nil {
		t.Errorf("New(DefaultParams): %v", err)
	}
}
