package llc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDrop checks the Givens downdate against the definition: after dropping
// any position of a factored support, L L^T equals G restricted to what is
// left.
func TestDrop(t *testing.T) {
	const n = 7
	rng := rand.New(rand.NewPCG(1, 0))
	y := make([]float64, n*3)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	for p := 0; p < n; p++ {
		var w workspace
		w.reserve(n, 3)
		g := w.g[:n*n]
		gram(g, y, n, 3)
		for j := 0; j < n; j++ {
			g[j*n+j] += 0.1 // K > d: positive definite only through the ridge
		}
		// Factor the support in a scrambled order, as the active set adds it.
		set := rng.Perm(n)
		for i, si := range set {
			for k := 0; k <= i; k++ {
				v := g[si*n+set[k]]
				for m := 0; m < k; m++ {
					v -= w.l[i*n+m] * w.l[k*n+m]
				}
				if k == i {
					w.l[i*n+i] = math.Sqrt(v)
				} else {
					w.l[i*n+k] = v / w.l[k*n+k]
				}
			}
		}
		set = w.drop(set, p, n)
		for r := range set {
			for c := 0; c <= r; c++ {
				var v float64
				for m := 0; m <= c; m++ {
					v += w.l[r*n+m] * w.l[c*n+m]
				}
				if want := g[set[r]*n+set[c]]; math.Abs(v-want) > 1e-12 {
					t.Errorf("drop position %d: (L L^T)[%d][%d] = %.15g, G = %.15g", p, r, c, v, want)
				}
			}
			if w.l[r*n+r] <= 0 {
				t.Errorf("drop position %d: L[%d][%d] = %g, want > 0", p, r, r, w.l[r*n+r])
			}
		}
	}
}

// TestGram checks the four-column kernel against plain dot products at sizes
// around its block of four.
func TestGram(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 0))
	for _, n := range []int{1, 3, 4, 5, 8, 11} {
		for _, d := range []int{1, 7, 128} {
			y := make([]float64, n*d)
			for i := range y {
				y[i] = rng.NormFloat64()
			}
			g := make([]float64, n*n)
			gram(g, y, n, d)
			for r := 0; r < n; r++ {
				for c := 0; c < n; c++ {
					var want float64
					for k := 0; k < d; k++ {
						want += y[r*d+k] * y[c*d+k]
					}
					if math.Abs(g[r*n+c]-want) > 1e-12*float64(d) {
						t.Errorf("n=%d d=%d: G[%d][%d] = %g, want %g", n, d, r, c, g[r*n+c], want)
					}
				}
			}
		}
	}
}
