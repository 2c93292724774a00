package llc

import (
	"fmt"
	"math"
)

// workspace holds everything one goroutine needs to code one neighbourhood, so
// that coding a batch allocates nothing per neighbourhood. Buffers are sized for
// the largest K and D seen and reused.
type workspace struct {
	y   []float64 // k x d: neighbour minus query, float64
	g   []float64 // k x k: the Gram G of Params, stride k
	l   []float64 // k x k: Cholesky factor of G restricted to the support, stride k
	h   []float64 // k: G a, or the solve's intermediate
	z   []float64 // k: G_SS^-1 1 on the support
	set []int     // support, in order of entry; row i of l belongs to set[i]
	in  []bool    // in[j]: j is in the support
}

func (w *workspace) reserve(k, d int) {
	if cap(w.y) < k*d {
		w.y = make([]float64, k*d)
	}
	if cap(w.g) < k*k {
		w.g = make([]float64, k*k)
		w.l = make([]float64, k*k)
	}
	if cap(w.h) < k {
		w.h = make([]float64, k)
		w.z = make([]float64, k)
		w.set = make([]int, 0, k)
		w.in = make([]bool, k)
	}
}

// code writes the weights of one neighbourhood, query x and its n valid
// neighbours nb (row-major n x d) at distances dist, to a[:n]. It returns a
// data error; the caller adds which neighbourhood it was.
func (w *workspace) code(a []float64, x, nb, dist []float32, n, d int, p *Params) error {
	w.reserve(n, d)
	y, g := w.y[:n*d], w.g[:n*n]
	for j := 0; j < n; j++ {
		yj, bj := y[j*d:(j+1)*d], nb[j*d:(j+1)*d]
		for i, v := range x[:d] {
			// float32 differences are exact in float64, so a query that equals
			// a neighbour gives a zero row rather than rounding noise.
			yj[i] = float64(bj[i]) - float64(v)
		}
	}
	gram(g, y, n, d)

	var trace float64
	for j := 0; j < n; j++ {
		gjj := g[j*n+j]
		// All of row j is finite when its diagonal is (|G_ij| <= sqrt(G_ii G_jj)),
		// and squared float32 differences cannot overflow float64.
		if math.IsNaN(gjj) || math.IsInf(gjj, 0) {
			return fmt.Errorf("neighbour %d: non-finite coordinates in it or in the query", j)
		}
		if p.Lambda > 0 {
			dj := float64(dist[j])
			if math.IsNaN(dj) {
				return fmt.Errorf("neighbour %d: distance is NaN", j)
			}
			// lambda d_j^2 = lambda exp(2 dist_j / sigma), METHOD.md step 2.
			loc := p.Lambda * math.Exp(2*dj/p.Sigma)
			if math.IsInf(loc, 0) {
				return fmt.Errorf("neighbour %d: locality term Lambda*exp(2*%g/Sigma) overflows float64; raise Sigma", j, dj)
			}
			gjj += loc
			g[j*n+j] = gjj
		}
		trace += gjj
	}
	if trace == 0 {
		// Every valid neighbour equals the query: every code is exact, and the
		// ridge's least-norm choice is the uniform one.
		for j := range a[:n] {
			a[j] = 1 / float64(n)
		}
		return nil
	}
	ridge := p.Ridge * trace
	var scale float64
	for j := 0; j < n; j++ {
		g[j*n+j] += ridge
		scale = math.Max(scale, g[j*n+j])
	}
	if !w.solve(a[:n], n, p.Tol*scale, 1e-3*ridge, p.MaxIter) {
		return fmt.Errorf("QP did not converge in %d iterations", p.MaxIter)
	}
	return nil
}

// gram writes G = Y Y^T (n x n, stride n) for the n x d row-major Y. Four
// columns at a time, so each load of row i feeds four products.
func gram(g, y []float64, n, d int) {
	for i := 0; i < n; i++ {
		yi := y[i*d : (i+1)*d]
		j := i
		for ; j+4 <= n; j += 4 {
			y0 := y[j*d : (j+1)*d]
			y1 := y[(j+1)*d : (j+2)*d]
			y2 := y[(j+2)*d : (j+3)*d]
			y3 := y[(j+3)*d : (j+4)*d]
			y0, y1, y2, y3 = y0[:len(yi)], y1[:len(yi)], y2[:len(yi)], y3[:len(yi)]
			var s0, s1, s2, s3 float64
			for k, v := range yi {
				s0 += v * y0[k]
				s1 += v * y1[k]
				s2 += v * y2[k]
				s3 += v * y3[k]
			}
			g[i*n+j], g[i*n+j+1], g[i*n+j+2], g[i*n+j+3] = s0, s1, s2, s3
		}
		for ; j < n; j++ {
			yj := y[j*d : (j+1)*d]
			yj = yj[:len(yi)]
			var s float64
			for k, v := range yi {
				s += v * yj[k]
			}
			g[i*n+j] = s
		}
		for j := i + 1; j < n; j++ {
			g[j*n+i] = g[i*n+j]
		}
	}
}

