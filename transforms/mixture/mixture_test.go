package mixture

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// denseState builds a state with explicit rows over all c categories.
func denseState(pi []float64, rho [][]float64) State {
	var s State
	for k := range pi {
		r := s.add(int32(k), pi[k])
		for c, p := range rho[k] {
			r.Cat = append(r.Cat, int32(c))
			r.P = append(r.P, p)
		}
	}
	return s
}

// randomParams draws a pi away from the simplex boundary and diagonal-dominant rows.
func randomParams(rng *rand.Rand, c int) ([]float64, [][]float64) {
	pi := make([]float64, c)
	var z float64
	for k := range pi {
		pi[k] = 0.5 + rng.Float64()
		z += pi[k]
	}
	for k := range pi {
		pi[k] /= z
	}
	rho := make([][]float64, c)
	for k := range rho {
		rho[k] = make([]float64, c)
		var rz float64
		for j := range rho[k] {
			rho[k][j] = 0.3 * rng.Float64()
			if j == k {
				rho[k][j] = 1.5
			}
			rz += rho[k][j]
		}
		for j := range rho[k] {
			rho[k][j] /= rz
		}
	}
	return pi, rho
}

// TestIdentifiability is the paper's claim as a test: with N >= 2C-1 i.i.d.
// labels per set and enough sets, MAP-EM recovers the mixture weights.
func TestIdentifiability(t *testing.T) {
	for _, c := range []int{2, 3, 5, 10} {
		rng := rand.New(rand.NewPCG(1, uint64(c)))
		pi, rho := randomParams(rng, c)
		truth := denseState(pi, rho)
		var s Sampler
		s.Seed(7, uint64(c), 0)
		s.SetMixture([]*State{&truth}, []float64{1})
		var y Counts
		l, n := 4000, 2*c-1
		s.Sample(&y, l, n, c)

		var em EM
		classes := make([]int32, c)
		for k := range classes {
			classes[k] = int32(k)
		}
		em.SetClasses(classes, c, 1, 1)
		em.Observe(&y)
		var start State
		start.Init(nil, c, c, 0) // empty: uniform floor, smoothed-identity rows
		em.InitFrom(&start, 0.2)
		for it := 0; it < 300; it++ {
			em.Step()
		}
		// Tolerance: the sampling error of L=4000 sets (sd of a weight <= 0.008)
		// plus EM's finite iterations; 0.04 is > 4 sd.
		const tol = 0.04
		for k := range pi {
			if d := math.Abs(em.Pi[k] - pi[k]); d > tol {
				t.Errorf("C=%d: pi[%d] = %.4f, want %.4f (|diff| %.4f > %g)", c, k, em.Pi[k], pi[k], d, tol)
			}
		}
	}
}

// TestNotIdentifiableWithOneLabel documents why extra labels are needed: with
// N = 1 the likelihood depends only on the marginal sum_c pi_c rho_c, so two
// different parameter sets with the same marginal fit any data equally well,
// while with N = 3 the same two sets are told apart.
func TestNotIdentifiableWithOneLabel(t *testing.T) {
	a := denseState([]float64{0.5, 0.5}, [][]float64{{0.8, 0.2}, {0.2, 0.8}})
	b := denseState([]float64{0.5, 0.5}, [][]float64{{0.5, 0.5}, {0.5, 0.5}})
	objective := func(n int, params *State) float64 {
		var s Sampler
		s.Seed(3, 0, 0)
		s.SetMixture([]*State{&a}, []float64{1})
		var y Counts
		s.Sample(&y, 2000, n, 2)
		var em EM
		em.SetClasses([]int32{0, 1}, 2, 1, 1)
		em.Observe(&y)
		em.InitFrom(params, 0)
		return em.Objective()
	}
	la, lb := objective(1, &a), objective(1, &b)
	if math.Abs(la-lb) > 1e-9*math.Abs(la) {
		t.Errorf("N=1: log-likelihoods differ: %g vs %g; they should be equal (not identifiable)", la, lb)
	}
	la, lb = objective(3, &a), objective(3, &b)
	if la-lb < 10 {
		t.Errorf("N=3: true parameters fit %g, wrong ones %g: expected the truth to win clearly", la, lb)
	}
}

