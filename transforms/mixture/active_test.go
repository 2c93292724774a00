package mixture

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDistance checks the sparse distance against the dense joint's total
// variation, at awkward shapes (empty states, full rows, disjoint classes),
// and its metric facts: 0 to itself, symmetric, 1 between joints on
// disjoint classes.
func TestDistance(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	oracle := func(a, b *State, c int) float64 {
		pa, ra := dense(a, c)
		pb, rb := dense(b, c)
		var d float64
		for k := 0; k < c; k++ {
			for y := 0; y < c; y++ {
				var va, vb float64
				if ra[k] != nil {
					va = pa[k] * ra[k][y]
				}
				if rb[k] != nil {
					vb = pb[k] * rb[k][y]
				}
				d += math.Abs(va - vb)
			}
		}
		return d / 2
	}
	for trial := 0; trial < 200; trial++ {
		c := 1 + rng.IntN(13)
		a := randomSparse(rng, c, rng.IntN(min(c, 5)+1), rng.IntN(c+1))
		b := randomSparse(rng, c, rng.IntN(min(c, 5)+1), rng.IntN(c+1))
		got, want := Distance(&a, &b, c), oracle(&a, &b, c)
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("trial %d (C = %d, %d vs %d classes): distance %g, dense %g", trial, c, a.Len(), b.Len(), got, want)
		}
		if ba := Distance(&b, &a, c); math.Abs(ba-got) > 1e-12 {
			t.Errorf("trial %d: d(a,b) = %g, d(b,a) = %g", trial, got, ba)
		}
		if aa := Distance(&a, &a, c); aa != 0 {
			t.Errorf("trial %d: d(a,a) = %g, want 0", trial, aa)
		}
	}
	var x, y State
	x.Init([]int32{1}, 5, 5, 0.1)
	y.Init([]int32{3}, 5, 5, 0.1)
	if d := Distance(&x, &y, 5); math.Abs(d-1) > 1e-12 {
		t.Errorf("one-hots on different classes: distance %g, want 1", d)
	}
	if d := Distance(&x, &State{}, 5); math.Abs(d-0.5) > 1e-12 {
		t.Errorf("against the empty state: distance %g, want 1/2", d)
	}
}

// TestMovedPacked: Moved travels with AppendFrom, and a States without it
// counts every item as moved.
func TestMovedPacked(t *testing.T) {
	var s State
	s.Init([]int32{2}, 4, 4, 0.1)
	var ss States
	ss.Append(&s)
	ss.Append(&s)
	if !math.IsInf(float64(ss.MovedOf(1)), 1) {
		t.Errorf("untracked: MovedOf = %g, want +Inf", ss.MovedOf(1))
	}
	ss.Moved = []float32{0.25, 0.5}
	var cp States
	cp.AppendFrom(&ss, 1)
	if len(cp.Moved) != 1 || cp.MovedOf(0) != 0.5 {
		t.Errorf("AppendFrom copied Moved %v, want [0.5]", cp.Moved)
	}
	cp.Reset()
	if len(cp.Moved) != 0 {
		t.Errorf("Reset left Moved %v", cp.Moved)
	}
}
