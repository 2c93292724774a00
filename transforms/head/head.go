package head

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// Params configures the head.
type Params struct {
	// Folds is the number of folds of the out-of-fold fit, >= 2. Required.
	Folds int
	// Lambda is the L2 penalty on the weights (not the intercepts), in units
	// of one item's loss: scikit-learn's LogisticRegression is 1/C, its
	// default 1, the data README's logreg peer. >= 0. Required.
	Lambda float64
	// Iters bounds the L-BFGS iterations of the first fit (from zero
	// weights), WarmIters those of every later fit, which starts from the
	// fold's last weights. >= 1. Required.
	Iters, WarmIters int
	// Tol stops a fit at the first iteration that lowers its loss by less
	// than Tol of it (0: every iteration Iters and WarmIters allow). Once
	// the posteriors settle, a warm fit starts at its optimum for practical
	// purposes: on a 9,300 x 256 set a later round's five iterations moved
	// the loss by 0.03%, an average of 4e-4 nats an item, far under what
	// changes the head's probabilities by the rounds' EM tolerance; they
	// were most of the head's cost. In [0, 1). Optional, default 0.
	Tol float64
	// Weight is the head component's weight relative to the item's
	// neighbours' total weight: its share of the neighbours' mass is
	// Weight / (1 + Weight). 0 fits it every round (Stack): the share a that
	// best predicts the current posteriors as a mixture a head + (1 - a)
	// neighbours' vote. >= 0. Optional, default 0 (fitted).
	Weight float64
	// Seed assigns the folds, with each item's key. Optional, default 0.
	Seed uint64
}

// Validate reports every field out of range.
func (p Params) Validate() error {
	var errs []error
	if p.Folds < 2 {
		errs = append(errs, fmt.Errorf("head: folds = %d, want >= 2", p.Folds))
	}
	if !(p.Lambda >= 0) {
		errs = append(errs, fmt.Errorf("head: lambda = %g, want >= 0", p.Lambda))
	}
	if p.Iters < 1 || p.WarmIters < 1 {
		errs = append(errs, fmt.Errorf("head: iterations %d, %d, want >= 1", p.Iters, p.WarmIters))
	}
	if !(p.Tol >= 0 && p.Tol < 1) {
		errs = append(errs, fmt.Errorf("head: tolerance = %g, want in [0, 1)", p.Tol))
	}
	if !(p.Weight >= 0) {
		errs = append(errs, fmt.Errorf("head: weight = %g, want >= 0", p.Weight))
	}
	return errors.Join(errs...)
}

// Head fits the softmax regression out of fold and turns its probabilities
// into mixture states.
//
// Hand-written on gonum: gonum/optimize's L-BFGS minimises the penalised
// cross-entropy and gonum/mat does the products; the loss and gradient are
// written here because no maintained Go library fits a multinomial logistic
// regression to soft targets (goml and golearn's linear models take hard
// labels, are unmaintained, and golearn's wraps liblinear through cgo).
type Head struct {
	n, d, c int
	p       Params
	// x is the z-scored features with a column of ones (the intercept),
	// rows in fold order: fold f is rows lo[f]..lo[f+1].
	x     *mat.Dense
	order []int // order[r] is the item at row r
	lo    []int
	w     [][]float64 // per fold, (d+1) x c row-major; nil before the first fit
	off   bool        // the fitted share fell under OffShare
	// mean and sd z-scored the features (Fit keeps them); weight is the
	// component weight of the last Round (0: none).
	mean, sd []float64
	weight   float64
	// targets and probs are Round's buffers (n x c).
	targets, probs []float64
	// OnWeight, when set, is given each round's component weight (the
	// quality harness logs the fitted ones).
	OnWeight func(r int, w float64)
}

