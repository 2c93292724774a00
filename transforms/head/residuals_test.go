package head

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// fitTwoPass is fit as it was before the gradient reused the loss's
// residuals: every loss and every gradient computes x W afresh. The oracle
// of TestFitReusesResiduals.
func fitTwoPass(parts []part, w0 []float64, d, c int, lambda float64, iters int) []float64 {
	fg := penalisedLoss(parts, d, c, lambda)
	prob := optimize.Problem{
		Func: func(w []float64) float64 { return fg(nil, w) },
		Grad: func(grad, w []float64) { fg(grad, w) },
	}
	res, _ := optimize.Minimize(prob, append([]float64(nil), w0...),
		&optimize.Settings{MajorIterations: iters, GradientThreshold: 1e-6, Converger: optimize.NeverTerminate{}},
		&optimize.LBFGS{})
	return res.X
}

// withIntercept is x (n x d, row-major) as fit's design matrix: float64,
// with a last column of ones.
func withIntercept(x []float32, n, d int) *mat.Dense {
	xm := mat.NewDense(n, d+1, nil)
	for i := range n {
		row := xm.RawRowView(i)
		for j := range d {
			row[j] = float64(x[i*d+j])
		}
		row[d] = 1
	}
	return xm
}

// penalisedLoss is fit's objective at w, computed afresh (the loss and,
// with grad not nil, its gradient into grad).
func penalisedLoss(parts []part, d, c int, lambda float64) func(grad, w []float64) float64 {
	d1 := d + 1
	zs := make([][]float64, len(parts))
	for k, p := range parts {
		rows, _ := p.x.Dims()
		zs[k] = make([]float64, rows*c)
	}
	g := make([]float64, d1*c)
	fg := func(grad, w []float64) float64 {
		loss := 0.0
		if grad != nil {
			clear(grad)
		}
		for k, p := range parts {
			z := zs[k]
			mulXW(z, p.x, w, c)
			rows, _ := p.x.Dims()
			for r := range rows {
				zr, tr := z[r*c:(r+1)*c], p.t.RawRowView(r)
				s, dot := 0.0, 0.0
				for j, v := range tr {
					s += v
					dot += v * zr[j]
				}
				lse := softmax(zr, zr)
				loss += s*lse - dot
				for j := range zr {
					zr[j] = s*zr[j] - tr[j]
				}
			}
			if grad != nil {
				mulXtZ(g, p.x, z, c)
				for j, v := range g {
					grad[j] += v
				}
			}
		}
		for j := 0; j < d*c; j++ {
			loss += 0.5 * lambda * w[j] * w[j]
			if grad != nil {
				grad[j] += lambda * w[j]
			}
		}
		return loss
	}
	return fg
}

