package llctest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/relabel/relabel/transforms/llc"
)

// Run checks c against the contract of llc.Coder and the problem defined by
// llc.Params: closed-form neighbourhoods; the KKT conditions to 1e-6 on random
// and degenerate ones (K > d, duplicate neighbours, a query equal to a
// neighbour, zero vectors, the locality adaptor, padding); agreement within
// 1e-6 with brute-force enumeration of supports for K <= 6; invariance to
// scale, translation and neighbour order; padding that is never read;
// determinism; and errors, not panics, for bad data.
func Run(t *testing.T, c llc.Coder) {
	t.Run("Known", func(t *testing.T) { testKnown(t, c) })
	t.Run("Random", func(t *testing.T) { testRandom(t, c) })
	t.Run("Degenerate", func(t *testing.T) { testDegenerate(t, c) })
	t.Run("Padding", func(t *testing.T) { testPadding(t, c) })
	t.Run("Invariance", func(t *testing.T) { testInvariance(t, c) })
	t.Run("Deterministic", func(t *testing.T) { testDeterministic(t, c) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, c) })
}

// hood is one neighbourhood: a query and its valid neighbours.
type hood struct {
	x  []float32
	nb [][]float32
}

// batchOf packs hoods into a Batch of K neighbours in d dimensions. Distances
// are squared L2, as knn returns them. Padding slots hold NaN coordinates and
// +Inf distances, so a Coder that reads them fails.
func batchOf(k, d int, hoods []hood) llc.Batch {
	b := llc.Batch{B: len(hoods), K: k, D: d,
		X:    make([]float32, len(hoods)*d),
		N:    make([]float32, len(hoods)*k*d),
		Dist: make([]float32, len(hoods)*k),
	}
	nan := float32(math.NaN())
	for i, h := range hoods {
		copy(b.X[i*d:], h.x)
		if len(h.nb) < k && b.Len == nil {
			b.Len = make([]int32, len(hoods))
			for i2, h2 := range hoods {
				b.Len[i2] = int32(len(h2.nb))
			}
		}
		for j := 0; j < k; j++ {
			row := b.N[(i*k+j)*d : (i*k+j+1)*d]
			if j >= len(h.nb) {
				for c := range row {
					row[c] = nan
				}
				b.Dist[i*k+j] = float32(math.Inf(1))
				continue
			}
			copy(row, h.nb[j])
			var s float64
			for c := range row {
				v := float64(row[c]) - float64(h.x[c])
				s += v * v
			}
			b.Dist[i*k+j] = float32(s)
		}
	}
	return b
}

// code runs c on b into a NaN-filled dst, so that unwritten entries show.
func code(t *testing.T, c llc.Coder, b llc.Batch, p llc.Params) []float64 {
	t.Helper()
	dst := make([]float64, b.B*b.K)
	for i := range dst {
		dst[i] = math.NaN()
	}
	if err := c.Code(dst, b, p); err != nil {
		t.Fatalf("Code: %v", err)
	}
	return dst
}

// randomHoods draws count neighbourhoods of n neighbours in d dimensions around
// random centres, the query nearer the centre than its neighbours, as kNN
// neighbourhoods of embeddings tend to be.
func randomHoods(rng *rand.Rand, count, n, d int) []hood {
	hs := make([]hood, count)
	sd := 1 / math.Sqrt(float64(d))
	for i := range hs {
		centre := make([]float64, d)
		for c := range centre {
			centre[c] = rng.NormFloat64()
		}
		point := func(s float64) []float32 {
			v := make([]float32, d)
			for c := range v {
				v[c] = float32(centre[c] + s*rng.NormFloat64())
			}
			return v
		}
		hs[i].x = point(0.5 * sd)
		hs[i].nb = make([][]float32, n)
		for j := range hs[i].nb {
			hs[i].nb[j] = point(sd)
		}
	}
	return hs
}

