package head

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/relabel/relabel/transforms/mixture"
)

// linearSet is n items of c classes where a linear rule separates the
// classes and Euclidean neighbours are weak: features 0..c-1 are the class's
// indicator (plus jitter of standard deviation .2), the other d-c features
// class-independent noise of standard deviation 3, so that distances are
// mostly noise. Labels carry 40% symmetric noise.
func linearSet(n, d, c int, seed uint64) (x []float32, keys []int64, truth, given []int32) {
	r := rand.New(rand.NewPCG(seed, 1))
	x = make([]float32, n*d)
	keys = make([]int64, n)
	truth = make([]int32, n)
	given = make([]int32, n)
	for i := range n {
		keys[i] = int64(1000 + 7*i)
		y := int32(r.IntN(c))
		truth[i], given[i] = y, y
		if r.Float64() < 0.4 {
			given[i] = (y + 1 + int32(r.IntN(c-1))) % int32(c)
		}
		for j := range c {
			x[i*d+j] = float32(0.2 * r.NormFloat64())
		}
		x[i*d+int(y)]++
		for j := c; j < d; j++ {
			x[i*d+j] = float32(3 * r.NormFloat64())
		}
	}
	return
}

func oneHot(labels []int32, c int) []float64 {
	t := make([]float64, len(labels)*c)
	for i, l := range labels {
		t[i*c+int(l)] = 1
	}
	return t
}

func argmax(p []float64) int32 {
	best := 0
	for j, v := range p {
		if v > p[best] {
			best = j
		}
	}
	return int32(best)
}

// knnVote is the K = 10 majority vote of the given labels (brute force, L2).
func knnVote(x []float32, d int, given []int32, c int) []int32 {
	n := len(given)
	out := make([]int32, n)
	type nb struct {
		dist float64
		j    int
	}
	for i := range n {
		var all []nb
		for j := range n {
			if j == i {
				continue
			}
			s := 0.0
			for k := range d {
				e := float64(x[i*d+k] - x[j*d+k])
				s += e * e
			}
			all = append(all, nb{s, j})
		}
		slices.SortFunc(all, func(a, b nb) int {
			if a.dist < b.dist {
				return -1
			}
			if a.dist > b.dist {
				return 1
			}
			return a.j - b.j
		})
		votes := make([]float64, c)
		for _, e := range all[:10] {
			votes[given[e.j]]++
		}
		out[i] = argmax(votes)
	}
	return out
}

func accuracy(a, b []int32) float64 {
	k := 0
	for i := range a {
		if a[i] == b[i] {
			k++
		}
	}
	return float64(k) / float64(len(a))
}

var testParams = Params{Folds: 5, Lambda: 1, Iters: 100, WarmIters: 10, Weight: 1, Seed: 3}

// TestRecoversWhatKNNCannot: on linearSet the head's out-of-fold argmax,
// fitted to the noisy labels alone, recovers the truth, and the kNN vote
// does not.
func TestRecoversWhatKNNCannot(t *testing.T) {
	const n, d, c = 600, 20, 3
	x, keys, truth, given := linearSet(n, d, c, 1)
	h, err := New(x, keys, d, c, testParams)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, n*c)
	if err := h.OutOfFold(p, oneHot(given, c)); err != nil {
		t.Fatal(err)
	}
	pred := make([]int32, n)
	for i := range n {
		row := p[i*c : (i+1)*c]
		s := 0.0
		for _, v := range row {
			if v < 0 || v > 1 {
				t.Fatalf("item %d: probability %g", i, v)
			}
			s += v
		}
		if math.Abs(s-1) > 1e-9 {
			t.Fatalf("item %d: probabilities sum to %g", i, s)
		}
		pred[i] = argmax(row)
	}
	head, vote, noisy := accuracy(pred, truth), accuracy(knnVote(x, d, given, c), truth), accuracy(given, truth)
	t.Logf("noisy %.3f, kNN vote %.3f, head %.3f", noisy, vote, head)
	if head < 0.85 {
		t.Errorf("head's out-of-fold accuracy %.3f, want >= .85 (a linear rule separates the classes)", head)
	}
	if vote > 0.75 {
		t.Errorf("kNN vote %.3f: the set is meant to defeat neighbours (want <= .75)", vote)
	}
}

