package head

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// dot4Values draws a value for the products' tests. Where special, one in
// three is special (either zero, NaN, an infinity, a subnormal); else one
// in twelve is an infinity or NaN (b's few: one times a zero a shows a term
// not left out), none where finite.
func dot4Values(r *rand.Rand, special, finite bool) float64 {
	vals := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-310, -5e-324}
	if special && r.IntN(3) == 0 {
		return vals[r.IntN(len(vals))]
	}
	if !special && !finite && r.IntN(12) == 0 {
		return vals[2+r.IntN(3)]
	}
	return r.NormFloat64()
}

// TestKernelsEveryWidth: every width dot4 is called with (n = 1..16, as the
// classes' count c and its remainder after sixteen give it) at one to five
// steps, through x W and x^T z, each of dot4's assembly kernels against
// the Go loops bit for bit, x full of zeros and special values, W and z
// with a few infinities and NaNs and without (dot4Finite's passes).
func TestKernelsEveryWidth(t *testing.T) {
	impls := kernelImpls()
	if len(impls) < 2 {
		t.Skip("no dot4 assembly on this CPU: the Go loops are the only products")
	}
	goLoops := impls[len(impls)-1]
	r := rand.New(rand.NewPCG(5, 6))
	cs := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 23, 32, 33}
	for _, c := range cs {
		for steps := 1; steps <= 5; steps++ {
			for _, other := range []int{4, 9} {
				for _, finite := range []bool{false, true} {
					// x W: other rows of steps columns; x^T z: steps rows
					// of other columns; both views into wider matrices.
					xw := mat.NewDense(other+2, steps+3, nil)
					xt := mat.NewDense(steps+2, other+3, nil)
					for _, m := range []*mat.Dense{xw, xt} {
						raw := m.RawMatrix()
						for i := range raw.Data {
							raw.Data[i] = dot4Values(r, true, false)
						}
					}
					xw = xw.Slice(1, 1+other, 2, 2+steps).(*mat.Dense)
					xt = xt.Slice(1, 1+steps, 2, 2+other).(*mat.Dense)
					w := make([]float64, steps*c)
					z := make([]float64, steps*c)
					for i := range w {
						w[i] = dot4Values(r, false, finite)
						z[i] = dot4Values(r, false, finite)
					}
					run := func(impl kernelImpl) (zw, g []float64) {
						defer impl.use()()
						zw = make([]float64, other*c)
						g = make([]float64, other*c)
						mulXW(zw, xw, w, c)
						mulXtZ(g, xt, z, c)
						return
					}
					wantZ, wantG := run(goLoops)
					for _, impl := range impls[:len(impls)-1] {
						gotZ, gotG := run(impl)
						if !slices.EqualFunc(gotZ, wantZ, sameBits) {
							t.Errorf("%s, c %d, %d steps, %d rows, finite %v: x W differs from the Go loops'\n got %v\nwant %v", impl.name, c, steps, other, finite, gotZ, wantZ)
						}
						if !slices.EqualFunc(gotG, wantG, sameBits) {
							t.Errorf("%s, c %d, %d steps, %d columns, finite %v: x^T z differs from the Go loops'\n got %v\nwant %v", impl.name, c, steps, other, finite, gotG, wantG)
						}
					}
				}
			}
		}
	}
}

// dot4Ref is dot4's sums as its doc states them, term by term, a zero a's
// term left out whatever the flags; with dot4Add each sum starts from out's
// value.
func dot4Ref(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n, flags int) {
	for i := range 4 {
		for j := range n {
			t := 0.0
			if flags&dot4Add != 0 {
				t = out[i*os+j]
			}
			for s := range steps {
				if v := a[s*as+i*ai]; v != 0 {
					t += float64(v * b[s*bs+j])
				}
			}
			out[i*os+j] = t
		}
	}
}

// dot4Variant is one of the calls the tests make of an assembly kernel:
// dot4's, or dot4Sums' with flags.
type dot4Variant struct {
	name  string
	flags int
	call  sumsFunc
}