// Check reports the first way dst fails to hold the optimal codes of b under
// p: a padding weight that is not exactly 0, or a row that violates the KKT
// conditions (feasibility, a >= 0, sum 1, stationarity on the support and
// dual feasibility off it, each to 1e-6 relative to max|G|; uniform weights
// where G is zero). It needs no reference solution, so it serves any K and
// real data; it returns nil when every row passes.
func Check(dst []float64, b llc.Batch, p llc.Params) error {
	for i := 0; i < b.B; i++ {
		if err := checkRow(dst[i*b.K:(i+1)*b.K], b, p, i); err != nil {
			return fmt.Errorf("neighbourhood %d: %w", i, err)
		}
	}
	return nil
}

// checkRow checks row i of dst; see Check.
func checkRow(row []float64, b llc.Batch, p llc.Params, i int) error {
	g, n, zero := gram(b, p, i)
	for j := n; j < b.K; j++ {
		if row[j] != 0 {
			return fmt.Errorf("padding weight a[%d] = %v, want 0", j, row[j])
		}
	}
	a := row[:n]
	if zero {
		for j, v := range a {
			if math.Abs(v-1/float64(n)) > kktTol {
				return fmt.Errorf("zero Gram: a[%d] = %.9g, want uniform %.9g", j, v, 1/float64(n))
			}
		}
		return nil
	}
	if err := kkt(g, a, n); err != nil {
		return fmt.Errorf("KKT (n=%d): %w", n, err)
	}
	return nil
}

// checkRows checks every row of dst for b with checkRow and, when brute is
// set, against the brute-force minimiser too.
func checkRows(t *testing.T, name string, dst []float64, b llc.Batch, p llc.Params, brute bool) {
	t.Helper()
	for i := 0; i < b.B; i++ {
		row := dst[i*b.K : (i+1)*b.K]
		if err := checkRow(row, b, p, i); err != nil {
			t.Errorf("%s: neighbourhood %d: %v", name, i, err)
			continue
		}
		if g, n, zero := gram(b, p, i); brute && !zero {
			want := bruteFor(g, n)
			if d, j := maxDiff(row[:n], want); d > kktTol {
				t.Errorf("%s: neighbourhood %d: a[%d] = %.12g, brute force %.12g (|diff| %.3g > %g)", name, i, j, row[j], want[j], d, kktTol)
			}
		}
	}
}

func bruteFor(g []float64, n int) []float64 {
	if n > 10 {
		panic("llctest: brute force beyond 10 neighbours")
	}
	return brute(g, n)
}

// maxDiff returns the largest |a_j - b_j| and where it is.
func maxDiff(a, b []float64) (float64, int) {
	d, at := 0.0, 0
	for j := range a {
		if e := math.Abs(a[j] - b[j]); e > d || math.IsNaN(e) {
			d, at = e, j
			if math.IsNaN(e) {
				return math.Inf(1), j
			}
		}
	}
	return d, at
}