// New prepares a head over n items of d float32 features (row-major) with
// keys, for c classes.
func New(x []float32, keys []int64, d, c int, p Params) (*Head, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n := len(keys)
	if d < 1 || len(x) != n*d {
		panic(fmt.Sprintf("head: %d values for %d items of dimension %d", len(x), n, d))
	}
	if c < 2 {
		return nil, fmt.Errorf("head: %d classes, want >= 2", c)
	}
	h := &Head{n: n, d: d, c: c, p: p, lo: make([]int, p.Folds+1), w: make([][]float64, p.Folds)}
	fold := make([]int, n)
	count := make([]int, p.Folds)
	for i, k := range keys {
		fold[i] = int(mix(p.Seed, uint64(k)) % uint64(p.Folds))
		count[fold[i]]++
	}
	for f := range p.Folds {
		h.lo[f+1] = h.lo[f] + count[f]
	}
	at := append([]int(nil), h.lo[:p.Folds]...)
	h.order = make([]int, n)
	for i, f := range fold {
		h.order[at[f]] = i
		at[f]++
	}
	mean, sd := engine.Moments(x, n, d)
	h.mean, h.sd = mean, sd
	h.x = mat.NewDense(n, d+1, nil)
	for r, i := range h.order {
		row := h.x.RawRowView(r)
		for j, v := range x[i*d : (i+1)*d] {
			row[j] = (float64(v) - mean[j]) / sd[j]
		}
		row[d] = 1
	}
	return h, nil
}

// mix is splitmix64's finaliser of seed and key: the item's fold.
func mix(seed, key uint64) uint64 {
	z := seed*0x9e3779b97f4a7c15 + key
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// OutOfFold fits the head to targets (n x c row-major, item order: each
// row a distribution over the classes, or all zero for an item that gives
// nothing to learn from) and writes to dst (n x c) every item's class
// probabilities under the model fitted on the other folds.
func (h *Head) OutOfFold(dst, targets []float64) error {
	n, c := h.n, h.c
	if len(targets) != n*c || len(dst) != n*c {
		panic(fmt.Sprintf("head: %d targets, %d dst for %d x %d", len(targets), len(dst), n, c))
	}
	t := mat.NewDense(n, c, nil)
	for r, i := range h.order {
		copy(t.RawRowView(r), targets[i*c:(i+1)*c])
	}
	// The folds' fits are independent (each writes its own weights and its
	// own items' rows of dst), so they run concurrently on the shared pool
	// (one fold at a time a goroutine): the same bits whatever the schedule.
	return pool.EachIndexErr(h.p.Folds, 0, func(f int) error { return h.fold(f, dst, t) })
}

// fold fits fold f's model on the other folds' rows of x and targets t (in
// fold order) and writes its items' probabilities to dst.
func (h *Head) fold(f int, dst []float64, t *mat.Dense) error {
	n, c, d1 := h.n, h.c, h.d+1
	lo, hi := h.lo[f], h.lo[f+1]
	var parts []part
	if lo > 0 {
		parts = append(parts, part{h.x.Slice(0, lo, 0, d1).(*mat.Dense), t.Slice(0, lo, 0, c).(*mat.Dense)})
	}
	if hi < n {
		parts = append(parts, part{h.x.Slice(hi, n, 0, d1).(*mat.Dense), t.Slice(hi, n, 0, c).(*mat.Dense)})
	}
	iters := h.p.WarmIters
	if h.w[f] == nil {
		h.w[f] = make([]float64, d1*c)
		iters = h.p.Iters
	}
	if len(parts) > 0 {
		w, err := fit(parts, h.w[f], h.d, c, h.p.Lambda, iters, h.p.Tol)
		if err != nil {
			return fmt.Errorf("head: fold %d: %w", f, err)
		}
		h.w[f] = w
	}
	if hi == lo {
		return nil
	}
	z := make([]float64, (hi-lo)*c)
	mulXW(z, h.x.Slice(lo, hi, 0, d1).(*mat.Dense), h.w[f], c)
	for r := lo; r < hi; r++ {
		i := h.order[r]
		softmax(dst[i*c:(i+1)*c], z[(r-lo)*c:(r-lo+1)*c])
	}
	return nil
}

// part is a block of training rows and their targets.
type part struct{ x, t *mat.Dense }

// fit minimises the penalised soft-target cross-entropy
//
//	F(W) = sum_i [ s_i logsumexp(x_i W) - t_i . (x_i W) ] + lambda/2 |W without intercepts|^2
//
// (s_i = sum of t_i) from w0 with at most iters L-BFGS iterations, stopping at the first that
// lowers it by less than tol of it (Params.Tol).
func fit(parts []part, w0 []float64, d, c int, lambda float64, iters int, tol float64) ([]float64, error) {
	d1 := d + 1
	zs := make([][]float64, len(parts))
	for k, p := range parts {
		rows, _ := p.x.Dims()
		zs[k] = make([]float64, rows*c)
	}
	g := make([]float64, d1*c)
	// at is the point whose residuals zs holds (nil: none). gonum's line
	// search asks for the loss at a point and then, where the loss
	// improved, for the gradient at the same point in a separate call; the
	// gradient there starts from the residuals the loss left, so that each
	// accepted point costs one product x W instead of two, with the same
	// bits.
	var at []float64
	// residuals sets zs to the residuals s_i p_i - t_i at w and returns the
	// unpenalised loss.
	residuals := func(w []float64) float64 {
		loss := 0.0
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
				lse := softmax(zr, zr) // zr becomes the probabilities
				loss += s*lse - dot
				for j := range zr {
					zr[j] = s*zr[j] - tr[j]
				}
			}
		}
		at = append(at[:0], w...)
		return loss
	}
	prob := optimize.Problem{
		Func: func(w []float64) float64 {
			loss := residuals(w)
			for j := 0; j < d*c; j++ { // the intercepts' row d is not penalised
				loss += 0.5 * lambda * w[j] * w[j]
			}
			return loss
		},
		Grad: func(grad, w []float64) {
			if !slices.Equal(at, w) {
				residuals(w)
			}
			clear(grad)
			for k, p := range parts {
				mulXtZ(g, p.x, zs[k], c)
				for j, v := range g {
					grad[j] += v
				}
			}
			for j := 0; j < d*c; j++ {
				grad[j] += lambda * w[j]
			}
		},
	}
	var conv optimize.Converger = optimize.NeverTerminate{}
	if tol > 0 {
		conv = &optimize.FunctionConverge{Relative: tol, Iterations: 1}
	}
	res, err := optimize.Minimize(prob, append([]float64(nil), w0...),
		&optimize.Settings{MajorIterations: iters, GradientThreshold: 1e-6, Converger: conv},
		&optimize.LBFGS{})
	if res == nil {
		return nil, err
	}
	// An iteration limit is the intended stop; any other failure (a line
	// search that found no decrease) still leaves the best point found.
	return res.X, nil
}