// solve minimises a^T G a over the simplex, G = w.g (n x n, symmetric positive
// definite), by a primal active-set method, writing the minimiser to a. tol is
// the absolute KKT tolerance on the multipliers (G a)_j - nu, floor the least
// pivot the Cholesky factor may take. It reports false when maxIter iterations
// were not enough.
//
// The method keeps a feasible a whose support S carries the minimiser of the
// equality-constrained problem on S, c = G_SS^-1 1 / (1^T G_SS^-1 1) with
// multiplier nu = 1 / (1^T G_SS^-1 1). When c is positive it moves there and
// adds the most violated neighbour off S (the least (G a)_j - nu); otherwise
// it steps towards c until the first weight reaches 0 and drops that one. The
// Cholesky factor of G_SS is updated in O(|S|^2) per change rather than
// refactored, so the solve costs about |S|^3 flops plus K |S| per KKT check;
// at K = 100 that is well under the K^2 d / 2 of forming G.
// For strictly convex G each add lowers the objective, so no support repeats
// and the method ends exactly, up to rounding, in a finite number of steps.
func (w *workspace) solve(a []float64, n int, tol, floor float64, maxIter int) bool {
	g, l, h, z := w.g[:n*n], w.l[:n*n], w.h[:n], w.z[:n]
	in := w.in[:n]
	for j := range a {
		a[j] = 0
		in[j] = false
	}

	// Start at the best vertex.
	j0 := 0
	for j := 1; j < n; j++ {
		if g[j*n+j] < g[j0*n+j0] {
			j0 = j
		}
	}
	set := append(w.set[:0], j0)
	in[j0] = true
	a[j0] = 1
	l[0] = math.Sqrt(g[j0*n+j0])
	added := -1 // the neighbour added last, while its weight is still 0

	for it := 0; it < maxIter; it++ {
		s := len(set)
		// z = G_SS^-1 1 by the two triangular solves, h as the intermediate.
		for i := 0; i < s; i++ {
			v := 1.0
			li := l[i*n : i*n+i]
			for k, lik := range li {
				v -= lik * h[k]
			}
			h[i] = v / l[i*n+i]
		}
		for i := s - 1; i >= 0; i-- {
			v := h[i]
			for k := i + 1; k < s; k++ {
				v -= l[k*n+i] * z[k]
			}
			z[i] = v / l[i*n+i]
		}
		var sum float64
		for _, v := range z[:s] {
			sum += v
		}
		// z[i]/sum is c_i; sum > 0 as G_SS is positive definite.

		if added >= 0 && z[s-1] <= 0 {
			// Adding the most violated neighbour always gives it positive
			// weight in exact arithmetic; here rounding says otherwise, so the
			// violation was at rounding level and a is optimal.
			in[added] = false
			w.set = set[:s-1]
			return normalise(a)
		}

		// Step towards c, stopping where the first weight reaches 0.
		alpha, block := 1.0, -1
		for i, j := range set {
			if ci := z[i] / sum; ci <= 0 {
				if t := a[j] / (a[j] - ci); t < alpha {
					alpha, block = t, i
				}
			}
		}
		if block >= 0 {
			for i, j := range set {
				a[j] += alpha * (z[i]/sum - a[j])
				if a[j] < 0 {
					a[j] = 0 // rounding; it is dropped on a later step
				}
			}
			jb := set[block]
			a[jb] = 0
			in[jb] = false
			set = w.drop(set, block, n)
			added = -1
			continue
		}
		for i, j := range set {
			a[j] = z[i] / sum
		}
		added = -1
		nu := 1 / sum

		// KKT: (G a)_j >= nu for every j off the support. h = G a as a sum of
		// rows of the symmetric G: contiguous axpys, with no gather and no
		// chain of dependent adds.
		for j := range h {
			h[j] = 0
		}
		for _, i := range set {
			ai, gi := a[i], g[i*n:(i+1)*n]
			gi = gi[:len(h)]
			for j, v := range gi {
				h[j] += ai * v
			}
		}
		worst, jw := -tol, -1
		for j, v := range h {
			if !in[j] && v-nu < worst {
				worst, jw = v-nu, j
			}
		}
		if jw < 0 {
			w.set = set
			return normalise(a)
		}

		// Append jw to the factor: row s of l solves L w = G_S,jw.
		lr := l[s*n : s*n+s+1]
		gj := g[jw*n : (jw+1)*n]
		var ww float64
		for i, j := range set {
			v := gj[j]
			li := l[i*n : i*n+i]
			for k, lik := range li {
				v -= lik * lr[k]
			}
			v /= l[i*n+i]
			lr[i] = v
			ww += v * v
		}
		pivot := gj[jw] - ww
		if !(pivot > floor) {
			// The ridge keeps the exact pivot >= Ridge*trace; below a
			// thousandth of that is cancellation, not information.
			pivot = floor
		}
		lr[s] = math.Sqrt(pivot)
		set = append(set, jw)
		in[jw] = true
		added = jw
	}
	w.set = set
	return false
}

// drop removes position p from the support and restores the Cholesky factor:
// without row p the factor is lower Hessenberg from column p on, and Givens
// rotations of column pairs (which leave L L^T unchanged) make it triangular.
func (w *workspace) drop(set []int, p, n int) []int {
	l := w.l
	s := len(set)
	copy(set[p:], set[p+1:])
	set = set[:s-1]
	for i := p; i < s-1; i++ {
		copy(l[i*n:i*n+i+2], l[(i+1)*n:(i+1)*n+i+2])
	}
	for k := p; k < s-1; k++ {
		x, y := l[k*n+k], l[k*n+k+1]
		r := math.Sqrt(x*x + y*y)
		c, sn := x/r, y/r
		l[k*n+k], l[k*n+k+1] = r, 0
		for i := k + 1; i < s-1; i++ {
			u, v := l[i*n+k], l[i*n+k+1]
			l[i*n+k] = c*u + sn*v
			l[i*n+k+1] = c*v - sn*u
		}
	}
	return set
}

// normalise rescales the non-negative a to sum to 1, removing the rounding
// the solve left, and reports true.
func normalise(a []float64) bool {
	var sum float64
	for _, v := range a {
		sum += v
	}
	for j := range a {
		a[j] /= sum
	}
	return true
}
