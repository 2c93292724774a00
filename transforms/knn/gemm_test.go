package knn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gemmSizes are awkward sizes for m, n and k: 1, not multiples of any
// kernel's mr or nr, straddling 32, and k past kcBlock (two and three
// passes of the micro-kernel).
var gemmSizes = []int{1, 7, 31, 33, 129}

var gemmDepths = []int{1, 7, 31, 33, 129, kcBlock + 1, 2*kcBlock + 77}

// runGemm packs a (m x k) times alpha and b (n x k) for kn and returns the
// m x n product a b^T written into a matrix of row stride ldc >= n whose
// other entries hold a sentinel.
func runGemm(kn *kernel, m, n, k int, a, b []float32, alpha float32, ldc int) []float32 {
	ap := make([]float32, packedLen(m, k, kn.mr))
	bp := make([]float32, packedLen(n, k, kn.nr))
	pack(ap, a, m, k, kn.mr, alpha)
	pack(bp, b, n, k, kn.nr, 1)
	c := make([]float32, m*ldc)
	for i := range c {
		c[i] = -7
	}
	kn.gemm(m, n, k, ap, bp, c, ldc, make([]float32, kn.mr*kn.nr))
	return c
}

// TestKernelsMatchOracle checks every micro-kernel this CPU runs against a
// float64 product at awkward sizes: within the float32 error bound of a
// length-k dot product on Gaussian data, exactly on small integers (every
// partial sum is then exact), and with the entries beyond n in each row of c
// untouched.
func TestKernelsMatchOracle(t *testing.T) {
	ks := kernels()
	if len(ks) == 0 {
		t.Skip("no assembly micro-kernel for this CPU: the search uses gonum's blas32")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kn := range ks {
		for _, m := range gemmSizes {
			for _, n := range gemmSizes {
				for _, k := range gemmDepths {
					for _, ints := range []bool{false, true} {
						name := fmt.Sprintf("%s m=%d n=%d k=%d ints=%v", kn.name, m, n, k, ints)
						a := make([]float32, m*k)
						b := make([]float32, n*k)
						for _, v := range [][]float32{a, b} {
							for i := range v {
								if ints {
									v[i] = float32(rng.IntN(5) - 2)
								} else {
									v[i] = float32(rng.NormFloat64())
								}
							}
						}
						const alpha = -2
						ldc := n + 3
						c := runGemm(kn, m, n, k, a, b, alpha, ldc)
						checkGemm(t, name, m, n, k, a, b, alpha, c, ldc, ints)
					}
				}
			}
		}
	}
}

func checkGemm(t *testing.T, name string, m, n, k int, a, b []float32, alpha float64, c []float32, ldc int, exact bool) {
	t.Helper()
	for i := range m {
		for j := range ldc {
			got := c[i*ldc+j]
			if j >= n {
				if got != -7 {
					t.Fatalf("%s: c[%d,%d] = %v beyond column %d, want it untouched", name, i, j, got, n)
				}
				continue
			}
			var want, mag float64
			for p := range k {
				x := float64(a[i*k+p]) * float64(b[j*k+p])
				want += x
				mag += math.Abs(x)
			}
			want *= alpha
			mag *= math.Abs(alpha)
			tol := 0.0
			if !exact {
				tol = 2 * float64(k) * 0x1p-24 * mag
			}
			if math.Abs(float64(got)-want) > tol {
				t.Fatalf("%s: c[%d,%d] = %v, want %v within %g", name, i, j, got, want, tol)
			}
		}
	}
}

// TestKernelsAgree checks that the kernels give bit-identical products: each
// entry is one FMA chain in increasing k, whatever the tile shape, so the
// AVX2 and AVX-512 machines of a fleet rank neighbours the same way.
func TestKernelsAgree(t *testing.T) {
	ks := kernels()
	if len(ks) < 2 {
		t.Skipf("%d micro-kernels on this CPU; need two to compare", len(ks))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range gemmDepths {
		m, n := 53, 71
		a := make([]float32, m*k)
		b := make([]float32, n*k)
		for _, v := range [][]float32{a, b} {
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
		}
		want := runGemm(ks[0], m, n, k, a, b, -2, n)
		for _, kn := range ks[1:] {
			if got := runGemm(kn, m, n, k, a, b, -2, n); !slices.Equal(got, want) {
				t.Errorf("k=%d: %s differs from %s", k, kn.name, ks[0].name)
			}
		}
	}
}