// mulXW sets z (rows x c, row-major) to x W, W (cols x c, row-major).
// gonum's Dgemm does the same sums in the same order (each row's entry
// accumulates x_rk W_k over k ascending, a zero x_rk skipped), but for a
// product this thin (c columns, a few) it spends most of its time in a call
// per x_rk; these loops give the same bits (TestKernels) many times as
// fast: four rows at a time in dot4 (or dot4Sums) where the CPU has it,
// then the rest in Go. The float64() conversions keep every product rounded
// before the sum (no fused multiply-add), as the spec requires for
// bit-identical results across architectures.
func mulXW(z []float64, x *mat.Dense, w []float64, c int) {
	rows, cols := x.Dims()
	r := 0
	switch {
	case dot4SumsKernel != nil && cols > 0:
		raw := x.RawMatrix()
		flags := 0
		if allFinite(w[:cols*c]) {
			flags = dot4Finite
		}
		for ; r+4 <= rows; r += 4 {
			for j := 0; j < c; j += dot4Cols {
				dot4Sums(raw.Data[r*raw.Stride:], 1, raw.Stride, w[j:], c, z[r*c+j:], c, cols, min(dot4Cols, c-j), flags)
			}
		}
	case dot4Kernel != nil && cols > 0:
		raw := x.RawMatrix()
		for ; r+4 <= rows; r += 4 {
			for j := 0; j < c; j += dot4Cols {
				dot4(raw.Data[r*raw.Stride:], 1, raw.Stride, w[j:], c, z[r*c+j:], c, cols, min(dot4Cols, c-j))
			}
		}
	}
	mulXWRows(z, x, w, c, r)
}

