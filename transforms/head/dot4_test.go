package head

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// dot4Values draws a value for the products' tests: one in three special
// (either zero, NaN, an infinity, a subnormal) where special, else normal.
func dot4Values(r *rand.Rand, special bool) float64 {
	vals := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-310, -5e-324}
	if special && r.IntN(3) == 0 {
		return vals[r.IntN(len(vals))]
	}
	if !special && r.IntN(12) == 0 { // b's few: an infinity or NaN times a zero a shows a term not left out
		return vals[2+r.IntN(3)]
	}
	return r.NormFloat64()
}

// TestKernelsEveryWidth: every width dot4 is called with (n = 1..16, as the
// classes' count c and its remainder after sixteen give it) at one to five
// steps, through x W and x^T z, each of dot4's assembly kernels against
// the Go loops bit for bit, x full of zeros and special values, W and z
// with a few infinities and NaNs.
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
				// x W: other rows of steps columns; x^T z: steps rows of
				// other columns; both views into wider matrices.
				xw := mat.NewDense(other+2, steps+3, nil)
				xt := mat.NewDense(steps+2, other+3, nil)
				for _, m := range []*mat.Dense{xw, xt} {
					raw := m.RawMatrix()
					for i := range raw.Data {
						raw.Data[i] = dot4Values(r, true)
					}
				}
				xw = xw.Slice(1, 1+other, 2, 2+steps).(*mat.Dense)
				xt = xt.Slice(1, 1+steps, 2, 2+other).(*mat.Dense)
				w := make([]float64, steps*c)
				z := make([]float64, steps*c)
				for i := range w {
					w[i] = dot4Values(r, false)
					z[i] = dot4Values(r, false)
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
						t.Errorf("%s, c %d, %d steps, %d rows: x W differs from the Go loops'\n got %v\nwant %v", impl.name, c, steps, other, gotZ, wantZ)
					}
					if !slices.EqualFunc(gotG, wantG, sameBits) {
						t.Errorf("%s, c %d, %d steps, %d columns: x^T z differs from the Go loops'\n got %v\nwant %v", impl.name, c, steps, other, gotG, wantG)
					}
				}
			}
		}
	}
}

// dot4Ref is dot4's sums as its doc states them, term by term; with add,
// dot4Add's (each sum from out's value).
func dot4Ref(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int, add bool) {
	for i := range 4 {
		for j := range n {
			t := 0.0
			if add {
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

// TestDot4Kernels calls each of dot4's assembly kernels directly (and its
// dot4Add kernel where it has one), at every width and one to five steps,
// with strides as x W and x^T z give them and slices no longer than dot4
// requires: the sums are the doc's (dot4Ref) bit for bit, dot4Add's
// starting from out's values (-0, NaN and infinities among them), and out
// outside the four rows' n columns keeps what it held.
func TestDot4Kernels(t *testing.T) {
	ks := asmKernels()
	if len(ks) == 0 {
		t.Skip("no dot4 assembly on this CPU")
	}
	r := rand.New(rand.NewPCG(7, 8))
	const sentinel = 12345.5
	for _, k := range ks {
		for _, add := range []bool{false, true} {
			kernel, name := k.k, k.name
			if add {
				if k.add == nil {
					continue
				}
				kernel, name = k.add, k.name+" (add)"
			}
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
							a[i] = dot4Values(r, true)
						}
						for i := range b {
							b[i] = dot4Values(r, false)
						}
						want := make([]float64, 3*os+n)
						got := make([]float64, len(want))
						for i := range got {
							want[i] = sentinel
							if add && i%os < n {
								// Half of them -0: a -0 sum
								// whose terms are all left out
								// stays -0.
								want[i] = math.Copysign(0, -1)
								if r.IntN(2) == 0 {
									want[i] = dot4Values(r, true)
								}
							}
							got[i] = want[i]
						}
						dot4Ref(a, as, ai, b, bs, want, os, steps, n, add)
						kernel(a, as, ai, b, bs, got, os, steps, n)
						if !slices.EqualFunc(got, want, sameBits) {
							t.Errorf("%s, n %d, %d steps, as %d, ai %d, bs %d, os %d:\n got %v\nwant %v", name, n, steps, as, ai, bs, os, got, want)
						}
					}
				}
			}
		}
	}
}
