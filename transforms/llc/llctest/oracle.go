package llctest

import (
	"fmt"
	"math"

	"github.com/relabel/relabel/transforms/llc"
)

// gram returns the n x n matrix G of llc.Params for neighbourhood i of b (n its
// valid neighbours), straight from the definition, and whether its trace was
// zero (every code is then optimal and the answer is uniform).
func gram(b llc.Batch, p llc.Params, i int) (g []float64, n int, zero bool) {
	n = b.K
	if b.Len != nil {
		n = int(b.Len[i])
	}
	x := b.X[i*b.D : (i+1)*b.D]
	y := make([][]float64, n)
	for j := range y {
		y[j] = make([]float64, b.D)
		for k := range y[j] {
			y[j][k] = float64(b.N[(i*b.K+j)*b.D+k]) - float64(x[k])
		}
	}
	g = make([]float64, n*n)
	var trace float64
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			var s float64
			for k := range y[r] {
				s += y[r][k] * y[c][k]
			}
			g[r*n+c] = s
		}
		if p.Lambda > 0 {
			d := math.Exp(float64(b.Dist[i*b.K+r]) / p.Sigma)
			g[r*n+r] += p.Lambda * d * d
		}
		trace += g[r*n+r]
	}
	for r := 0; r < n; r++ {
		g[r*n+r] += p.Ridge * trace
	}
	return g, n, trace == 0
}

// brute solves min a^T G a on the simplex by enumerating every support S,
// solving the equality-constrained problem G_SS z = 1, a_S = z / 1^T z on it,
// and keeping the feasible candidate of least objective. With the ridge G is
// positive definite, the minimiser is unique and lies in the relative interior
// of exactly one face, whose candidate is that minimiser. 2^n solves: n <= 10.
func brute(g []float64, n int) []float64 {
	best, bestF := make([]float64, n), math.Inf(1)
	idx := make([]int, 0, n)
	for mask := 1; mask < 1<<n; mask++ {
		idx = idx[:0]
		for j := 0; j < n; j++ {
			if mask&(1<<j) != 0 {
				idx = append(idx, j)
			}
		}
		s := len(idx)
		m := make([]float64, s*(s+1)) // [G_SS | 1]
		for r, jr := range idx {
			for c, jc := range idx {
				m[r*(s+1)+c] = g[jr*n+jc]
			}
			m[r*(s+1)+s] = 1
		}
		z, ok := gauss(m, s)
		if !ok {
			continue
		}
		var sum float64
		for _, v := range z {
			sum += v
		}
		a := make([]float64, n)
		feasible := true
		for r, j := range idx {
			a[j] = z[r] / sum
			if !(a[j] >= 0) {
				feasible = false
			}
		}
		if !feasible {
			continue
		}
		if f := quad(g, a, n); f < bestF {
			best, bestF = a, f
		}
	}
	return best
}

// gauss solves the s x s system in the augmented s x (s+1) matrix m by
// Gaussian elimination with partial pivoting.
func gauss(m []float64, s int) ([]float64, bool) {
	w := s + 1
	for c := 0; c < s; c++ {
		p := c
		for r := c + 1; r < s; r++ {
			if math.Abs(m[r*w+c]) > math.Abs(m[p*w+c]) {
				p = r
			}
		}
		if m[p*w+c] == 0 {
			return nil, false
		}
		for k := 0; k < w; k++ {
			m[c*w+k], m[p*w+k] = m[p*w+k], m[c*w+k]
		}
		for r := c + 1; r < s; r++ {
			f := m[r*w+c] / m[c*w+c]
			for k := c; k < w; k++ {
				m[r*w+k] -= f * m[c*w+k]
			}
		}
	}
	z := make([]float64, s)
	for r := s - 1; r >= 0; r-- {
		v := m[r*w+s]
		for k := r + 1; k < s; k++ {
			v -= m[r*w+k] * z[k]
		}
		z[r] = v / m[r*w+r]
	}
	return z, true
}

// quad returns a^T G a.
func quad(g, a []float64, n int) float64 {
	var f float64
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			f += a[r] * g[r*n+c] * a[c]
		}
	}
	return f
}

// kktTol is the tolerance of every optimality check, relative to the scale
// the quantity lives on.
const kktTol = 1e-6

// kkt checks that a (length n) satisfies the KKT conditions of min a^T G a on
// the simplex: a >= 0, 1^T a = 1, and with gradient g = 2 G a and multiplier
// nu = a^T g, g_j = nu on the support (a_j > 1e-9) and g_j >= nu off it, both
// to kktTol times 2 max|G| (the largest a gradient entry can be). It returns
// a description of the first violation, or nil.
func kkt(g []float64, a []float64, n int) error {
	var sum float64
	for j, v := range a {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("a[%d] = %v, want finite and >= 0", j, v)
		}
		sum += v
	}
	if math.Abs(sum-1) > kktTol {
		return fmt.Errorf("sum(a) = %.12g, want 1 within %g", sum, kktTol)
	}
	var scale float64
	for j := 0; j < n; j++ {
		scale = math.Max(scale, 2*math.Abs(g[j*n+j]))
	}
	grad := make([]float64, n)
	var nu float64
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			grad[r] += 2 * g[r*n+c] * a[c]
		}
		nu += a[r] * grad[r]
	}
	tol := kktTol * scale
	for j := 0; j < n; j++ {
		if a[j] > 1e-9 && math.Abs(grad[j]-nu) > tol {
			return fmt.Errorf("support: a[%d] = %.3g but gradient %.12g differs from multiplier %.12g by more than %.3g", j, a[j], grad[j], nu, tol)
		}
		if grad[j] < nu-tol {
			return fmt.Errorf("dual: gradient[%d] = %.12g below multiplier %.12g by more than %.3g (a[%d] = %.3g)", j, grad[j], nu, tol, j, a[j])
		}
	}
	return nil
}