// mulXWRows is mulXW's Go loop for rows r0 on. It takes four x_rk at a
// time, so that each entry of z is loaded and stored once per four
// products, added in the same order.
func mulXWRows(z []float64, x *mat.Dense, w []float64, c, r0 int) {
	rows, cols := x.Dims()
	for r := r0; r < rows; r++ {
		zr := z[r*c : (r+1)*c]
		clear(zr)
		xr := x.RawRowView(r)[:cols]
		k := 0
		for ; k+4 <= cols; k += 4 {
			v0, v1, v2, v3 := xr[k], xr[k+1], xr[k+2], xr[k+3]
			if v0 == 0 || v1 == 0 || v2 == 0 || v3 == 0 {
				for q := k; q < k+4; q++ {
					addScaled(zr, xr[q], w[q*c:(q+1)*c])
				}
				continue
			}
			w0 := w[k*c : (k+1)*c]
			w1 := w[(k+1)*c : (k+2)*c][:len(w0)] // no bounds checks in the loop
			w2 := w[(k+2)*c : (k+3)*c][:len(w0)]
			w3 := w[(k+3)*c : (k+4)*c][:len(w0)]
			zr := zr[:len(w0)]
			for j, a := range w0 {
				t := zr[j]
				t += float64(v0 * a)
				t += float64(v1 * w1[j])
				t += float64(v2 * w2[j])
				t += float64(v3 * w3[j])
				zr[j] = t
			}
		}
		for ; k < cols; k++ {
			addScaled(zr, xr[k], w[k*c:(k+1)*c])
		}
	}
}

// addScaled adds v times each of src to dst, unless v is zero (Dgemm's
// skip: adding zero products could still turn a -0 sum into +0, or a NaN
// product in).
func addScaled(dst []float64, v float64, src []float64) {
	if v == 0 {
		return
	}
	dst = dst[:len(src)] // no bounds checks in the loop
	for j, a := range src {
		dst[j] += float64(v * a)
	}
}

// mulXtZ sets g (cols x c, row-major) to x^T z, z (rows x c): each entry
// accumulates over the rows ascending, a zero x_rk skipped, as gonum's
// Dgemm (mulXW says why by hand): four columns of x at a time in dot4
// where the CPU has it, the rest in Go. Where dot4Sums runs, x's rows go in
// blocks of xtzBlockRows, every four columns' sums carried on through each
// block (dot4Add; dot4 over all the rows would read x from memory once for
// every four columns and every pass over them).
func mulXtZ(g []float64, x *mat.Dense, z []float64, c int) {
	rows, cols := x.Dims()
	k0 := 0
	switch {
	case dot4SumsKernel != nil && rows > 0:
		raw := x.RawMatrix()
		k0 = cols &^ 3
		clear(g[:k0*c])
		flags := dot4Add // g's sums start from +0: never -0 (dot4Finite)
		if allFinite(z[:rows*c]) {
			flags |= dot4Finite
		}
		for r0 := 0; r0 < rows; r0 += xtzBlockRows {
			steps := min(xtzBlockRows, rows-r0)
			for k := 0; k < k0; k += 4 {
				for j := 0; j < c; j += dot4Cols {
					dot4Sums(raw.Data[r0*raw.Stride+k:], raw.Stride, 1, z[r0*c+j:], c, g[k*c+j:], c, steps, min(dot4Cols, c-j), flags)
				}
			}
		}
	case dot4Kernel != nil && rows > 0:
		raw := x.RawMatrix()
		for ; k0+4 <= cols; k0 += 4 {
			for j := 0; j < c; j += dot4Cols {
				dot4(raw.Data[k0:], raw.Stride, 1, z[j:], c, g[k0*c+j:], c, rows, min(dot4Cols, c-j))
			}
		}
	}
	mulXtZCols(g, x, z, c, k0)
}

// xtzBlockRows is how many of x's rows mulXtZ takes at a time with dot4Sums.
// Each of a block's rows is a stream through x (four columns of it a call)
// that the hardware prefetchers follow while there are few enough of them,
// and each block costs a call per four columns: one fold's x^T z at 7,440 x
// 257 x 10 on an AVX2 AMD EPYC took 3.0 ms of CPU in blocks of 12 rows,
// 3.4-3.7 of 16, 5.0 of 24, 8.4 of 128 and 3.8 of 8.
const xtzBlockRows = 12