// TestEMMonotone checks MAP-EM never decreases its objective.
func TestEMMonotone(t *testing.T) {
	for _, c := range []int{3, 10, 200} {
		rng := rand.New(rand.NewPCG(2, uint64(c)))
		var states []State
		for j := 0; j < 5; j++ {
			var s State
			s.Init([]int32{int32(rng.IntN(c))}, c, 10, 0.2)
			states = append(states, s)
		}
		p := DefaultParams(c)
		p.EMIters, p.AnnotationWeight, p.Seed = 30, 0, 9
		var ws Workspace
		prev := math.Inf(-1)
		ws.Trace = func(it int, obj float64) {
			if obj < prev-1e-9*math.Abs(prev) {
				t.Errorf("C=%d: objective fell at iteration %d: %.12g -> %.12g", c, it, prev, obj)
			}
			prev = obj
		}
		var dst State
		ws.Round(&dst, &states[0], nil, 0, states[1:], []float64{0.4, 0.3, 0.2, 0.1}, 1, 0, &p)
		if err := dst.Check(c); err != nil {
			t.Errorf("C=%d: %v", c, err)
		}
		if prev == math.Inf(-1) {
			t.Errorf("C=%d: trace never called", c)
		}
	}
}

// TestSampler checks the draws follow METHOD.md step 4: one component per
// vector (components have disjoint supports here, so a vector mixing supports
// would expose a per-trial draw), component frequencies and category
// frequencies by chi-square at a fixed seed, and reproducibility.
func TestSampler(t *testing.T) {
	const c = 6
	a := denseState([]float64{0.7, 0.3}, [][]float64{{0.6, 0.4, 0, 0, 0, 0}, {0, 0.5, 0.5, 0, 0, 0}})
	// b's single row is sparse with a remainder spread over categories 3..5.
	var b State
	r := b.add(3, 1)
	r.Cat, r.P, r.Rem = []int32{0, 1, 2}, []float64{0, 0, 0}, 1
	w := []float64{2, 1} // normalised: a 2/3, b 1/3
	draw := func(seed uint64) (*Counts, [][]float64) {
		var s Sampler
		s.Seed(seed, 42, 3)
		s.SetMixture([]*State{&a, &b}, w)
		var y Counts
		s.Sample(&y, 30000, 5, c)
		return &y, nil
	}
	y, _ := draw(11)
	// Component of a vector: {0,1} only -> a0, {1,2} only -> a1, {3,4,5} -> b.
	compCount := [3]float64{}
	catCount := make([]float64, c)
	for v := 0; v < y.Len(); v++ {
		has := [c]bool{}
		for e := y.Off[v]; e < y.Off[v+1]; e++ {
			has[y.Cat[e]] = true
			catCount[y.Cat[e]] += y.W[v] * y.Cnt[e]
		}
		switch {
		case !has[2] && !has[3] && !has[4] && !has[5] && has[0]:
			compCount[0] += y.W[v]
		case !has[0] && !has[3] && !has[4] && !has[5] && has[2]:
			compCount[1] += y.W[v]
		case !has[0] && !has[1] && !has[2]:
			compCount[2] += y.W[v]
		case !has[0] && !has[2] && !has[3] && !has[4] && !has[5]:
			// all-1 vectors come from a0 or a1: ambiguous, rare (0.4^5 + 0.5^5).
		default:
			t.Fatalf("vector %d mixes components: %v", v, has)
		}
	}
	// Expected component probabilities, with the ambiguous all-1 vectors removed.
	pa0, pa1, pb := 2.0/3*0.7, 2.0/3*0.3, 1.0/3
	e0, e1 := pa0*(1-math.Pow(0.4, 5)), pa1*(1-math.Pow(0.5, 5))
	tot := compCount[0] + compCount[1] + compCount[2]
	z := e0 + e1 + pb
	chi := 0.0
	for i, e := range []float64{e0 / z, e1 / z, pb / z} {
		chi += sq(compCount[i]-e*tot) / (e * tot)
	}
	if chi > 13.8 { // chi-square, 2 dof, p = 0.001
		t.Errorf("component frequencies %v: chi2 = %.2f > 13.8", compCount, chi)
	}
	// Category marginals: 5 trials per vector.
	exp := []float64{pa0 * 0.6, pa0*0.4 + pa1*0.5, pa1 * 0.5, pb / 3, pb / 3, pb / 3}
	chi = 0
	var n float64
	for _, x := range catCount {
		n += x
	}
	for k := range exp {
		chi += sq(catCount[k]-exp[k]*n) / (exp[k] * n)
	}
	// Trials within a vector are correlated through the component, so scale the
	// statistic by the design effect (5 trials per vector) before the test.
	if chi/5 > 20.5 { // 5 dof, p = 0.001
		t.Errorf("category frequencies %v: chi2/5 = %.2f > 20.5", catCount, chi/5)
	}
	y2, _ := draw(11)
	if !equalCounts(y, y2) {
		t.Error("same seed gave different draws")
	}
	y3, _ := draw(12)
	if equalCounts(y, y3) {
		t.Error("different seeds gave identical draws")
	}
}