// outOfFold is a head's out-of-fold probabilities (n x c) of the one-hot
// targets g on x, at testParams.
func outOfFold(t *testing.T, x []float32, keys []int64, d, c int, g []int32) []float64 {
	t.Helper()
	h, err := New(x, keys, d, c, testParams)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, len(keys)*c)
	if err := h.OutOfFold(p, oneHot(g, c)); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOutOfFold: an item's probabilities do not depend on its own target.
// Flipping one item's target changes the fits of the folds it trains, not
// the one that predicts it.
func TestOutOfFold(t *testing.T) {
	const n, d, c = 200, 5, 3
	x, keys, _, given := linearSet(n, d, c, 2)
	run := func(g []int32) []float64 { return outOfFold(t, x, keys, d, c, g) }
	a := run(given)
	g := slices.Clone(given)
	g[17] = (g[17] + 1) % c
	b := run(g)
	if !slices.Equal(a[17*c:18*c], b[17*c:18*c]) {
		t.Errorf("item 17's probabilities moved with its own target: %v vs %v", a[17*c:18*c], b[17*c:18*c])
	}
	if slices.Equal(a, b) {
		t.Error("changing a target changed nothing: the other folds do not train on it")
	}
	if !slices.Equal(a, run(given)) {
		t.Error("two runs on the same input differ")
	}
}