// mulXtZCols is mulXtZ's Go loop for the columns k0 on. It takes four rows
// at a time, so that each entry of g is loaded and stored once per four
// products, added in the same order.
func mulXtZCols(g []float64, x *mat.Dense, z []float64, c, k0 int) {
	rows, cols := x.Dims()
	clear(g[k0*c:])
	r := 0
	for ; r+4 <= rows; r += 4 {
		x0 := x.RawRowView(r)[k0:cols]
		x1 := x.RawRowView(r + 1)[k0:cols][:len(x0)]
		x2 := x.RawRowView(r + 2)[k0:cols][:len(x0)]
		x3 := x.RawRowView(r + 3)[k0:cols][:len(x0)]
		z0 := z[r*c : (r+1)*c]
		z1 := z[(r+1)*c : (r+2)*c][:len(z0)]
		z2 := z[(r+2)*c : (r+3)*c][:len(z0)]
		z3 := z[(r+3)*c : (r+4)*c][:len(z0)]
		for q, v0 := range x0 {
			v1, v2, v3 := x1[q], x2[q], x3[q]
			k := k0 + q
			gk := g[k*c : (k+1)*c]
			if v0 == 0 || v1 == 0 || v2 == 0 || v3 == 0 {
				addScaled(gk, v0, z0)
				addScaled(gk, v1, z1)
				addScaled(gk, v2, z2)
				addScaled(gk, v3, z3)
				continue
			}
			gk = gk[:len(z0)]
			for j, a := range z0 {
				t := gk[j]
				t += float64(v0 * a)
				t += float64(v1 * z1[j])
				t += float64(v2 * z2[j])
				t += float64(v3 * z3[j])
				gk[j] = t
			}
		}
	}
	for ; r < rows; r++ {
		zr := z[r*c : (r+1)*c]
		for q, v := range x.RawRowView(r)[k0:cols] {
			k := k0 + q
			addScaled(g[k*c:(k+1)*c], v, zr)
		}
	}
}

// dot4Cols is the most columns dot4 computes at once.
const dot4Cols = 16

// dot4 sets out[i*os+j], for i < 4 and j < n <= dot4Cols, to the sum over
// s < steps, ascending, of a[s*as+i*ai] * b[s*bs+j], a term whose a is zero
// left out: four rows of x W (a the rows of x, b W) or four rows of x^T z
// (a four columns of x, b z). dot4Kernel computes it; the checks here keep
// the assembly within its slices.
func dot4(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int) {
	if n < 1 || n > dot4Cols || steps < 1 ||
		(steps-1)*as+3*ai >= len(a) || (steps-1)*bs+n > len(b) || 3*os+n > len(out) {
		panic(fmt.Sprintf("head: dot4 of %d steps, %d columns out of its slices (%d, %d, %d)", steps, n, len(a), len(b), len(out)))
	}
	dot4Kernel(a, as, ai, b, bs, out, os, steps, n)
}

// dot4Sums' flags.
const (
	// dot4Add starts each sum from out's value instead of zero: out[i*os+j]
	// plus each term in turn, in the same order, so that a sum over s taken
	// in blocks has the bits of one taken whole.
	dot4Add = 1 << iota
	// dot4Finite says that b holds no infinity or NaN (nor out, with
	// dot4Add, a -0), so that the kernel may add a zero a's term rather
	// than test for it: the term is a +0 or -0 product, and x plus either
	// zero is x for every x but -0, which no sum here is (it starts from +0,
	// or from out, and rounding to nearest a sum is -0 only where both its
	// terms are).
	dot4Finite
)

// dot4Sums is dot4 with dot4Add and dot4Finite among flags.
// dot4SumsKernel computes it, where the CPU has one (nil: mulXW and mulXtZ
// use dot4 instead).
func dot4Sums(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n, flags int) {
	if n < 1 || n > dot4Cols || steps < 1 ||
		(steps-1)*as+3*ai >= len(a) || (steps-1)*bs+n > len(b) || 3*os+n > len(out) {
		panic(fmt.Sprintf("head: dot4Sums of %d steps, %d columns out of its slices (%d, %d, %d)", steps, n, len(a), len(b), len(out)))
	}
	dot4SumsKernel(a, as, ai, b, bs, out, os, steps, n, flags)
}