func sq(x float64) float64 { return x * x }

func equalCounts(a, b *Counts) bool {
	if a.Len() != b.Len() || len(a.Cat) != len(b.Cat) {
		return false
	}
	for i := range a.Cat {
		if a.Cat[i] != b.Cat[i] || a.Cnt[i] != b.Cnt[i] {
			return false
		}
	}
	for i := range a.W {
		if a.W[i] != b.W[i] {
			return false
		}
	}
	return true
}

// TestSamplerCounts checks the binomial split of a vector's trials (the most
// probable category's count is Binomial(N, p), the rest drawn trial by trial)
// against the exact multinomial: the distribution of the top category's count
// and the rest's category frequencies, by chi-square at a fixed seed, for a row
// split on its top entry and for a row too flat to split.
func TestSamplerCounts(t *testing.T) {
	const c, n, l = 8, 7, 40000
	for _, tc := range []struct {
		name string
		cat  []int32
		p    []float64
		rem  float64
	}{
		{"split", []int32{3, 1, 6}, []float64{0.8, 0.1, 0.04}, 0.06},
		{"flat", []int32{3, 1, 6}, []float64{0.3, 0.25, 0.2}, 0.25},
	} {
		var st State
		r := st.add(0, 1)
		r.Cat, r.P, r.Rem = tc.cat, tc.p, tc.rem
		var s Sampler
		s.Seed(5, 1, 2)
		s.SetMixture([]*State{&st}, []float64{1})
		var y Counts
		s.Sample(&y, l, n, c)
		hist := make([]float64, n+1)
		cats := make([]float64, c)
		var tot float64
		for v := 0; v < y.Len(); v++ {
			k := 0.0
			for e := y.Off[v]; e < y.Off[v+1]; e++ {
				cats[y.Cat[e]] += y.W[v] * y.Cnt[e]
				if y.Cat[e] == 3 {
					k = y.Cnt[e]
				}
			}
			if y.Trials[v] != n {
				t.Fatalf("%s: vector %d has %g trials, want %d", tc.name, v, y.Trials[v], n)
			}
			hist[int(k)] += y.W[v]
			tot += y.W[v]
		}
		if tot != l {
			t.Fatalf("%s: weights sum to %g, want %d", tc.name, tot, l)
		}
		// Count of category 3 ~ Binomial(n, p3); pool cells with expectation < 5.
		p3 := tc.p[0]
		chi, dof, pe, po := 0.0, -1, 0.0, 0.0
		for k := 0; k <= n; k++ {
			pe += l * math.Exp(lgammaInt(n+1)-lgammaInt(k+1)-lgammaInt(n-k+1)+float64(k)*math.Log(p3)+float64(n-k)*math.Log(1-p3))
			po += hist[k]
			if pe >= 5 || k == n {
				chi += sq(po-pe) / pe
				dof++
				pe, po = 0, 0
			}
		}
		if crit := chiCrit001(dof); chi > crit {
			t.Errorf("%s: top count histogram %v: chi2 = %.2f > %.2f (%d dof)", tc.name, hist, chi, crit, dof)
		}
		// Category frequencies over all trials (trials are independent given
		// the single component, so no design effect).
		exp := make([]float64, c)
		for e, cat := range tc.cat {
			exp[cat] = tc.p[e]
		}
		for cat := range exp {
			if exp[cat] == 0 && cat != 3 && cat != 1 && cat != 6 {
				exp[cat] = tc.rem / float64(c-len(tc.cat))
			}
		}
		chi = 0
		for cat := range exp {
			e := exp[cat] * l * n
			chi += sq(cats[cat]-e) / e
		}
		if crit := chiCrit001(c - 1); chi > crit {
			t.Errorf("%s: category counts %v: chi2 = %.2f > %.2f", tc.name, cats, chi, crit)
		}
	}
}