func testKnown(t *testing.T, c llc.Coder) {
	v := func(xs ...float32) []float32 { return xs }
	// Flat cases (the code is not unique without the ridge) use Ridge 1e-8: its
	// least-norm choice is then within ~1e-8 of the ridge -> 0 limit listed.
	exact := withParams(func(p *llc.Params) { p.Ridge = 1e-8 })
	for _, tc := range []struct {
		name string
		h    hood
		p    llc.Params
		want []float64
	}{
		{"K=1", hood{v(3), [][]float32{v(-2)}}, llc.DefaultParams(), []float64{1}},
		{"segment", hood{v(0), [][]float32{v(-1), v(2)}}, llc.DefaultParams(), []float64{2. / 3, 1. / 3}},
		{"barycentric", hood{v(0.2, 0.3), [][]float32{v(0, 0), v(1, 0), v(0, 1)}}, llc.DefaultParams(), []float64{0.5, 0.2, 0.3}},
		{"projection onto an edge", hood{v(1, 1), [][]float32{v(1, 0), v(0, 1), v(0, 0)}}, llc.DefaultParams(), []float64{0.5, 0.5, 0}},
		{"nearest vertex", hood{v(-1, -1), [][]float32{v(1, 0), v(0, 1), v(0, 0)}}, llc.DefaultParams(), []float64{0, 0, 1}},
		{"query equals a neighbour", hood{v(1, 2, 3), [][]float32{v(0, 0, 0), v(1, 2, 3), v(3, 2, 1)}}, llc.DefaultParams(), []float64{0, 1, 0}},
		{"query equals two duplicates", hood{v(1, 2), [][]float32{v(1, 2), v(5, 5), v(1, 2)}}, exact, []float64{0.5, 0, 0.5}},
		{"identical neighbours", hood{v(0, 0), [][]float32{v(1, 1), v(1, 1), v(1, 1), v(1, 1)}}, exact, []float64{0.25, 0.25, 0.25, 0.25}},
		{"all zero", hood{v(0, 0), [][]float32{v(0, 0), v(0, 0), v(0, 0)}}, llc.DefaultParams(), []float64{1. / 3, 1. / 3, 1. / 3}},
		{"duplicates share", hood{v(0), [][]float32{v(1), v(1), v(-1)}}, exact, []float64{0.25, 0.25, 0.5}},
		// Locality with equal distances adds the same to every diagonal entry
		// and keeps the symmetric answer; with unequal ones it favours the
		// nearer neighbour beyond what reconstruction alone would.
		{"locality, equal distances", hood{v(0), [][]float32{v(-1), v(1)}}, withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 1, 1 }), []float64{0.5, 0.5}},
		{"locality prefers the nearer", hood{v(0), [][]float32{v(-1), v(2)}}, withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 1, 4 }), segmentLocality(1, 2, 1, 4)},
	} {
		b := batchOf(len(tc.h.nb), len(tc.h.x), []hood{tc.h})
		got := code(t, c, b, tc.p)
		if d, j := maxDiff(got, tc.want); d > kktTol {
			t.Errorf("%s: got %.9g, want %.9g (a[%d] off by %.3g)", tc.name, got, tc.want, j, d)
		}
	}
}

// segmentLocality is the closed form for query 0 between neighbours -u and v
// (u, v > 0) in one dimension with the locality adaptor and no ridge: with a
// the weight of -u, minimise (v - a(u+v))^2 + lambda (a^2 e^{2u^2/s} +
// (1-a)^2 e^{2v^2/s}) (distances are squared), a quadratic in a.
func segmentLocality(u, v, lambda, sigma float64) []float64 {
	du := lambda * math.Exp(2*u*u/sigma)
	dv := lambda * math.Exp(2*v*v/sigma)
	// d/da: -2(u+v)(v - a(u+v)) + 2 du a - 2 dv (1-a) = 0.
	a := ((u+v)*v + dv) / ((u+v)*(u+v) + du + dv)
	return []float64{a, 1 - a}
}

func testRandom(t *testing.T, c llc.Coder) {
	for _, tc := range []struct {
		name        string
		k, d, count int
		p           llc.Params
	}{
		{"K=2 d=3", 2, 3, 40, llc.DefaultParams()},
		{"K=3 d=8", 3, 8, 40, llc.DefaultParams()},
		{"K=5 d=16", 5, 16, 40, llc.DefaultParams()},
		{"K=6 d=33", 6, 33, 40, llc.DefaultParams()},
		{"K=6 d=128", 6, 128, 20, llc.DefaultParams()},
		{"K=6 d=16 locality", 6, 16, 40, withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 0.1, 2 })},
		{"K=6 d=16 strong locality", 6, 16, 40, withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 10, 1 })},
		{"K=10 d=128", 10, 128, 40, llc.DefaultParams()},
		{"K=10 d=128 locality", 10, 128, 40, withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 0.1, 2 })},
		{"K=33 d=31", 33, 31, 20, llc.DefaultParams()},
		{"K=100 d=128", 100, 128, 8, llc.DefaultParams()},
		{"K=100 d=16", 100, 16, 8, llc.DefaultParams()},
		{"K=100 d=128 locality", 100, 128, 8, withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 0.05, 2 })},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(tc.k*1000+tc.d)))
		b := batchOf(tc.k, tc.d, randomHoods(rng, tc.count, tc.k, tc.d))
		dst := code(t, c, b, tc.p)
		checkRows(t, tc.name, dst, b, tc.p, tc.k <= 6)
	}
}

