package mixture

import (
	"fmt"
	"math"
)

// Variant selects how EM is run inside a round.
type Variant int

const (
	// Paper samples the L vectors once per round and warm-starts EM from the
	// item's current state (the paper's Algorithm 1).
	Paper Variant = iota
	// Code follows the authors' public JAX code: pi, rho re-initialised every call
	// (pi uniform, rho rows proportional to 10 I + U(0,1)) and y re-sampled inside
	// every EM iteration.
	Code
)

func (v Variant) String() string {
	switch v {
	case Paper:
		return "paper"
	case Code:
		return "code"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// ParseVariant parses "paper" or "code".
func ParseVariant(s string) (Variant, error) {
	switch s {
	case "paper":
		return Paper, nil
	case "code":
		return Code, nil
	}
	return 0, fmt.Errorf("mixture: unknown EM variant %q (want paper or code)", s)
}

// EM fits the MAP multinomial mixture of METHOD.md step 5 on a class set of m
// classes (the classes some mixture component puts mass on: a class no
// component supports gets no responsibility, so restricting the model to the
// supported classes keeps EM exact and costs O(m) instead of O(C)) over C
// categories. Rows are stored densely over the o observed categories plus one
// shared value for each unobserved category, so one iteration costs
// O(distinct vectors x m x nnz) and nothing is O(C^2).
//
// It is a reusable workspace.
type EM struct {
	// Classes is the class set (len m); Obs maps local category index to category.
	Classes []int32
	Obs     []int32
	C       int
	Alpha   float64
	Beta    float64

	Pi []float64 // m
	// LogRho is log rho over the observed categories, laid out o x m
	// (LogRho[b*m+a] is class a's log probability of category Obs[b]): the E
	// step adds, for each entry of a vector, one contiguous column of m
	// values, and a new observed category appends m values.
	LogRho []float64
	Unseen []float64 // m, rho of each unobserved category

	// local maps a category to its local index + 1 (0: not observed yet):
	// a dense table over C when C is moderate (a lookup per sampled entry is
	// the hot path of setData), a map beyond denseLocalMax.
	local    []int32
	localMap map[int32]int32
	data     Counts // y with categories mapped to local indices
	gamma    []float64
	sumG     []float64
	sumN     []float64
	num      []float64 // o x m, as LogRho
	logPi    []float64
	logUns   []float64

	// Converged is set by Step when its M step reproduced the parameters it
	// started from bit for bit: every further step on the same data would
	// compute exactly the same responsibilities and parameters again, so a
	// caller may stop iterating without changing any result.
	Converged bool
	// PiMoved is the largest change of a class's pi in the last Step.
	PiMoved float64

	den, lu []float64   // M step: each class's row denominator and shared log value
	memo    []memoEntry // M step: memoSize logs per class
}

// memoEntry is one slot of the M step's log memo.
type memoEntry struct{ key, val float64 }

// denseLocalMax bounds C for the dense category index (4 bytes per category
// per workspace).
const denseLocalMax = 1 << 20

// memoBits sets the slots of the M step's per-class log memo.
const (
	memoBits = 4
	memoSize = 1 << memoBits
)

// SetClasses sets the class set and resets the category index.
func (em *EM) SetClasses(classes []int32, c int, alpha, beta float64) {
	em.Classes = append(em.Classes[:0], classes...)
	em.C, em.Alpha, em.Beta = c, alpha, beta
	if em.C <= denseLocalMax {
		if len(em.local) < em.C {
			em.local = make([]int32, em.C)
		} else {
			for _, cat := range em.Obs {
				em.local[cat] = 0
			}
		}
	} else {
		if em.localMap == nil {
			em.localMap = make(map[int32]int32)
		}
		clear(em.localMap)
	}
	em.Obs = em.Obs[:0]
	em.Converged = false
}

// lookup returns the local index of category cat, -1 when not observed.
func (em *EM) lookup(cat int32) int32 {
	if em.C <= denseLocalMax {
		return em.local[cat] - 1
	}
	if li, ok := em.localMap[cat]; ok {
		return li
	}
	return -1
}

// fillColumn sets class a's entries of an o x m table to v.
func fillColumn(x []float64, a, m int, v float64) {
	for i := a; i < len(x); i += m {
		x[i] = v
	}
}

// localIndex returns the local index of category cat, registering it when new.
func (em *EM) localIndex(cat int32) int32 {
	if em.C <= denseLocalMax {
		li := em.local[cat]
		if li == 0 {
			em.Obs = append(em.Obs, cat)
			li = int32(len(em.Obs))
			em.local[cat] = li
		}
		return li - 1
	}
	li, ok := em.localMap[cat]
	if !ok {
		li = int32(len(em.Obs))
		em.localMap[cat] = li
		em.Obs = append(em.Obs, cat)
	}
	return li
}

// observe registers categories of y (global indices) and stores a local copy.
func (em *EM) setData(y *Counts) {
	d := &em.data
	d.Reset()
	em.Converged = false
	o0 := len(em.Obs)
	for v := 0; v < y.Len(); v++ {
		for e := y.Off[v]; e < y.Off[v+1]; e++ {
			d.Cat = append(d.Cat, em.localIndex(y.Cat[e]))
			d.Cnt = append(d.Cnt, y.Cnt[e])
		}
		d.Off = append(d.Off, int32(len(d.Cat)))
		d.W = append(d.W, y.W[v])
		d.Trials = append(d.Trials, y.Trials[v])
	}
	if o := len(em.Obs); o > o0 && len(em.LogRho) == len(em.Classes)*o0 && o0 > 0 {
		em.growObs(o0, o)
	}
}

// growObs re-lays the rho table out for newly observed categories (the Code
// variant re-samples y every iteration): a new category had the shared
// unobserved probability, so it starts there.
func (em *EM) growObs(o0, o int) {
	m := len(em.Classes)
	if cap(em.LogRho) < m*o {
		em.LogRho = append(make([]float64, 0, m*o), em.LogRho...)
	}
	em.LogRho = em.LogRho[:m*o]
	for a := 0; a < m; a++ {
		lu := math.Log(em.Unseen[a])
		for b := o0; b < o; b++ {
			em.LogRho[b*m+a] = lu
		}
	}
}

// SetData replaces the EM data with y (new categories extend the tables).
func (em *EM) SetData(y *Counts) { em.setData(y) }

// Observe adds the categories of y to the observed set (so that initial rows
// can be laid out before the first E-step).
func (em *EM) Observe(y *Counts) { em.setData(y) }

func (em *EM) sizes() (m, o int) { return len(em.Classes), len(em.Obs) }

// InitFrom warm-starts (pi, rho) from state s (the Paper variant): classes of
// the set absent from s get a small floor mass and the default row with
// smoothing smooth.
func (em *EM) InitFrom(s *State, smooth float64) {
	m, o := em.sizes()
	em.Pi = resize(em.Pi, m)
	em.LogRho = resize(em.LogRho, m*o)
	em.Unseen = resize(em.Unseen, m)
	floor := 1e-3 / float64(m)
	var z float64
	for a, cl := range em.Classes {
		p := s.ProbOf(cl)
		if p < floor {
			p = floor
		}
		em.Pi[a] = p
		z += p
		un := 0.0
		if n := em.C - 1; n > 0 {
			un = smooth / float64(n)
		}
		// Every observed category outside the row's explicit ones has the
		// same probability: one log for all of them, then the explicit ones.
		if row := rowOf(s, cl); row != nil {
			if n := em.C - len(row.Cat); n > 0 {
				un = row.Rem / float64(n)
			} else {
				un = 0
			}
			fillColumn(em.LogRho, a, m, math.Log(un))
			for e, cat := range row.Cat {
				if li := em.lookup(cat); li >= 0 {
					em.LogRho[int(li)*m+a] = math.Log(row.P[e])
				}
			}
		} else {
			fillColumn(em.LogRho, a, m, math.Log(un))
			if li := em.lookup(cl); li >= 0 {
				em.LogRho[int(li)*m+a] = math.Log(1 - smooth)
			}
		}
		em.Unseen[a] = un
	}
	for a := range em.Pi {
		em.Pi[a] /= z
	}
}

// InitCode re-initialises (pi, rho) as the authors' code does: pi uniform, rho
// rows proportional to 10 I + U(0,1) (the unobserved categories get the mean
// 0.5 each, so no C-length draw is needed).
func (em *EM) InitCode(s *Sampler) {
	m, o := em.sizes()
	em.Pi = resize(em.Pi, m)
	em.LogRho = resize(em.LogRho, m*o)
	em.Unseen = resize(em.Unseen, m)
	for a, cl := range em.Classes {
		em.Pi[a] = 1 / float64(m)
		diagSeen := false
		z := 0.0
		for b, cat := range em.Obs {
			v := s.rng.Float64()
			if cat == cl {
				v += 10
				diagSeen = true
			}
			em.LogRho[b*m+a] = v
			z += v
		}
		rest := float64(em.C - o)
		z += 0.5 * rest
		if !diagSeen && rest > 0 {
			z += 10 // the diagonal is among the unobserved categories
		}
		for b := 0; b < o; b++ {
			em.LogRho[b*m+a] = math.Log(em.LogRho[b*m+a] / z)
		}
		em.Unseen[a] = 0.5 / z
		if !diagSeen && rest > 0 {
			// Unobserved categories share one value: fold the diagonal's extra mass in.
			em.Unseen[a] = (0.5*rest + 10) / rest / z
		}
	}
}

func resize(x []float64, n int) []float64 {
	if cap(x) < n {
		return make([]float64, n)
	}
	return x[:n]
}

// Step runs one E and M step on y and returns the MAP objective at the
// parameters it started from (log-likelihood up to the multinomial coefficients,
// plus the Dirichlet log-priors), so a caller can check monotonicity.
func (em *EM) Step() float64 { return em.step(true) }

// StepFast is Step without the objective (a log per distinct vector and a pass
// over the prior that no parameter depends on): the parameters it computes are
// bit for bit those of Step.
func (em *EM) StepFast() { em.step(false) }

func (em *EM) step(wantObj bool) float64 {
	m, o := em.sizes()
	d := &em.data
	em.gamma = resize(em.gamma, m)
	em.sumG = resize(em.sumG, m)
	em.sumN = resize(em.sumN, m)
	em.num = resize(em.num, m*o)
	em.logPi = resize(em.logPi, m)
	clear(em.sumG)
	clear(em.sumN)
	clear(em.num)
	for a := range em.Pi {
		em.logPi[a] = math.Log(em.Pi[a])
	}
	var obj float64
	if wantObj {
		obj = em.prior()
	}
	var wsum float64
	gamma := em.gamma[:m]
	logPi := em.logPi[:m]
	for v := 0; v < d.Len(); v++ {
		lo, hi := d.Off[v], d.Off[v+1]
		cat, cnt := d.Cat[lo:hi], d.Cnt[lo:hi]
		// gamma[a] = log pi_a + sum_e cnt_e log rho_a(cat_e), summed in
		// entry order for every class at once (one column per entry).
		copy(gamma, logPi)
		for e, c := range cat {
			ce := cnt[e]
			col := em.LogRho[int(c)*m : int(c)*m+m]
			col = col[:len(gamma)]
			for a := range gamma {
				gamma[a] += ce * col[a]
			}
		}
		mx := math.Inf(-1)
		for _, g := range gamma {
			if g > mx {
				mx = g
			}
		}
		var z float64
		for a, g := range gamma {
			// exp(-40) < 2^-57: below half an ulp of z >= 1, so skipping the
			// exponential changes neither z nor any sum it feeds; it is the
			// common case (a vector of one class is far from the others) and
			// it keeps the M step's tables sparse. exp(0) = 1 exactly (the
			// most responsible class).
			switch x := g - mx; {
			case x == 0:
				gamma[a] = 1
				z++
			case x > -40:
				gamma[a] = math.Exp(x)
				z += gamma[a]
			default:
				gamma[a] = 0
			}
		}
		w := d.W[v]
		wsum += w
		if wantObj {
			obj += w * (mx + math.Log(z))
		}
		trials := d.Trials[v]
		for a, ga := range gamma {
			if ga == 0 {
				continue
			}
			g := w * ga / z
			em.sumG[a] += g
			em.sumN[a] += g * trials
			for e, c := range cat {
				em.num[int(c)*m+a] += g * cnt[e]
			}
		}
	}
	// M step (METHOD.md step 5), MAP under Dirichlet(alpha) on pi over the m
	// classes and Dirichlet(beta) on each rho row over all C categories.
	// same tracks whether every parameter came out bit for bit as it went in
	// (see Converged).
	a1, b1 := em.Alpha-1, em.Beta-1
	piDen := wsum + float64(m)*a1
	same := true
	em.PiMoved = 0
	// Per class first: pi, the row's denominator, and the value every
	// category without responsibility-weighted counts from the class shares
	// (one log for all of them); a row with no data and a flat prior has no
	// unique MAP and stays uniform.
	em.den, em.lu = resize(em.den, m), resize(em.lu, m)
	for a := 0; a < m; a++ {
		pi := (em.sumG[a] + a1) / piDen
		same = same && pi == em.Pi[a]
		em.PiMoved = max(em.PiMoved, math.Abs(pi-em.Pi[a]))
		em.Pi[a] = pi
		den := em.sumN[a] + float64(em.C)*b1
		em.den[a] = den
		u := 1 / float64(em.C)
		if den <= 0 {
			em.lu[a] = -math.Log(float64(em.C))
		} else {
			em.lu[a], u = math.Log(b1/den), b1/den
		}
		same = same && em.Unseen[a] == u
		em.Unseen[a] = u
	}
	// Then the log rho table, category by category (its o x m layout: one
	// contiguous column at a time; at large C, o runs to hundreds). The
	// categories with counts mostly repeat a few values per class (hard
	// responsibilities times small counts): a small memo per class computes
	// each distinct value's log once, with the same expression, so the
	// result is the same bits.
	if cap(em.memo) < m*memoSize {
		em.memo = make([]memoEntry, m*memoSize)
	}
	em.memo = em.memo[:m*memoSize]
	for i := range em.memo {
		em.memo[i].key = math.NaN()
	}
	for b := 0; b < o; b++ {
		num, lr := em.num[b*m:b*m+m], em.LogRho[b*m:b*m+m]
		for a, x := range num {
			l := em.lu[a]
			if x != 0 && em.den[a] > 0 {
				e := &em.memo[a*memoSize+int((math.Float64bits(x)*0x9e3779b97f4a7c15)>>(64-memoBits))]
				if e.key == x {
					l = e.val
				} else {
					l = math.Log((x + b1) / em.den[a])
					e.key, e.val = x, l
				}
			}
			same = same && lr[a] == l
			lr[a] = l
		}
	}
	em.Converged = same
	return obj
}

// prior is the Dirichlet log-prior of the current parameters (constants dropped).
func (em *EM) prior() float64 {
	m, o := em.sizes()
	a1, b1 := em.Alpha-1, em.Beta-1
	var p float64
	for a := 0; a < m; a++ {
		if a1 != 0 {
			p += a1 * math.Log(em.Pi[a])
		}
		if b1 != 0 {
			for b := 0; b < o; b++ {
				p += b1 * em.LogRho[b*m+a]
			}
			if rest := em.C - o; rest > 0 {
				p += b1 * float64(rest) * math.Log(em.Unseen[a])
			}
		}
	}
	return p
}

// Objective returns the MAP objective at the current parameters.
func (em *EM) Objective() float64 {
	pi := append([]float64(nil), em.Pi...)
	lr := append([]float64(nil), em.LogRho...)
	un := append([]float64(nil), em.Unseen...)
	obj := em.Step()
	copy(em.Pi, pi)
	copy(em.LogRho, lr)
	copy(em.Unseen, un)
	return obj
}

// Result writes the fitted (pi, rho) into dst as a sparse State over the class
// set. A row keeps explicit entries only for the categories that class was
// responsible for in the last step; every other category has the same MAP value
// (the prior's share), so it goes into the row's remainder. Call after Step.
//
// The tables are walked category by category (their o x m layout, one
// contiguous column of m at a time), appending to each class's row: every
// row gets its entries in category order, as a walk class by class would
// give them.
func (em *EM) Result(dst *State) {
	m := len(em.Classes)
	dst.Reset()
	for a := 0; a < m; a++ {
		dst.add(em.Classes[a], em.Pi[a])
	}
	for b, cat := range em.Obs {
		num, lr := em.num[b*m:b*m+m], em.LogRho[b*m:b*m+m]
		for a, x := range num {
			if x == 0 {
				continue
			}
			r := &dst.Rows[a]
			r.Cat = append(r.Cat, cat)
			r.P = append(r.P, math.Exp(lr[a]))
		}
	}
	for a := 0; a < m; a++ {
		r := &dst.Rows[a]
		r.Rem = em.Unseen[a] * float64(em.C-len(r.Cat))
	}
}