func lgammaInt(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}

// chiCrit001 is the chi-square quantile at p = 0.001 for dof 1..8.
func chiCrit001(dof int) float64 {
	return []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12}[dof]
}

// TestPickComp checks the guide table picks exactly the component a search
// over the cumulative weights from the start picks, zero weights included.
func TestPickComp(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	// One sampler for every mixture: each pick must use the guide table of
	// the current mixture, built on its first i.i.d. pick.
	var s Sampler
	for _, m := range []int{1, 2, 7, 55, 300, 3} {
		states := make([]*State, m)
		w := make([]float64, m)
		for j := range states {
			var s State
			s.Init([]int32{int32(j % 5)}, 5, 5, 0.1)
			states[j] = &s
			if rng.IntN(4) > 0 {
				w[j] = rng.Float64() * float64(1+j%3*10)
			}
		}
		w[m-1] = 1
		s.SetMixture(states, w)
		for i := 0; i < 20000; i++ {
			u := rng.Float64()
			if i < 4 {
				u = []float64{0, 0.5, 1 - 1e-16, s.compCum[0]}[i]
			}
			want := pick(s.compCum, u)
			if got := s.pickComp(u); got != want {
				t.Fatalf("m=%d u=%g: picked component %d, want %d", m, u, got, want)
			}
		}
	}
}

// TestEMFixpoint checks stopping at Converged changes nothing: EM run for all
// its iterations and EM stopped at the first step that reproduced its
// parameters give bit-identical results, and the stop does happen on
// near-diagonal data (else the saving would be untested).
func TestEMFixpoint(t *testing.T) {
	const c, iters = 10, 30
	mk := func(l int32) State {
		var s State
		s.Init([]int32{l}, c, 10, 0.1)
		return s
	}
	a, b, d := mk(2), mk(2), mk(5)
	var s Sampler
	s.Seed(3, 9, 1)
	s.SetMixture([]*State{&a, &b, &d}, []float64{0.5, 0.3, 0.2})
	var y Counts
	s.Sample(&y, 250, 19, c)
	run := func(stop bool) (State, int) {
		var em EM
		em.SetClasses([]int32{2, 5}, c, 1.1, 1.1)
		em.Observe(&y)
		em.InitFrom(&a, 0.1)
		n := 0
		for it := 0; it < iters && !(stop && em.Converged); it++ {
			em.StepFast()
			n++
		}
		var out State
		em.Result(&out)
		return out, n
	}
	full, _ := run(false)
	early, n := run(true)
	if n >= iters {
		t.Fatalf("EM never reached an exact fixpoint in %d steps", iters)
	}
	if !sameState(&full, &early) {
		t.Fatalf("stopping at the fixpoint after %d steps changed pi: %v vs %v", n, early.Pi, full.Pi)
	}
	for k := range full.Rows {
		fr, er := &full.Rows[k], &early.Rows[k]
		if fr.Rem != er.Rem || !equalInt32(fr.Cat, er.Cat) {
			t.Fatalf("row %d differs: %+v vs %+v", k, er, fr)
		}
		for e := range fr.P {
			if fr.P[e] != er.P[e] {
				t.Fatalf("row %d entry %d: %v vs %v", k, e, er.P[e], fr.P[e])
			}
		}
	}
}