func testDegenerate(t *testing.T, c llc.Coder) {
	rng := rand.New(rand.NewPCG(2, 0))
	gauss := func(d int, s float64) []float32 {
		v := make([]float32, d)
		for i := range v {
			v[i] = float32(s * rng.NormFloat64())
		}
		return v
	}
	dup := func(h hood, from, to int) hood { h.nb[to] = append([]float32(nil), h.nb[from]...); return h }
	one := func(n, d int) hood { return randomHoods(rng, 1, n, d)[0] }
	for _, tc := range []struct {
		name string
		h    hood
		// flat: the minimiser is unique only through the ridge, so the
		// brute-force comparison needs a ridge large enough (1e-8) to make it
		// well conditioned; KKT is checked at the default ridge too.
		flat bool
	}{
		{"K>d: d=1", one(6, 1), true},
		{"K>d: d=2", one(6, 2), true},
		{"K>d: d=3", one(5, 3), true},
		{"duplicate pair", dup(one(6, 4), 0, 3), true},
		{"two duplicate pairs", dup(dup(one(6, 8), 1, 2), 4, 5), true},
		{"query equals a neighbour", func() hood { h := one(6, 8); h.nb[4] = append([]float32(nil), h.x...); return h }(), false},
		{"query equals duplicated neighbour", func() hood {
			h := one(5, 8)
			h.nb[1] = append([]float32(nil), h.x...)
			h.nb[3] = append([]float32(nil), h.x...)
			return h
		}(), true},
		{"zero query", func() hood { h := one(6, 8); h.x = make([]float32, 8); return h }(), false},
		{"zero neighbour", func() hood { h := one(6, 8); h.nb[2] = make([]float32, 8); return h }(), false},
		{"zero query and neighbour", func() hood { h := one(6, 8); h.x = make([]float32, 8); h.nb[0] = make([]float32, 8); return h }(), false},
		{"all zero", hood{make([]float32, 4), [][]float32{make([]float32, 4), make([]float32, 4), make([]float32, 4)}}, true},
		{"collinear", func() hood {
			dir := gauss(5, 1)
			h := hood{x: make([]float32, 5)}
			for j := 0; j < 6; j++ {
				s := float32(j) - 2.5
				p := make([]float32, 5)
				for c := range p {
					p[c] = s * dir[c]
				}
				h.nb = append(h.nb, p)
			}
			return h
		}(), true},
		{"far query", func() hood {
			h := one(5, 8)
			for c := range h.x {
				h.x[c] += 1000
			}
			return h
		}(), false},
		{"tiny scale", func() hood {
			h := one(5, 8)
			for _, p := range append(h.nb, h.x) {
				for c := range p {
					p[c] *= 1e-20
				}
			}
			return h
		}(), false},
	} {
		b := batchOf(len(tc.h.nb), len(tc.h.x), []hood{tc.h})
		// Sigma at the largest distance keeps the locality term within e^2
		// of Lambda whatever the case's scale.
		var sigma float64
		for _, v := range b.Dist {
			sigma = math.Max(sigma, float64(v))
		}
		if sigma == 0 {
			sigma = 1
		}
		for _, p := range []struct {
			name  string
			p     llc.Params
			brute bool
		}{
			{"default ridge", llc.DefaultParams(), !tc.flat},
			{"ridge 1e-8", withParams(func(p *llc.Params) { p.Ridge = 1e-8 }), true},
			{"locality", withParams(func(p *llc.Params) { p.Lambda, p.Sigma, p.Ridge = 0.1, sigma, 1e-8 }), true},
		} {
			name := tc.name + ", " + p.name
			checkRows(t, name, code(t, c, b, p.p), b, p.p, p.brute)
		}
	}
	// Degenerate at scale: K = 100 in 4 dimensions with a block of duplicates.
	h := one(100, 4)
	for j := 50; j < 60; j++ {
		h.nb[j] = append([]float32(nil), h.nb[7]...)
	}
	h.nb[80] = append([]float32(nil), h.x...)
	b := batchOf(100, 4, []hood{h, one(100, 4)})
	checkRows(t, "K=100 d=4 duplicates", code(t, c, b, llc.DefaultParams()), b, llc.DefaultParams(), false)
}