// dot4Variants lists k's calls: dot4, and dot4Sums with each set of flags
// where k has it.
func dot4Variants(k namedKernel) []dot4Variant {
	vs := []dot4Variant{{k.name, 0, func(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n, _ int) {
		k.k(a, as, ai, b, bs, out, os, steps, n)
	}}}
	if k.sums != nil {
		for flags := range 4 {
			vs = append(vs, dot4Variant{fmt.Sprintf("%s (flags %d)", k.name, flags), flags, k.sums})
		}
	}
	return vs
}

// TestDot4Kernels calls each of dot4's assembly kernels directly (and
// dot4Sums with each set of flags where it has one), at every width and one
// to five steps, with strides as x W and x^T z give them and slices no
// longer than dot4 requires: the sums are the doc's (dot4Ref, a zero a's
// term left out, also where dot4Finite lets the kernel add it) bit for bit,
// dot4Add's starting from out's values (-0, where not dot4Finite, NaN and
// infinities among them), and out outside the four rows' n columns keeps
// what it held.
func TestDot4Kernels(t *testing.T) {
	ks := asmKernels()
	if len(ks) == 0 {
		t.Skip("no dot4 assembly on this CPU")
	}
	r := rand.New(rand.NewPCG(7, 8))
	const sentinel = 12345.5
	for _, k := range ks {
		for _, v := range dot4Variants(k) {
			add, finite := v.flags&dot4Add != 0, v.flags&dot4Finite != 0
			for n := 1; n <= dot4Cols; n++ {
				for steps := 1; steps <= 5; steps++ {
					// {as, ai}: x W's (a row's entries one apart, rows a
					// stride apart), x^T z's (the other way round).
					for _, st := range [][2]int{{1, steps + 3}, {7, 1}} {
						as, ai := st[0], st[1]
						bs := n + r.IntN(3)
						os := n + r.IntN(3)
						a := make([]float64, (steps-1)*as+3*ai+1)
						b := make([]float64, (steps-1)*bs+n)
						for i := range a {
							a[i] = dot4Values(r, true, false)
						}
						for i := range b {
							b[i] = dot4Values(r, false, finite)
						}
						want := make([]float64, 3*os+n)
						got := make([]float64, len(want))
						for i := range got {
							want[i] = sentinel
							if add && i%os < n {
								// Where -0 may start a sum, half
								// of them -0: a -0 sum whose terms
								// are all left out stays -0.
								want[i] = math.Copysign(0, -1)
								if finite || r.IntN(2) == 0 {
									if want[i] = dot4Values(r, true, false); want[i] == 0 {
										want[i] = 0 // +0 for a -0
									}
								}
							}
							got[i] = want[i]
						}
						dot4Ref(a, as, ai, b, bs, want, os, steps, n, v.flags)
						v.call(a, as, ai, b, bs, got, os, steps, n, v.flags)
						if !slices.EqualFunc(got, want, sameBits) {
							t.Errorf("%s, n %d, %d steps, as %d, ai %d, bs %d, os %d:\n got %v\nwant %v", v.name, n, steps, as, ai, bs, os, got, want)
						}
					}
				}
			}
		}
	}
}

// TestOutOfFoldSameBits: the head's out-of-fold probabilities, whole fits
// of many L-BFGS steps, have the same bits with each of dot4's assembly
// kernels as with the Go loops (c = 10 and 26: dot4's widths 10, 16 and
// then 10; d + 1 not a multiple of four, so that x^T z's last columns are
// the Go loop's).
func TestOutOfFoldSameBits(t *testing.T) {
	impls := kernelImpls()
	if len(impls) < 2 {
		t.Skip("no dot4 assembly on this CPU: the Go loops are the only products")
	}
	for _, sz := range [][3]int{{700, 21, 10}, {300, 29, 26}} {
		n, d, c := sz[0], sz[1], sz[2]
		x, keys, _, given := linearSet(n, d, c, 3)
		run := func(impl kernelImpl) []float64 {
			defer impl.use()()
			return outOfFold(t, x, keys, d, c, given)
		}
		want := run(impls[len(impls)-1])
		for _, impl := range impls[:len(impls)-1] {
			if got := run(impl); !slices.EqualFunc(got, want, sameBits) {
				t.Errorf("n %d, d %d, c %d: %s's probabilities differ from the Go loops'", n, d, c, impl.name)
			}
		}
	}
}