// TestSamplerDraws checks the two ways vectors pick components: with
// systematic draws every component gets floor or ceil of L w vectors, and
// over seeds the ceil comes as often as the fractional part of L w says (each
// vector's component keeps the mixture's distribution); i.i.d. picks
// scatter around L w.
func TestSamplerDraws(t *testing.T) {
	const c, l, n = 5, 37, 3
	// Component k's row is a point mass on category k, so a vector names its
	// component.
	var st State
	pis := []float64{0.41, 0.27, 0.17, 0.1, 0.05}
	for k, p := range pis {
		r := st.add(int32(k), p)
		r.Cat, r.P, r.Rem = []int32{int32(k)}, []float64{1}, 0
	}
	counts := func(d Draws, seed uint64) []float64 {
		var s Sampler
		s.Draws = d
		s.Seed(seed, 7, 1)
		if !s.SetMixture([]*State{&st}, []float64{1}) {
			t.Fatal("empty mixture")
		}
		var y Counts
		s.Sample(&y, l, n, c)
		got := make([]float64, c)
		for v := 0; v < y.Len(); v++ {
			if y.Off[v+1]-y.Off[v] != 1 || y.Cnt[y.Off[v]] != n {
				t.Fatalf("vector %d is not a point mass: %v", v, y.Cat[y.Off[v]:y.Off[v+1]])
			}
			got[y.Cat[y.Off[v]]] += y.W[v]
		}
		return got
	}
	const seeds = 4000
	ceil := make([]float64, c)
	iidOff := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		sys := counts(Systematic, seed)
		for k, p := range pis {
			lo := math.Floor(l * p)
			switch sys[k] {
			case lo:
			case lo + 1:
				ceil[k]++
			default:
				t.Fatalf("seed %d: component %d got %v vectors, want %v or %v", seed, k, sys[k], lo, lo+1)
			}
		}
		for k, x := range counts(IID, seed) {
			if math.Abs(x-l*pis[k]) >= 1 {
				iidOff++
				break
			}
		}
	}
	for k, p := range pis {
		frac := l*p - math.Floor(l*p)
		// Binomial(seeds, frac): 4 standard deviations.
		if sd := math.Sqrt(seeds * frac * (1 - frac)); math.Abs(ceil[k]-seeds*frac) > 4*sd+1 {
			t.Errorf("component %d: ceil in %v of %d seeds, want about %.0f", k, ceil[k], seeds, seeds*frac)
		}
	}
	if iidOff < seeds/2 {
		t.Errorf("i.i.d. picks stayed within 1 of L w in %d of %d seeds: not independent", seeds-iidOff, seeds)
	}
	for _, s := range []string{"systematic", "iid"} {
		if d, err := ParseDraws(s); err != nil || d.String() != s {
			t.Errorf("ParseDraws(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := ParseDraws("random"); err == nil {
		t.Error("ParseDraws accepted an unknown name")
	}
}

// TestIntNMatchesRand: the sampler's inline IntN draws what math/rand/v2's
// Rand.IntN draws from the same PCG state, so outputs did not change when
// it replaced the interface call.
func TestIntNMatchesRand(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 7, 10, 16, 26, 999, 1000, 1 << 20, 1<<40 + 3} {
		var s Sampler
		s.Seed(3, n, 1)
		refPCG := s.pcg
		ref := rand.New(&refPCG)
		for i := 0; i < 2000; i++ {
			if got, want := s.intN(n), uint64(ref.IntN(int(n))); got != want {
				t.Fatalf("n = %d, draw %d: intN %d, rand.IntN %d", n, i, got, want)
			}
		}
	}
}