// TestComponent: the hook returns one valid state per item whose top class
// is the head's argmax, and warm-started refits keep it there.
func TestComponent(t *testing.T) {
	const n, d, c = 300, 10, 3
	x, keys, truth, given := linearSet(n, d, c, 4)
	h, err := New(x, keys, d, c, testParams)
	if err != nil {
		t.Fatal(err)
	}
	st := givenStates(given, c)
	var s mixture.State
	comp := h.Component(2, 0.1)
	for r := range 2 {
		out, w, err := comp(r, &st, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w != testParams.Weight || out.Len() != n {
			t.Fatalf("round %d: weight %g, %d states; want %g, %d", r, w, out.Len(), testParams.Weight, n)
		}
		top := make([]int32, n)
		for i := range n {
			out.Get(&s, i)
			if err := s.Check(c); err != nil {
				t.Fatalf("round %d item %d: %v", r, i, err)
			}
			top[i], _ = s.Argmax()
		}
		if a := accuracy(top, truth); a < 0.8 {
			t.Errorf("round %d: the component's top class is right for %.3f of the items, want >= .8", r, a)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	for name, p := range map[string]Params{
		"one fold":   {Folds: 1, Lambda: 1, Iters: 1, WarmIters: 1, Weight: 1},
		"lambda <0":  {Folds: 2, Lambda: -1, Iters: 1, WarmIters: 1, Weight: 1},
		"lambda NaN": {Folds: 2, Lambda: math.NaN(), Iters: 1, WarmIters: 1, Weight: 1},
		"no iters":   {Folds: 2, Lambda: 1, Iters: 0, WarmIters: 1, Weight: 1},
		"weight <0":  {Folds: 2, Lambda: 1, Iters: 1, WarmIters: 1, Weight: -1},
	} {
		if p.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := testParams.Validate(); err != nil {
		t.Errorf("testParams: %v", err)
	}
}

func TestStack(t *testing.T) {
	// Two items, two classes, one-hot targets on class 0.
	targets := []float64{1, 0, 1, 0}
	good := []float64{0.9, 0.1, 0.9, 0.1}
	bad := []float64{0.1, 0.9, 0.1, 0.9}
	if a := Stack(targets, good, bad, 2); a < 0.99 {
		t.Errorf("head right, vote wrong: share %g, want about 1", a)
	}
	if a := Stack(targets, bad, good, 2); a > 0.01 {
		t.Errorf("head wrong, vote right: share %g, want about 0", a)
	}
	// Each right on one item: the likelihood (a .9 + (1-a) .1) (a .1 + (1-a) .9)
	// is symmetric in a and 1 - a, largest at a = .5.
	if a := Stack(targets, []float64{0.9, 0.1, 0.1, 0.9}, []float64{0.1, 0.9, 0.9, 0.1}, 2); math.Abs(a-0.5) > 1e-6 {
		t.Errorf("each right once: share %g, want .5", a)
	}
	if a := Stack(make([]float64, 4), good, bad, 2); a != 0 {
		t.Errorf("no targets: share %g, want 0", a)
	}
	// Random predictions, soft targets (some rows empty, some
	// probabilities 0): no share on a fine grid gives a higher likelihood,
	// and the slope at the share is flat (an interior maximum).
	const n, c = 300, 5
	r := rand.New(rand.NewPCG(3, 8))
	for trial := range 20 {
		tg, hd, vt := make([]float64, n*c), make([]float64, n*c), make([]float64, n*c)
		for i := range n * c {
			if r.Float64() < 0.5 {
				tg[i] = r.Float64()
			}
			hd[i], vt[i] = r.Float64(), r.Float64()
			if r.Float64() < 0.05 {
				hd[i] = 0
			}
		}
		// Tilt the head's sharpness by trial, so that shares spread over
		// (0, 1) and reach its ends.
		for i := range hd {
			hd[i] = math.Pow(hd[i], 0.2+0.2*float64(trial))
		}
		like := func(a float64) float64 {
			l := 0.0
			for i, x := range tg {
				if x != 0 {
					l += x * math.Log(a*hd[i]+(1-a)*vt[i])
				}
			}
			return l
		}
		a := Stack(tg, hd, vt, c)
		best := like(a)
		for g := 0; g <= 10000; g++ {
			if l := like(float64(g) / 10000); l > best+1e-9*math.Abs(best) {
				t.Fatalf("trial %d: share %g has likelihood %v, share %g %v", trial, a, best, float64(g)/10000, l)
			}
		}
		if a > 0 && a < 1 {
			d := 0.0
			for i, x := range tg {
				if x != 0 {
					d += x * (hd[i] - vt[i]) / (a*hd[i] + (1-a)*vt[i])
				}
			}
			if math.Abs(d) > 1e-6 {
				t.Errorf("trial %d: slope %g at share %g, want 0", trial, d, a)
			}
		}
	}
}

// TestOff: where the neighbours are strong (a perfect vote) and the features
// say nothing of the class, the fitted share falls under OffShare, the head switches off and stays off,
// returning no component.
func TestOff(t *testing.T) {
	const n, d, c = 300, 4, 3
	r := rand.New(rand.NewPCG(9, 9))
	x := make([]float32, n*d)
	keys := make([]int64, n)
	given := make([]int32, n)
	for i := range n {
		keys[i] = int64(i)
		y := i % c
		given[i] = int32(y)
		for j := range d {
			x[i*d+j] = float32(r.NormFloat64())
		}
	}
	// Neighbours: 5 items of the same class, weight .2 each: a perfect
	// vote, which a head on noise cannot beat.
	const k = 5
	neighbour := func(i, j int) (int, float64) { return (i + c*(j+1)) % n, 0.2 }
	p := testParams
	p.Weight = 0
	h, err := New(x, keys, d, c, p)
	if err != nil {
		t.Fatal(err)
	}
	st := givenStates(given, c)
	var shares []float64
	h.OnWeight = func(_ int, w float64) { shares = append(shares, w/(1+w)) }
	offAt := -1
	for round := range 4 {
		out, w, err := h.Round(round, &st, k, neighbour, 2, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if h.Off() {
			if out != nil || w != 0 {
				t.Fatalf("round %d: off, but a component of weight %g", round, w)
			}
			if offAt < 0 {
				offAt = round
			}
		} else if offAt >= 0 {
			t.Fatalf("round %d: back on after switching off in round %d", round, offAt)
		}
	}
	if offAt != 0 {
		t.Errorf("the head was still on after round 0 with a perfect vote beside it (shares %v)", shares)
	}

}

// BenchmarkOutOfFold is the head's first fit (Params.Iters) on a
// satellite-sized set (6,435 items, 36 features, 6 classes).
func BenchmarkOutOfFold(b *testing.B) {
	const n, d, c = 6435, 36, 6
	x, keys, _, given := linearSet(n, d, c, 8)
	t := oneHot(given, c)
	dst := make([]float64, n*c)
	for b.Loop() {
		h, err := New(x, keys, d, c, testParams)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.OutOfFold(dst, t); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKernels: the hand-written products give gonum's Dgemm's bits (the
// head's fits were measured with it), on a thin product as large as the dev
// grid's (several of gonum's parallel blocks) with zeros in x, at sizes
// that leave rows and columns over after the blocks of four and classes
// over after dot4's sixteen; with dot4's assembly where this CPU runs it,
// and with the Go loops alone.
func TestKernels(t *testing.T) {
	for _, impl := range kernelImpls() {
		t.Run(impl.name, func(t *testing.T) {
			defer impl.use()()
			r := rand.New(rand.NewPCG(1, 2))
			for _, sz := range [][3]int{{7, 3, 2}, {5000, 37, 6}, {300, 129, 26}, {1001, 257, 10}, {64, 20, 17}, {9, 8, 8}} {
				rows, cols, c := sz[0], sz[1], sz[2]
				x := mat.NewDense(rows, cols, nil)
				for i := range rows {
					for j := range cols {
						if r.IntN(10) > 0 {
							x.Set(i, j, r.NormFloat64())
						}
					}
				}
				w := make([]float64, cols*c)
				z := make([]float64, rows*c)
				for i := range w {
					w[i] = r.NormFloat64()
				}
				for i := range z {
					z[i] = r.NormFloat64()
				}
				var want mat.Dense
				want.Mul(x, mat.NewDense(cols, c, w))
				got := make([]float64, rows*c)
				mulXW(got, x, w, c)
				if !slices.Equal(got, want.RawMatrix().Data) {
					t.Errorf("%v: x W differs from gonum's", sz)
				}
				var wantG mat.Dense
				wantG.Mul(x.T(), mat.NewDense(rows, c, z))
				g := make([]float64, cols*c)
				mulXtZ(g, x, z, c)
				if !slices.Equal(g, wantG.RawMatrix().Data) {
					t.Errorf("%v: x^T z differs from gonum's", sz)
				}
			}
		})
	}
}

// TestKernelsSpecialValues: each of dot4's assembly kernels and the Go
// loops agree bit for bit where gonum's comparison cannot say (NaN is not
// equal to itself): x holding -0, +0, NaN, infinities and subnormals, W and
// z a few infinities and NaNs (so that a zero x's term, were it added,
// would show as a NaN), sums that come out -0, on a view into a wider
// matrix (a fold's rows, as fit hands them).
func TestKernelsSpecialValues(t *testing.T) {
	impls := kernelImpls()
	if len(impls) < 2 {
		t.Skip("no dot4 assembly on this CPU: the Go loops are the only products")
	}
	r := rand.New(rand.NewPCG(3, 4))
	special := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-310, -2.5}
	const rows, cols, c = 23, 14, 11
	full := mat.NewDense(rows+5, cols+3, nil)
	for i := range rows + 5 {
		for j := range cols + 3 {
			v := r.NormFloat64()
			if r.IntN(3) == 0 {
				v = special[r.IntN(len(special))]
			}
			full.Set(i, j, v)
		}
	}
	x := full.Slice(2, 2+rows, 1, 1+cols).(*mat.Dense)
	w := make([]float64, cols*c)
	z := make([]float64, rows*c)
	for i := range w {
		w[i] = -math.Abs(r.NormFloat64()) // with -0 x's, -0 products
		if i%7 == 0 {
			w[i] = math.Copysign(0, -1)
		}
	}
	for i := range z {
		z[i] = r.NormFloat64()
	}
	nonFinite := []float64{math.Inf(1), math.Inf(-1), math.NaN()}
	for i := 3; i < len(w); i += 29 {
		w[i] = nonFinite[i%3]
	}
	for i := 5; i < len(z); i += 31 {
		z[i] = nonFinite[i%3]
	}
	run := func(impl kernelImpl) (xw, xtz []float64) {
		defer impl.use()()
		xw = make([]float64, rows*c)
		xtz = make([]float64, cols*c)
		mulXW(xw, x, w, c)
		mulXtZ(xtz, x, z, c)
		return
	}
	goLoops := impls[len(impls)-1]
	ww, wz := run(goLoops)
	for _, impl := range impls[:len(impls)-1] {
		gw, gz := run(impl)
		if !slices.EqualFunc(gw, ww, sameBits) {
			t.Errorf("x W: %s and %s differ", impl.name, goLoops.name)
		}
		if !slices.EqualFunc(gz, wz, sameBits) {
			t.Errorf("x^T z: %s and %s differ", impl.name, goLoops.name)
		}
	}
}

// sameBits is whether a and b have the same bits, any NaN matching any
// other (which NaN a sum of two keeps is not the products' concern).
func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// kernelImpl is one way of computing the products; use switches to it and
// returns the function that switches back.
type kernelImpl struct {
	name string
	use  func() func()
}

// dot4Func is dot4's kernels' signature, sumsFunc dot4Sums'.
type (
	dot4Func = func(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int)
	sumsFunc = func(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n, flags int)
)

// namedKernel is one of dot4's assembly kernels (asmKernels), with its
// dot4Sums kernel where it has one that the products use.
type namedKernel struct {
	name string
	k    dot4Func
	sums sumsFunc
}

// kernelImpls lists dot4's assembly kernels that this CPU runs
// (asmKernels), then the Go loops, always last.
func kernelImpls() []kernelImpl {
	swap := func(k dot4Func, sums sumsFunc) func() func() {
		return func() func() {
			prevK, prevSums := dot4Kernel, dot4SumsKernel
			dot4Kernel, dot4SumsKernel = k, sums
			return func() { dot4Kernel, dot4SumsKernel = prevK, prevSums }
		}
	}
	var impls []kernelImpl
	for _, k := range asmKernels() {
		impls = append(impls, kernelImpl{k.name, swap(k.k, k.sums)})
	}
	return append(impls, kernelImpl{"Go loops", swap(nil, nil)})
}

// givenStates is every item's round-0 state from its given label (c0 2,
// smoothing .1), as the rounds start without the pooled fit.
func givenStates(given []int32, c int) mixture.States {
	var st mixture.States
	st.Reset()
	var s mixture.State
	for i := range given {
		s.Init(given[i:i+1], c, 2, 0.1)
		st.Append(&s)
	}
	return st
}

// BenchmarkKernels is one fold's products of a fit on 9,300 items of d =
// 256 and 10 classes (7,440 training rows): x W and x^T z, with each of
// dot4's assembly kernels that this CPU runs and with the Go loops, in one
// run so that their times compare.
func BenchmarkKernels(b *testing.B) {
	const rows, cols, c = 7440, 257, 10
	r := rand.New(rand.NewPCG(1, 2))
	x := mat.NewDense(rows, cols, nil)
	for i := range rows {
		for j := range cols {
			x.Set(i, j, r.NormFloat64())
		}
	}
	w := make([]float64, cols*c)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	z := make([]float64, rows*c)
	g := make([]float64, cols*c)
	// Each product's kernels one after the other, so that their times,
	// taken close together, compare on a shared machine.
	for _, impl := range kernelImpls() {
		b.Run("XW/"+impl.name, func(b *testing.B) {
			defer impl.use()()
			b.SetBytes(int64(8 * rows * cols))
			for b.Loop() {
				mulXW(z, x, w, c)
			}
		})
	}
	for _, impl := range kernelImpls() {
		b.Run("XtZ/"+impl.name, func(b *testing.B) {
			defer impl.use()()
			b.SetBytes(int64(8 * rows * cols))
			for b.Loop() {
				mulXtZ(g, x, z, c)
			}
		})
	}
}