func testPadding(t *testing.T, c llc.Coder) {
	rng := rand.New(rand.NewPCG(3, 0))
	const k, d = 8, 16
	hs := randomHoods(rng, 24, k, d)
	for i := range hs {
		hs[i].nb = hs[i].nb[:1+i%k] // Len 1..K
	}
	for _, p := range []llc.Params{llc.DefaultParams(), withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 0.1, 2 })} {
		b := batchOf(k, d, hs)
		if b.Len == nil {
			t.Fatal("llctest: padded batch without Len")
		}
		dst := code(t, c, b, p)
		checkRows(t, "padding", dst, b, p, false)
		// Each padded row equals the same neighbourhood coded unpadded.
		for i, h := range hs {
			n := len(h.nb)
			want := code(t, c, batchOf(n, d, []hood{h}), p)
			if diff, j := maxDiff(dst[i*k:i*k+n], want); diff > 1e-12 {
				t.Errorf("padding (Lambda %g): neighbourhood %d (Len %d): a[%d] = %.15g padded, %.15g unpadded", p.Lambda, i, n, j, dst[i*k+j], want[j])
			}
		}
	}
}

func testInvariance(t *testing.T, c llc.Coder) {
	rng := rand.New(rand.NewPCG(4, 0))
	const k, d = 10, 12
	hs := randomHoods(rng, 16, k, d)
	// Coordinates on a 1/64 grid in [-8, 8], so that scaling by powers of two
	// and translating by 1024 are exact in float32.
	for _, h := range hs {
		for _, p := range append(h.nb, h.x) {
			for i := range p {
				p[i] = float32(math.Round(float64(p[i])*64) / 64)
			}
		}
	}
	base := code(t, c, batchOf(k, d, hs), llc.DefaultParams())
	transform := func(f func(float32) float32) []hood {
		out := make([]hood, len(hs))
		for i, h := range hs {
			m := func(p []float32) []float32 {
				q := make([]float32, len(p))
				for j, v := range p {
					q[j] = f(v)
				}
				return q
			}
			out[i].x = m(h.x)
			for _, p := range h.nb {
				out[i].nb = append(out[i].nb, m(p))
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    func(float32) float32
	}{
		{"scale 2^-10", func(v float32) float32 { return v / 1024 }},
		{"scale 2^10", func(v float32) float32 { return v * 1024 }},
		{"translate 1024", func(v float32) float32 { return v + 1024 }},
	} {
		got := code(t, c, batchOf(k, d, transform(tc.f)), llc.DefaultParams())
		if diff, j := maxDiff(got, base); diff > 1e-9 {
			t.Errorf("%s: a[%d] = %.15g, untransformed %.15g", tc.name, j, got[j], base[j])
		}
	}
	// Reversing the neighbours reverses the weights.
	rev := make([]hood, len(hs))
	for i, h := range hs {
		rev[i].x = h.x
		for j := len(h.nb) - 1; j >= 0; j-- {
			rev[i].nb = append(rev[i].nb, h.nb[j])
		}
	}
	got := code(t, c, batchOf(k, d, rev), llc.DefaultParams())
	for i := range hs {
		for j := 0; j < k; j++ {
			if g, w := got[i*k+k-1-j], base[i*k+j]; math.Abs(g-w) > 1e-9 {
				t.Errorf("reversed neighbours: neighbourhood %d neighbour %d: %.15g, in order %.15g", i, j, g, w)
			}
		}
	}
}

func testDeterministic(t *testing.T, c llc.Coder) {
	rng := rand.New(rand.NewPCG(5, 0))
	for _, k := range []int{10, 40} {
		const d = 32
		hs := randomHoods(rng, 100, k, d)
		b := batchOf(k, d, hs)
		first := code(t, c, b, llc.DefaultParams())
		for rep := 0; rep < 3; rep++ {
			again := code(t, c, b, llc.DefaultParams())
			for i := range first {
				if math.Float64bits(again[i]) != math.Float64bits(first[i]) {
					t.Fatalf("K=%d repeat %d: dst[%d] = %v, first call %v", k, rep, i, again[i], first[i])
				}
			}
		}
		// A neighbourhood's code does not depend on the rest of its batch.
		for _, i := range []int{0, 37, 99} {
			alone := code(t, c, batchOf(k, d, hs[i:i+1]), llc.DefaultParams())
			if diff, j := maxDiff(alone, first[i*k:(i+1)*k]); diff > 1e-12 {
				t.Errorf("K=%d neighbourhood %d: coded alone a[%d] = %.15g, in the batch %.15g", k, i, j, alone[j], first[i*k+j])
			}
		}
	}
}

func testErrors(t *testing.T, c llc.Coder) {
	rng := rand.New(rand.NewPCG(6, 0))
	const k, d = 4, 3
	good := func() llc.Batch { return batchOf(k, d, randomHoods(rng, 3, k, d)) }
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name string
		b    func() llc.Batch
		p    llc.Params
	}{
		{"Len 0", func() llc.Batch { b := good(); b.Len = []int32{4, 0, 4}; return b }, llc.DefaultParams()},
		{"Len > K", func() llc.Batch { b := good(); b.Len = []int32{4, 5, 4}; return b }, llc.DefaultParams()},
		{"negative Len", func() llc.Batch { b := good(); b.Len = []int32{4, 4, -1}; return b }, llc.DefaultParams()},
		{"NaN query", func() llc.Batch { b := good(); b.X[d+1] = nan; return b }, llc.DefaultParams()},
		{"Inf neighbour", func() llc.Batch { b := good(); b.N[(2*k+3)*d] = inf; return b }, llc.DefaultParams()},
		{"NaN distance with locality", func() llc.Batch { b := good(); b.Dist[5] = nan; return b }, withParams(func(p *llc.Params) { p.Lambda = 1 })},
		{"locality overflows", func() llc.Batch { b := good(); b.Dist[2] = 1e4; return b }, withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 1, 1 })},
		{"negative Lambda", good, withParams(func(p *llc.Params) { p.Lambda = -1 })},
		{"negative Sigma", good, withParams(func(p *llc.Params) { p.Sigma = -1 })},
		{"NaN Lambda", good, withParams(func(p *llc.Params) { p.Lambda = math.NaN() })},
		{"negative Ridge", good, withParams(func(p *llc.Params) { p.Ridge = -1 })},
	} {
		b := tc.b()
		dst := make([]float64, b.B*b.K)
		if err := c.Code(dst, b, tc.p); err == nil {
			t.Errorf("%s: Code returned no error", tc.name)
		}
	}
}

// withParams is llc.DefaultParams() changed by edit: a case states what it
// departs from the defaults in.
func withParams(edit func(*llc.Params)) llc.Params {
	p := llc.DefaultParams()
	edit(&p)
	return p
}