// TestPick: the first index whose cumulative value exceeds u, for short
// (scanned) and long (bisected) tables, against a linear search.
func TestPick(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 5, 16, 17, 40, 300} {
		cum := make([]float64, n)
		var c float64
		for i := range cum {
			if rng.IntN(4) > 0 { // some zero-width steps: repeated values
				c += rng.Float64()
			}
			cum[i] = c
		}
		for k := 0; k < 500; k++ {
			u := rng.Float64() * c * 1.01
			if k%5 == 0 { // exactly on a step: the first value above it
				u = cum[rng.IntN(n)]
			}
			want := n - 1
			for i, x := range cum {
				if u < x {
					want = i
					break
				}
			}
			if got := pick(cum, u); got != want {
				t.Fatalf("n = %d, u = %v: pick %d, want %d", n, u, got, want)
			}
		}
	}
}

// TestVector: a draw's vector (sorted distinct categories with counts, the
// top entry's trials merged in at its place) against a map count, for few
// draws (rankDraws) and more than maxRankDraws (the sort), with many
// repeats (small C) and almost none (large C), and categories up to
// int32's largest.
func TestVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var s Sampler
	for _, c := range []int{3, 40, 1000, math.MaxInt32} {
		for _, n := range []int{0, 1, 2, 7, maxRankDraws, maxRankDraws + 1, 70} {
			for rep := 0; rep < 50; rep++ {
				row := &Row{Cat: []int32{int32(rng.IntN(c)), int32(rng.IntN(c))}}
				if row.Cat[1] == row.Cat[0] {
					row.Cat = row.Cat[:1]
				}
				top, k := -1, 0
				if rep%3 > 0 {
					top, k = rng.IntN(len(row.Cat)), rng.IntN(4)
				}
				want := map[int32]float64{}
				if top >= 0 && k > 0 {
					want[row.Cat[top]] += float64(k)
				}
				s.draw = s.draw[:0]
				for i := 0; i < n; i++ {
					x := int32(rng.IntN(c))
					if rep%2 == 0 && i > 0 && rng.IntN(3) == 0 {
						x = s.draw[rng.IntN(i)] // repeats at any C
					}
					if rep%5 == 0 && i == 0 {
						x = math.MaxInt32 % int32(c)
					}
					s.draw = append(s.draw, x)
					want[x]++
				}
				s.vector(row, top, k)
				if len(s.vec) != len(s.cnt) || len(s.vec) != len(want) {
					t.Fatalf("C %d, %d draws: vector %v %v, want counts %v", c, n, s.vec, s.cnt, want)
				}
				for e, x := range s.vec {
					if e > 0 && s.vec[e-1] >= x {
						t.Fatalf("C %d, %d draws: categories %v not ascending", c, n, s.vec)
					}
					if s.cnt[e] != want[x] {
						t.Fatalf("C %d, %d draws: category %d count %v, want %v", c, n, x, s.cnt[e], want[x])
					}
				}
			}
		}
	}
}

// TestMapCategories: both category indices (dense, branch-free, and the
// map beyond denseLocalMax) give every category its first occurrence's
// order across calls (the Code variant's re-sampled data adds categories),
// and Obs lists them in that order.
func TestMapCategories(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []int{5, 1000, denseLocalMax + 1} {
		var em EM
		em.SetClasses([]int32{0}, c, 1, 1)
		want := map[int32]int32{}
		var wantObs []int32
		for call := 0; call < 4; call++ {
			ycat := make([]int32, rng.IntN(60))
			for e := range ycat {
				ycat[e] = int32(rng.IntN(min(c, 2000)))
			}
			cats := make([]int32, len(ycat))
			em.mapCategories(ycat, cats)
			for e, x := range ycat {
				w, ok := want[x]
				if !ok {
					w = int32(len(wantObs))
					want[x] = w
					wantObs = append(wantObs, x)
				}
				if cats[e] != w {
					t.Fatalf("C %d call %d entry %d (category %d): local %d, want %d", c, call, e, x, cats[e], w)
				}
			}
			if !slices.Equal(em.Obs, wantObs) {
				t.Fatalf("C %d call %d: Obs %v, want %v", c, call, em.Obs, wantObs)
			}
		}
	}
}