// allFinite is whether v holds no infinity or NaN (x - x is NaN for those,
// 0 for the rest).
func allFinite(v []float64) bool {
	for _, x := range v {
		if x-x != 0 {
			return false
		}
	}
	return true
}

// softmax writes softmax(z) to dst (which may be z) and returns
// logsumexp(z).
func softmax(dst, z []float64) float64 {
	top := math.Inf(-1)
	for _, v := range z {
		top = max(top, v)
	}
	copy(dst, z)
	return mixture.NormExp(dst, top)
}

// OffShare is the fitted share below which the head is switched off for
// the rest of the run: no more fits, no component. A share a moves each
// item's neighbourhood label distribution, and through it the item's pi, by
// at most a of its mass; under 1% that is under the EM tolerance
// (mixture.DefaultParams' EMTol, .01), the move the rounds already treat as
// none. Once the neighbours have outvoted the head it has never come back on
// the dev grid (letter idn-0.4's share: .46, .06, .00, ...), and refitting it
// every round cost 2.5-7 times the engine time (docs/QUALITY.md), so off
// stays off: the run is as deterministic as before, and as cheap as without
// the head from that round on. A fixed Weight is never switched off.
const OffShare = 0.01

// Off reports whether the fitted share fell under OffShare: the head is no
// longer fitted, and Round returns no component.
func (h *Head) Off() bool { return h.off }

// Round is the head's part of round r: it fits the head to the states'
// posteriors (st: the head's items in New's order; pi renormalised over
// the kept classes) and returns, per item, the state of its out-of-fold
// class probabilities (mixture.State.InitPosterior: the c0 most probable
// classes, each with the smoothed identity row), and the component's weight
// relative to the item's neighbours' total: Weight, or with Weight 0 the
// fitted share a (Stack) as a / (1 - a), a at most MaxShare. neighbour(i,
// j) is item i's neighbour j < k as an item index (-1 for none) and its
// weight: the vote Stack weighs the head against. With Weight 0, a share
// under OffShare switches the head off (OffShare says why): from then on
// Round returns nil states and weight 0, and the round has no such
// component. OnWeight, when set, is given each round's weight.
func (h *Head) Round(r int, st *mixture.States, k int, neighbour func(i, j int) (int, float64), c0 int, smooth float64) (*mixture.States, float64, error) {
	if st.Len() != h.n {
		panic(fmt.Sprintf("head: %d states for %d items", st.Len(), h.n))
	}
	h.weight = 0
	if h.off {
		if h.OnWeight != nil {
			h.OnWeight(r, 0)
		}
		return nil, 0, nil
	}
	if h.targets == nil {
		h.targets = make([]float64, h.n*h.c)
		h.probs = make([]float64, h.n*h.c)
	}
	targets, probs := h.targets, h.probs
	clear(targets)
	for i := range h.n {
		row := targets[i*h.c : (i+1)*h.c]
		s := 0.0
		for e := st.ItemOff[i]; e < st.ItemOff[i+1]; e++ {
			row[st.Class[e]] = float64(st.Pi[e])
			s += float64(st.Pi[e])
		}
		if s > 0 {
			for j := range row {
				row[j] /= s
			}
		}
	}
	if err := h.OutOfFold(probs, targets); err != nil {
		return nil, 0, err
	}
	w := h.p.Weight
	if w == 0 {
		// The neighbours' vote: their posteriors, weighted as in the
		// mixture, with a little of every class so that no target class
		// has probability 0 (the peers' kNN probabilities do the same).
		vote := make([]float64, h.n*h.c)
		for i := range h.n {
			row := vote[i*h.c : (i+1)*h.c]
			for j := range row {
				row[j] = 1e-3
			}
			for j := range k {
				at, wt := neighbour(i, j)
				if at < 0 || wt <= 0 {
					continue
				}
				for e := st.ItemOff[at]; e < st.ItemOff[at+1]; e++ {
					row[st.Class[e]] += wt * float64(st.Pi[e])
				}
			}
			s := 0.0
			for _, v := range row {
				s += v
			}
			for j := range row {
				row[j] /= s
			}
		}
		a := min(Stack(targets, probs, vote, h.c), MaxShare)
		if a < OffShare {
			h.off = true
			if h.OnWeight != nil {
				h.OnWeight(r, 0)
			}
			return nil, 0, nil
		}
		w = a / (1 - a)
	}
	var out mixture.States
	out.Reset()
	var s mixture.State
	for i := range h.n {
		s.InitPosterior(probs[i*h.c:(i+1)*h.c], nil, 1, c0, smooth)
		out.Append(&s)
	}
	if h.OnWeight != nil {
		h.OnWeight(r, w)
	}
	h.weight = w
	return &out, w, nil
}