// TestFitReusesResiduals: the fit whose gradient starts from the residuals
// the loss at the same point left gives the two-pass fit's weights bit for
// bit: from zero weights and warm, with soft and all-zero targets, in one
// part and in two (a middle fold left out), with and without the penalty.
func TestFitReusesResiduals(t *testing.T) {
	const n, d, c = 900, 33, 5
	x, _, _, given := linearSet(n, d, c, 3)
	r := rand.New(rand.NewPCG(4, 5))
	xm := withIntercept(x, n, d)
	tm := mat.NewDense(n, c, nil)
	for i := range n {
		if i%17 == 0 {
			continue // nothing to learn from
		}
		tr := tm.RawRowView(i)
		s := 0.0
		for j := range c {
			tr[j] = 0.1 * r.Float64()
			s += tr[j]
		}
		tr[given[i]] += 1
		s++
		for j := range c {
			tr[j] /= s
		}
	}
	one := []part{{xm, tm}}
	two := []part{
		{xm.Slice(0, 300, 0, d+1).(*mat.Dense), tm.Slice(0, 300, 0, c).(*mat.Dense)},
		{xm.Slice(600, n, 0, d+1).(*mat.Dense), tm.Slice(600, n, 0, c).(*mat.Dense)},
	}
	warm := make([]float64, (d+1)*c)
	for i := range warm {
		warm[i] = 0.01 * r.NormFloat64()
	}
	cases := []struct {
		name   string
		parts  []part
		w0     []float64
		lambda float64
		iters  int
	}{
		{"cold, one part", one, make([]float64, (d+1)*c), 1, 60},
		{"cold, two parts", two, make([]float64, (d+1)*c), 1, 60},
		{"warm, two parts", two, warm, 1, 10},
		{"no penalty", one, warm, 0, 30},
	}
	for _, tc := range cases {
		want := fitTwoPass(tc.parts, tc.w0, d, c, tc.lambda, tc.iters)
		got, err := fit(tc.parts, tc.w0, d, c, tc.lambda, tc.iters, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.EqualFunc(got, want, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
			t.Errorf("%s: the weights differ from the two-pass fit's", tc.name)
		}
		if slices.Equal(got, tc.w0) {
			t.Errorf("%s: the fit did not move from its start", tc.name)
		}
	}
}

// TestFitTol: a fit with a tolerance stops at the first iteration that
// lowers the loss by less than that share of it, giving bit for bit the
// weights of a fit without one bounded to that many iterations; a warm fit
// from the weights it stopped at settles sooner.
func TestFitTol(t *testing.T) {
	const n, d, c, lambda, iters, tol = 700, 21, 4, 1.0, 60, 3e-3
	x, _, _, given := linearSet(n, d, c, 9)
	xm := withIntercept(x, n, d)
	tm := mat.NewDense(n, c, nil)
	for i := range n {
		tm.Set(i, int(given[i]), 1)
	}
	parts := []part{{xm, tm}}
	loss := penalisedLoss(parts, d, c, lambda)
	// settles is where a fit from w0 stops: the first iteration whose loss
	// is less than tol of it under the one before (gonum's FunctionConverge
	// with Iterations 1, relative to the larger of the two); 0 if none
	// within iters. gonum counts the start as iteration 1: a fit bounded
	// to one iteration returns w0.
	settles := func(w0 []float64) int {
		prev := loss(nil, w0)
		for m := 2; m <= iters; m++ {
			w, err := fit(parts, w0, d, c, lambda, m, 0)
			if err != nil {
				t.Fatal(err)
			}
			l := loss(nil, w)
			if !(l < prev && prev-l > tol*math.Max(math.Abs(l), math.Abs(prev))) {
				return m
			}
			prev = l
		}
		return 0
	}
	same := func(a, b []float64) bool {
		return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
	}
	w0 := make([]float64, (d+1)*c)
	stop := settles(w0)
	if stop < 3 {
		t.Fatalf("the loss settles at iteration %d of %d: the set does not test the tolerance", stop, iters)
	}
	want, _ := fit(parts, w0, d, c, lambda, stop, 0)
	got, err := fit(parts, w0, d, c, lambda, iters, tol)
	if err != nil {
		t.Fatal(err)
	}
	if !same(got, want) {
		t.Errorf("with tolerance %g the fit gave other weights than %d iterations without", tol, stop)
	}
	// A warm fit from those weights settles sooner, and stops there too.
	warm := settles(got)
	if warm < 2 || warm >= stop {
		t.Fatalf("from its own weights the fit settles at iteration %d, from zero at %d", warm, stop)
	}
	again, err := fit(parts, got, d, c, lambda, iters, tol)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := fit(parts, got, d, c, lambda, warm, 0); !same(again, want) {
		t.Errorf("the warm fit gave other weights than %d iterations without a tolerance", warm)
	}
	if err := (Params{Folds: 2, Iters: 1, WarmIters: 1, Tol: 1}).Validate(); err == nil {
		t.Errorf("a tolerance of 1 passed validation")
	}
}