// TestEMStepReference compares one EM step against a dense log-domain step
// written out from METHOD.md step 5: on ordinary counts (the power table),
// on counts so large that every joint underflows float64 (the log path),
// and on fractional counts (math.Pow).
func TestEMStepReference(t *testing.T) {
	const c = 4
	classes := []int32{0, 1, 3}
	m := len(classes)
	start := denseState([]float64{0.5, 0.3, 0.15, 0.05}, [][]float64{
		{0.7, 0.1, 0.1, 0.1}, {0.2, 0.6, 0.1, 0.1}, {0.25, 0.25, 0.25, 0.25}, {0.1, 0.1, 0.1, 0.7}})
	cases := []struct {
		name  string
		scale float64 // counts are multiplied by it
	}{{"counts", 1}, {"underflow", 3000}, {"fractional", 0.5}}
	for _, tc := range cases {
		var y Counts
		y.Reset()
		vecs := [][2][]float64{
			{{0, 1}, {5, 2}}, {{1}, {7}}, {{0, 3}, {3, 4}}, {{2, 3, 0}, {1, 1, 5}}, {{3}, {7}},
			{{2}, {7}}, // every class gives category 2 the same rho: soft responsibilities at any scale
		}
		for i, v := range vecs {
			tot := 0.0
			for e, cat := range v[0] {
				y.Cat = append(y.Cat, int32(cat))
				y.Cnt = append(y.Cnt, v[1][e]*tc.scale)
				tot += v[1][e] * tc.scale
			}
			y.Off = append(y.Off, int32(len(y.Cat)))
			y.W = append(y.W, float64(1+i%2))
			y.Trials = append(y.Trials, tot)
		}
		var em EM
		em.SetClasses(classes, c, 1.1, 1.2)
		em.Observe(&y)
		em.InitFrom(&start, 0.1)
		// The dense parameters EM starts from.
		pi := append([]float64(nil), em.Pi...)
		rho := make([][]float64, m)
		for a := range rho {
			rho[a] = make([]float64, c)
			for cat := range rho[a] {
				rho[a][cat] = em.Unseen[a]
			}
			for b, cat := range em.Obs {
				rho[a][cat] = em.Rho[b*m+a]
			}
		}
		// Reference step.
		a1, b1 := 0.1, 0.2
		sumG, sumN := make([]float64, m), make([]float64, m)
		num := make([][]float64, m)
		for a := range num {
			num[a] = make([]float64, c)
		}
		wsum := 0.0
		for v := 0; v < y.Len(); v++ {
			lg := make([]float64, m)
			mx := math.Inf(-1)
			for a := range lg {
				lg[a] = math.Log(pi[a])
				for e := y.Off[v]; e < y.Off[v+1]; e++ {
					lg[a] += y.Cnt[e] * math.Log(rho[a][y.Cat[e]])
				}
				mx = math.Max(mx, lg[a])
			}
			z := 0.0
			for a := range lg {
				lg[a] = math.Exp(lg[a] - mx)
				z += lg[a]
			}
			wsum += y.W[v]
			for a := range lg {
				g := y.W[v] * lg[a] / z
				sumG[a] += g
				sumN[a] += g * y.Trials[v]
				for e := y.Off[v]; e < y.Off[v+1]; e++ {
					num[a][y.Cat[e]] += g * y.Cnt[e]
				}
			}
		}
		em.StepFast()
		close := func(x, want float64) bool { return math.Abs(x-want) <= 1e-9*math.Abs(want)+1e-15 }
		for a := 0; a < m; a++ {
			wantPi := (sumG[a] + a1) / (wsum + float64(m)*a1)
			if !close(em.Pi[a], wantPi) {
				t.Errorf("%s: pi[%d] = %.15g, want %.15g", tc.name, a, em.Pi[a], wantPi)
			}
			den := sumN[a] + c*b1
			for cat := 0; cat < c; cat++ {
				want := (num[a][cat] + b1) / den
				got := em.Unseen[a]
				for b, oc := range em.Obs {
					if int(oc) == cat && num[a][cat] > 1e-300 {
						got = em.Rho[b*m+a]
					}
				}
				if num[a][cat] <= 1e-300 {
					want = b1 / den
				}
				if !close(got, want) {
					t.Errorf("%s: rho[%d][%d] = %.15g, want %.15g", tc.name, a, cat, got, want)
				}
			}
		}
	}
}