// Component is Round as the engine's hook (engine.Component), with the
// mixture's c0 and smoothing.
func (h *Head) Component(c0 int, smooth float64) engine.Component {
	return func(r int, st *mixture.States, k int, neighbour func(i, j int) (int, float64)) (*mixture.States, float64, error) {
		return h.Round(r, st, k, neighbour, c0, smooth)
	}
}

// Factory returns the engine's NewComponent for a head of params p over c
// classes: a Head over the candidates' features as the engine searches
// them, and its Component. onWeight, when not nil, becomes the head's
// OnWeight.
func Factory(p Params, c, c0 int, smooth float64, onWeight func(r int, w float64)) func(x []float32, keys []int64, d int) (engine.Component, error) {
	return func(x []float32, keys []int64, d int) (engine.Component, error) {
		h, err := New(x, keys, d, c, p)
		if err != nil {
			return nil, err
		}
		h.OnWeight = onWeight
		return h.Component(c0, smooth), nil
	}
}

// MaxShare bounds the fitted share of the head in the neighbours' mass:
// the head is one more component, never heavier than all the neighbours
// together. Without a bound below 1 the fit feeds itself where neighbours
// are weak (the posteriors the head is fitted to follow the head, so its
// share rises round by round): at .9, reached from round 1 on the
// weak-neighbour letter cells, relabel fell to the linear model's level
// (docs/QUALITY.md, "Weak neighbours"). .5 is that natural bound, not a
// swept value.
const MaxShare = 0.5

// Stack returns the share a in [0, 1] that maximises the likelihood of the
// targets (n x c rows, each a distribution or zero) under the mixture
// a head + (1 - a) vote of two out-of-sample predictions (n x c rows of
// probabilities): sum_i sum_c t_ic log(a head_ic + (1 - a) vote_ic).
// Where the neighbours predict the labels better than a linear model of
// the features, a is small and the head has little say; where they are
// weak, it is large.
//
// The objective is concave in a, so its maximum is 0 or 1 where its slope
// there says so, else the root of the slope, found by Newton's method
// kept inside the bracket the slope's signs give (bisection where a step
// leaves it). EM, the textbook fit of a mixture weight, converges linearly
// and slowly where the two predictions are alike: it ran its 100 steps
// over every entry and stopped short of the maximum; Newton takes a few.
func Stack(targets, head, vote []float64, c int) float64 {
	// The entries with a target; those where both predictions are 0 do
	// not depend on a.
	var t, h, v []float64
	for i, x := range targets {
		if x == 0 || (head[i] == 0 && vote[i] == 0) {
			continue
		}
		t, h, v = append(t, x), append(h, head[i]), append(v, vote[i])
	}
	if len(t) == 0 {
		return 0
	}
	// slope returns the objective's first and second derivatives at a.
	slope := func(a float64) (d1, d2 float64) {
		for j, x := range t {
			q := (h[j] - v[j]) / (a*h[j] + (1-a)*v[j])
			d1 += x * q
			d2 -= x * q * q
		}
		return d1, d2
	}
	if d1, _ := slope(0); d1 <= 0 {
		return 0
	}
	if d1, _ := slope(1); d1 >= 0 {
		return 1
	}
	lo, hi, a := 0.0, 1.0, 0.5
	for range 100 {
		d1, d2 := slope(a)
		if d1 == 0 {
			return a
		}
		if d1 > 0 {
			lo = a
		} else {
			hi = a
		}
		next := a - d1/d2
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-a) < 1e-12 || hi-lo < 1e-12 {
			return next
		}
		a = next
	}
	return a
}
