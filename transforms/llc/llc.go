package llc

import (
	"fmt"
	"math"
)

// Params configures the locality-constrained linear coding QP of METHOD.md step 2:
//
//	min_a ||x - B^T a||^2 + Lambda ||d . a||^2   s.t. a >= 0, 1^T a = 1,
//	d_j = exp(dist(x, b_j) / Sigma).
//
// Because 1^T a = 1, the fidelity term equals a^T C a with the K x K Gram
// C = (B - x)(B - x)^T, so every Coder solves min a^T G a on the simplex with
//
//	G = C + Lambda diag(d^2) + Ridge trace(C + Lambda diag(d^2)) I,
//
// over the valid neighbours only. Every field is required: DefaultParams holds
// the defaults.
type Params struct {
	// Lambda weights the locality adaptor (the paper and the authors' code
	// use 0).
	Lambda float64
	// Sigma scales the locality adaptor's distances.
	Sigma float64
	// Ridge is added to the Gram matrix's diagonal, relative to its trace, so that
	// singular neighbourhoods (K > d, duplicates) have a unique solution
	// (DefaultParams: 1e-10). The ridge selects, among equally good codes, the
	// one of least norm; in those flat directions the weights are only as
	// accurate as about 1e-16/Ridge allows. When the trace is zero (every valid
	// neighbour equals the query and Lambda = 0) all codes are equally good and
	// the weights are uniform, the limit the ridge selects.
	Ridge float64
	// Tol is the KKT tolerance the solver stops at, relative to the largest
	// entry of G: a multiplier (G a)_j - nu of a neighbour off the support may be
	// negative by at most Tol max|G|.
	Tol float64
	// MaxIter bounds solver iterations.
	MaxIter int
}

// DefaultParams returns the QP's defaults: the paper's plain LLC (Lambda 0),
// a unit locality scale, a ridge small enough not to move a well-posed code,
// and the solver's tolerance and iteration bound. options.Defaults takes
// --llc-lambda and --llc-sigma from here, so each default is written once.
func DefaultParams() Params {
	return Params{Lambda: 0, Sigma: 1, Ridge: 1e-10, Tol: 1e-9, MaxIter: 1000}
}

// Validate reports the first field outside its domain. Every field is
// required (DefaultParams has them all): a zero Sigma, Tol or MaxIter is an
// error, not a default.
func (p Params) Validate() error {
	bad := func(name string, v float64, want string) error {
		return fmt.Errorf("llc: Params.%s = %v, want %s", name, v, want)
	}
	switch {
	case !(p.Lambda >= 0) || math.IsInf(p.Lambda, 1):
		return bad("Lambda", p.Lambda, "finite and >= 0")
	case !(p.Sigma > 0) || math.IsInf(p.Sigma, 1):
		return bad("Sigma", p.Sigma, "finite and > 0")
	case !(p.Ridge >= 0) || p.Ridge >= 1:
		return bad("Ridge", p.Ridge, "in [0, 1)")
	case !(p.Tol > 0) || p.Tol >= 1:
		return bad("Tol", p.Tol, "in (0, 1)")
	case p.MaxIter < 1:
		return fmt.Errorf("llc: Params.MaxIter = %d, want >= 1", p.MaxIter)
	}
	return nil
}

// Batch is B neighbourhoods of K neighbours in d dimensions, row-major float32:
// X[b*D:(b+1)*D] is query b, N[(b*K+j)*D:(b*K+j+1)*D] its neighbour j and
// Dist[b*K+j] their distance (used only by the locality adaptor). Len, when not
// nil, gives how many of the K neighbours of query b are valid (the rest are
// padding and get weight 0).
type Batch struct {
	B, K, D int
	X       []float32
	N       []float32
	Dist    []float32
	Len     []int32
}

// Check panics when b's slices are too short for its shape: a programmer error.
// Dist is needed only when the locality adaptor is on. Exported so that
// every Coder (gpu.Coder too) checks a batch by the same rule.
func (b Batch) Check(dst []float64, needDist bool) {
	if b.B < 0 || b.K < 0 || b.D < 0 {
		panic(fmt.Sprintf("llc: negative batch shape B=%d K=%d D=%d", b.B, b.K, b.D))
	}
	switch {
	case len(dst) < b.B*b.K:
		panic(fmt.Sprintf("llc: len(dst) = %d < B*K = %d", len(dst), b.B*b.K))
	case len(b.X) < b.B*b.D:
		panic(fmt.Sprintf("llc: len(X) = %d < B*D = %d", len(b.X), b.B*b.D))
	case len(b.N) < b.B*b.K*b.D:
		panic(fmt.Sprintf("llc: len(N) = %d < B*K*D = %d", len(b.N), b.B*b.K*b.D))
	case needDist && len(b.Dist) < b.B*b.K:
		panic(fmt.Sprintf("llc: len(Dist) = %d < B*K = %d (Lambda > 0 needs distances)", len(b.Dist), b.B*b.K))
	case b.Len != nil && len(b.Len) < b.B:
		panic(fmt.Sprintf("llc: len(Len) = %d < B = %d", len(b.Len), b.B))
	}
}

// Coder solves the QP for every neighbourhood of a batch. It is implemented by
// the CPU solver here and by the CUDA backend (gpu/, build tag cuda); llctest.Run
// checks any implementation.
type Coder interface {
	// Code writes the weights of neighbourhood b to dst[b*K:(b+1)*K]; each row is
	// non-negative and sums to 1.
	Code(dst []float64, b Batch, p Params) error
}