// TestJointsInt: the E step's joints, four classes at a time, have the
// bits of multiplying pi by each entry's column in entry order (the loop
// they replaced), and the largest is found, for every class count's
// remainder.
func TestJointsInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for m := 1; m <= 13; m++ {
		for trial := 0; trial < 20; trial++ {
			pi := make([]float64, m)
			for a := range pi {
				pi[a] = rng.Float64()
			}
			pow := make([]float64, 40*m)
			for i := range pow {
				pow[i] = rng.Float64() * math.Pow(10, -float64(rng.IntN(30)))
			}
			offs := make([]int32, rng.IntN(12))
			for e := range offs {
				offs[e] = int32(rng.IntN(40) * m)
			}
			want := append([]float64(nil), pi...)
			for _, at := range offs {
				for a := range want {
					want[a] *= pow[int(at)+a]
				}
			}
			got := make([]float64, m)
			mx := jointsInt(got, pi, pow, offs)
			best := 0.0
			for a := range want {
				if math.Float64bits(got[a]) != math.Float64bits(want[a]) {
					t.Fatalf("m %d: joint %d = %v, want %v bit for bit", m, a, got[a], want[a])
				}
				best = max(best, want[a])
			}
			if math.Float64frombits(mx) != best {
				t.Fatalf("m %d: largest %v, want %v", m, math.Float64frombits(mx), best)
			}
		}
	}
}

// TestClassSet checks Params.MinClassMass: EM's class set drops the classes
// below that share of the mixture (summed over components, by weight),
// keeps the heaviest whatever the bound, keeps every class at 0, and
// Validate rejects bounds outside [0, 1].
func TestClassSet(t *testing.T) {
	a := State{Class: []int32{7, 1, 2}, Pi: []float64{0.975, 0.017, 0.008}}
	b := State{Class: []int32{1, 3, 4}, Pi: []float64{0.4, 0.595, 0.005}}
	var ws Workspace
	ws.comps = []*State{&a, &b}
	ws.w = []float64{3, 1} // shares: a 3/4, b 1/4
	for _, tc := range []struct {
		min  float64
		want []int32
	}{
		// class 1: .75*.017 + .25*.4 = .11275; 2: .006; 3: .14875; 4: .00125
		{0, []int32{1, 2, 3, 4, 7}},
		{0.005, []int32{1, 2, 3, 7}},
		{0.01, []int32{1, 3, 7}},
		{0.2, []int32{7}},
		{1, []int32{7}}, // the heaviest stays
	} {
		ws.classSet(tc.min)
		if !slices.Equal(ws.classes, tc.want) {
			t.Errorf("MinClassMass %g: class set %v, want %v", tc.min, ws.classes, tc.want)
		}
	}
	for _, v := range []float64{-0.01, 1.5, math.NaN()} {
		p := DefaultParams(10)
		p.MinClassMass = v
		if p.Validate() == nil {
			t.Errorf("MinClassMass %g: Validate accepted it", v)
		}
	}
	if p := DefaultParams(10); p.MinClassMass != 0.01 || p.Validate() != nil {
		t.Errorf("default MinClassMass %g (valid: %v), want 0.01", p.MinClassMass, p.Validate())
	}
}
