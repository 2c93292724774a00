package mixture

import (
	"fmt"
	"math"
	"slices"
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
	// Rho is rho over the observed categories, laid out o x m (Rho[b*m+a]
	// is class a's probability of category Obs[b]): the E step multiplies,
	// for each entry of a vector, one contiguous column of m values, and a
	// new observed category appends m values.
	//
	// EM works with probabilities, not their logs: a vector's joint
	// pi_a prod_e rho_a(e)^cnt_e over the few trials of a round (N = 2 C0
	// - 1) stays far above float64's range, and products and quotients
	// cost a fraction of the exp and log per entry that the log domain
	// paid (they were a fifth of a run). A vector whose joint would leave
	// that range is computed in logs instead (E step).
	Rho    []float64
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
	num      []float64 // o x m, as Rho

	// The E step's powers: pow[b*m+a] is Rho[b*m+a] (Rho is that prefix,
	// see powers) and pow[powOff[b]+(k-2)*m+a] is Rho[b*m+a]^k for k from
	// 2 up to maxK[b], the largest count category b has in the data
	// (intCounts: every count is a whole number up to maxPowK; otherwise
	// powers come from math.Pow, into powScratch).
	pow        []float64
	powOff     []int32
	maxK       []int32
	intCounts  bool
	powScratch []float64
	// entOff[e] is where data entry e's column of rho^cnt starts in pow
	// (intCounts only): fixed by the data, so setData computes it once
	// instead of every step per entry.
	entOff []int32
	// keep lists the classes a vector's E step keeps (see step).
	keep []int32

	// Converged is set by Step when its M step reproduced the parameters it
	// started from bit for bit: every further step on the same data would
	// compute exactly the same responsibilities and parameters again, so a
	// caller may stop iterating without changing any result.
	Converged bool
	// PiMoved is the largest change of a class's pi in the last Step.
	PiMoved float64

	den []float64 // M step: each class's row denominator
}

// maxPowK bounds the counts the E step's power table covers (a round's
// counts are at most N).
const maxPowK = 64

// tinyJoint is where the E step leaves probabilities for logs: below it a
// vector's joint could reach float64's subnormals, where products lose
// precision (about 1e-308) before they lose the -40 nats that responsibilities
// keep (see step).
const tinyJoint = 1e-250

// expNeg40 is exp(-40): responsibilities below it times the largest are
// dropped (see step).
var expNeg40 = math.Exp(-40)

// denseLocalMax bounds C for the dense category index (4 bytes per category
// per workspace).
const denseLocalMax = 1 << 20

// SetClasses sets the class set and resets the category index.
func (em *EM) SetClasses(classes []int32, c int, alpha, beta float64) {
	em.Classes = append(em.Classes[:0], classes...)
	em.C, em.Alpha, em.Beta = c, alpha, beta
	if em.C <= denseLocalMax {
		if len(em.local) < em.C+1 { // + mapDense's spare slot
			em.local = make([]int32, em.C+1)
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

// mapCategories sets cats[e] to the local index of category ycat[e],
// registering new categories in Obs in order of first occurrence.
func (em *EM) mapCategories(ycat, cats []int32) {
	if em.C <= denseLocalMax {
		em.mapDense(ycat, cats)
		return
	}
	for e, c := range ycat {
		li, ok := em.localMap[c]
		if !ok {
			li = int32(len(em.Obs))
			em.localMap[c] = li
			em.Obs = append(em.Obs, c)
		}
		cats[e] = li
	}
}

// mapDense is mapCategories through the dense index, without a branch on
// whether a category is new: at large C most of a round's categories are
// (a uniform draw from a row's remainder), a coin the branch predictor lost
// about once per new category. Each category's slot in Obs is written
// whether it is new or not, and only a new one advances Obs's length. A
// known category's index is written to a spare slot past C, not back to its
// own: a store to its own slot made the next lookup of the same category
// wait for it, and at small C, where most categories repeat, that chain was
// slower than the branch had been.
func (em *EM) mapDense(ycat, cats []int32) {
	o := len(em.Obs)
	obs := slices.Grow(em.Obs, len(ycat))[:o+len(ycat)]
	spare := int32(em.C)
	local := em.local[:spare+1]
	cats = cats[:len(ycat)]
	for e, c := range ycat {
		li := local[c]
		var isNew int32
		if li == 0 {
			isNew = 1
		}
		obs[o] = c
		o += int(isNew)
		li |= int32(o) & -isNew        // a new category's index + 1 is Obs's new length
		at := spare ^ (spare^c)&-isNew // c when new, else spare
		local[at] = li
		cats[e] = li - 1
	}
	em.Obs = obs[:o]
}

// setData registers categories of y (global indices), maps them to local
// indices and notes each category's largest count for the E step's powers.
// Only the categories are copied: the other columns are y's own slices, so
// y must not change until the next setData (Round samples y, then fits it).
func (em *EM) setData(y *Counts) {
	d := &em.data
	em.Converged = false
	o0 := len(em.Obs)
	em.intCounts = true
	d.Off, d.Cnt, d.W, d.Trials = y.Off, y.Cnt, y.W, y.Trials
	// One pass maps each entry's category to its local index and notes
	// the category's largest count. maxK has room for every category the
	// data could add (a new one starts at 0), so the pass needs no check
	// for a new category; it is cut to the observed ones after.
	cats := resize(d.Cat, len(y.Cat))
	em.maxK = resize(em.maxK, o0+len(y.Cat))
	clear(em.maxK)
	maxK := em.maxK
	cnt := y.Cnt[:len(y.Cat)]
	em.mapCategories(y.Cat, cats)
	for e, li := range cats {
		// A whole count in [1, maxPowK]: int32(k) converts back to k
		// exactly only for a whole k in int32's range (NaN and huge k
		// fail too), one conversion each way where math.Trunc is a call
		// on CPUs without SSE4.1.
		k := cnt[e]
		ki := int32(k)
		if !(float64(ki) == k && ki >= 1 && ki <= maxPowK) {
			em.intCounts = false
			continue
		}
		maxK[li] = max(maxK[li], ki)
	}
	d.Cat = cats
	o := len(em.Obs)
	em.maxK = maxK[:o]
	if o > o0 && len(em.Rho) == len(em.Classes)*o0 && o0 > 0 {
		em.growObs(o0, o)
	}
	if em.intCounts {
		m := len(em.Classes)
		em.powOff = resize(em.powOff, o)
		n := o * m // the first powers are rho itself (see powers)
		for b, k := range em.maxK {
			em.powOff[b] = int32(n)
			// A category observed before but absent from this data (the
			// Code variant re-samples every step) has maxK 0 and needs no
			// powers; counting it as -1 of them overlapped the next
			// categories' powers.
			n += int(max(k, 1)-1) * m
		}
		em.pow = resize(em.pow, n)
		// Count 1 reads rho's own column, count k >= 2 its (k-2)th power
		// column: both offsets are computed and one is picked without a
		// branch (which count an entry has is data).
		entOff := resize(em.entOff, len(d.Cat))
		em.entOff = entOff
		powOff, m32 := em.powOff, int32(m)
		for e, c := range d.Cat {
			k := int32(d.Cnt[e])
			off := c * m32
			if p := powOff[c] + (k-2)*m32; k != 1 {
				off = p
			}
			entOff[e] = off
		}
	}
}

// growObs re-lays the rho table out for newly observed categories (the Code
// variant re-samples y every iteration): a new category had the shared
// unobserved probability, so it starts there.
func (em *EM) growObs(o0, o int) {
	m := len(em.Classes)
	if cap(em.Rho) < m*o {
		em.Rho = append(make([]float64, 0, m*o), em.Rho...)
	}
	em.Rho = em.Rho[:m*o]
	for a := 0; a < m; a++ {
		for b := o0; b < o; b++ {
			em.Rho[b*m+a] = em.Unseen[a]
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
	em.Rho = resize(em.Rho, m*o)
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
		// same probability, then the explicit ones.
		if row := rowOf(s, cl); row != nil {
			if n := em.C - len(row.Cat); n > 0 {
				un = row.Rem / float64(n)
			} else {
				un = 0
			}
			fillColumn(em.Rho, a, m, un)
			for e, cat := range row.Cat {
				if li := em.lookup(cat); li >= 0 {
					em.Rho[int(li)*m+a] = row.P[e]
				}
			}
		} else {
			fillColumn(em.Rho, a, m, un)
			if li := em.lookup(cl); li >= 0 {
				em.Rho[int(li)*m+a] = 1 - smooth
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
	em.Rho = resize(em.Rho, m*o)
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
			em.Rho[b*m+a] = v
			z += v
		}
		rest := float64(em.C - o)
		z += 0.5 * rest
		if !diagSeen && rest > 0 {
			z += 10 // the diagonal is among the unobserved categories
		}
		for b := 0; b < o; b++ {
			em.Rho[b*m+a] /= z
		}
		em.Unseen[a] = 0.5 / z
		if !diagSeen && rest > 0 {
			// Unobserved categories share one value: fold the diagonal's extra mass in.
			em.Unseen[a] = (0.5*rest + 10) / rest / z
		}
	}
}

// resize returns x with length n, reusing its storage when it can (the
// contents are not kept).
func resize[T any](x []T, n int) []T {
	if cap(x) < n {
		return make([]T, n)
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
	clear(em.sumG)
	clear(em.sumN)
	clear(em.num)
	em.powers()
	var obj float64
	if wantObj {
		obj = em.prior()
	}
	var wsum float64
	// Locals, not em's fields: stores through em would make the compiler
	// reload every slice header in the loops.
	gamma, pi, sumG, sumN, num := em.gamma[:m], em.Pi[:m], em.sumG[:m], em.sumN[:m], em.num
	em.keep = resize(em.keep, m)
	keep := em.keep[:m]
	pow, entOff := em.pow, em.entOff
	for v := 0; v < d.Len(); v++ {
		lo, hi := d.Off[v], d.Off[v+1]
		cat, cnt := d.Cat[lo:hi], d.Cnt[lo:hi]
		// gamma[a] = pi_a prod_e rho_a(cat_e)^cnt_e, multiplied in entry
		// order.
		var mxBits uint64
		if em.intCounts {
			mxBits = jointsInt(gamma, pi, pow, entOff[lo:hi])
		} else {
			copy(gamma, pi)
			for e, c := range cat {
				col := em.powCol(int(c), cnt[e])
				col = col[:len(gamma)]
				for a := range gamma {
					gamma[a] *= col[a]
				}
			}
			for _, g := range gamma {
				mxBits = max(mxBits, math.Float64bits(g))
			}
		}
		mx := math.Float64frombits(mxBits)
		var logMx float64 // log of the scale gamma is relative to
		if mx < tinyJoint {
			// Near underflow: the same joint in logs, relative to its
			// largest class.
			logMx = em.logJoint(gamma, cat, cnt)
			mx = 1
		}
		// A class below exp(-40) of the most responsible one holds less
		// than half an ulp of z: dropping it changes neither z nor any sum
		// it feeds; it is the common case (a vector of one class is far
		// from the others) and it keeps the M step's tables sparse. A
		// dropped class adds +0 to z, which leaves z's bits as skipping it
		// did.
		cutBits := math.Float64bits(mx * expNeg40)
		var z float64
		nk := 0
		for a, g := range gamma {
			gb := math.Float64bits(g)
			var in uint64
			if gb >= cutBits {
				in = 1
			}
			g = math.Float64frombits(gb & -in)
			gamma[a] = g
			z += g
			keep[nk] = int32(a)
			nk += int(in)
		}
		w := d.W[v]
		wsum += w
		if wantObj {
			obj += w * (logMx + math.Log(z))
		}
		trials := d.Trials[v]
		kept := keep[:nk]
		for _, a := range kept {
			g := w * gamma[a] / z
			gamma[a] = g
			sumG[a] += g
			sumN[a] += g * trials
		}
		// The counts' sums. Where most classes are kept, category by
		// category over every class, each category's row of num and its
		// count loaded once and no index through keep: a dropped class's
		// gamma is +0, and adding +0 leaves a cell (a sum of terms >= 0
		// from +0) as it was; every (category, class) cell gets its terms
		// in the same order as class by class (entry order within a
		// vector), so the sums keep their bits. 10% fewer instructions in
		// the step at C = 20, where a vector keeps about 9 of 16 classes.
		// A vector of one clear class keeps one or two, and there the
		// kept classes' loop over the entries costs less (a row slice per
		// category cost more than it saved: docs/PERFORMANCE.md).
		if 2*nk >= m {
			for e, c := range cat {
				ce := cnt[e]
				row := num[int(c)*m : int(c)*m+m]
				row = row[:len(gamma)]
				for a, g := range gamma {
					row[a] += g * ce
				}
			}
		} else {
			for _, a := range kept {
				g := gamma[a]
				for e, c := range cat {
					num[int(c)*m+int(a)] += g * cnt[e]
				}
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
	// category without responsibility-weighted counts from the class shares;
	// a row with no data and a flat prior has no unique MAP and stays
	// uniform.
	em.den = resize(em.den, m)
	allPos := true
	for a := 0; a < m; a++ {
		pi := (em.sumG[a] + a1) / piDen
		same = same && pi == em.Pi[a]
		em.PiMoved = max(em.PiMoved, math.Abs(pi-em.Pi[a]))
		em.Pi[a] = pi
		den := em.sumN[a] + float64(em.C)*b1
		em.den[a] = den
		u := 1 / float64(em.C)
		if den > 0 {
			u = b1 / den
		} else {
			allPos = false
		}
		same = same && em.Unseen[a] == u
		em.Unseen[a] = u
	}
	// Then the rho table, category by category (its o x m layout: one
	// contiguous column at a time; at large C, o runs to hundreds).
	den, unseen := em.den[:m], em.Unseen[:m]
	if allPos {
		// Every row has a positive denominator (the rule with beta > 1):
		// a category without counts has x = +0, and (+0 + b1) / den is
		// b1 / den bit for bit, the unseen value, so one formula serves
		// every entry without a branch on x (whether a category has counts
		// from a class is data, and the branch was mispredicted often).
		for b := 0; b < o; b++ {
			num, rho := em.num[b*m:b*m+m], em.Rho[b*m:b*m+m]
			num, rho = num[:len(den)], rho[:len(den)]
			for a, x := range num {
				r := (x + b1) / den[a]
				same = same && rho[a] == r
				rho[a] = r
			}
		}
		em.Converged = same
		return obj
	}
	for b := 0; b < o; b++ {
		num, rho := em.num[b*m:b*m+m], em.Rho[b*m:b*m+m]
		num, rho = num[:len(den)], rho[:len(den)]
		for a, x := range num {
			r := unseen[a]
			if x != 0 && den[a] > 0 {
				r = (x + b1) / den[a]
			}
			same = same && rho[a] == r
			rho[a] = r
		}
	}
	em.Converged = same
	return obj
}

// jointsInt sets gamma[a] = pi[a] * pow[offs[0]+a] * pow[offs[1]+a] * ...
// (one vector's joints, the E step with whole counts: each offset is an
// entry's column of rho^cnt) and returns the largest joint's bits. The
// joints are >= 0 and not NaN, so their bit patterns order as their values
// do: integer comparisons, which the compiler turns into conditional moves,
// find the largest without a branch per class.
//
// Four classes at a time, each product in a register and multiplied in
// entry order, so every joint has the same bits as multiplying the columns
// into gamma entry by entry, which cost a load and a store of gamma per
// multiply and was a fifth of the E step (the loop over classes inside the
// loop over entries).
func jointsInt(gamma, pi, pow []float64, offs []int32) uint64 {
	m := len(gamma)
	pi = pi[:m]
	var mx uint64
	a := 0
	for ; a+4 <= m; a += 4 {
		g0, g1, g2, g3 := pi[a], pi[a+1], pi[a+2], pi[a+3]
		for _, at := range offs {
			i := int(at) + a
			col := pow[i : i+4 : i+4]
			g0 *= col[0]
			g1 *= col[1]
			g2 *= col[2]
			g3 *= col[3]
		}
		gamma[a], gamma[a+1], gamma[a+2], gamma[a+3] = g0, g1, g2, g3
		mx = max(mx, math.Float64bits(g0), math.Float64bits(g1), math.Float64bits(g2), math.Float64bits(g3))
	}
	for ; a < m; a++ {
		g := pi[a]
		for _, at := range offs {
			g *= pow[int(at)+a]
		}
		gamma[a] = g
		mx = max(mx, math.Float64bits(g))
	}
	return mx
}

// powers fills the E step's power table from Rho (laid out by setData).
// Its first o x m values are Rho itself, the first powers: the M step
// writes there, so no step copies rho into the table (at large C, o runs to
// hundreds and most categories occur once). A Rho that InitFrom, InitCode or
// growObs placed elsewhere is moved in once.
func (em *EM) powers() {
	if !em.intCounts {
		return
	}
	m, o := em.sizes()
	if n := o * m; n > 0 && &em.Rho[0] != &em.pow[0] {
		copy(em.pow[:n], em.Rho[:n])
		em.Rho = em.pow[:n]
	}
	for b := 0; b < o; b++ {
		if em.maxK[b] < 2 {
			continue
		}
		base := em.pow[b*m : b*m+m]
		prev := base
		at := int(em.powOff[b])
		for k := 2; k <= int(em.maxK[b]); k++ {
			cur := em.pow[at : at+m]
			cur = cur[:len(base)]
			for a, r := range base {
				cur[a] = prev[a] * r
			}
			prev, at = cur, at+m
		}
	}
}

// powCol returns category b's column of rho^cnt over the m classes.
func (em *EM) powCol(b int, cnt float64) []float64 {
	m := len(em.Classes)
	if em.intCounts {
		at := b * m
		if cnt != 1 {
			at = int(em.powOff[b]) + (int(cnt)-2)*m
		}
		return em.pow[at : at+m]
	}
	em.powScratch = resize(em.powScratch, m)
	for a, r := range em.Rho[b*m : b*m+m] {
		em.powScratch[a] = math.Pow(r, cnt)
	}
	return em.powScratch
}

// logJoint sets gamma to one vector's joint relative to its largest class,
// computed in logs (the E step's path near underflow), and returns the log
// of that largest joint.
func (em *EM) logJoint(gamma []float64, cat []int32, cnt []float64) float64 {
	m := len(em.Classes)
	mx := math.Inf(-1)
	for a := range gamma {
		g := math.Log(em.Pi[a])
		for e, c := range cat {
			g += cnt[e] * math.Log(em.Rho[int(c)*m+a])
		}
		gamma[a] = g
		mx = max(mx, g)
	}
	if math.IsInf(mx, -1) {
		clear(gamma) // no class can have made the vector
		return 0
	}
	for a, g := range gamma {
		gamma[a] = math.Exp(g - mx)
	}
	return mx
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
				p += b1 * math.Log(em.Rho[b*m+a])
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
	rho := append([]float64(nil), em.Rho...)
	un := append([]float64(nil), em.Unseen...)
	obj := em.Step()
	copy(em.Pi, pi)
	copy(em.Rho, rho)
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
	// Each row gets room for every observed category; every entry is
	// written at the row's end and kept by advancing the row's length when
	// the class had counts there: no branch per (category, class), whose
	// outcome is data (at large C, o runs to hundreds). Class by class, with
	// the row in locals, entries come in category order as before.
	for a := 0; a < m; a++ {
		em.resultRow(&dst.Rows[a], a)
	}
}

// resultRow writes class a's fitted row into r (see Result).
func (em *EM) resultRow(r *Row, a int) {
	m, o := em.sizes()
	obs, num, rho := em.Obs[:o], em.num[:o*m], em.Rho[:o*m]
	cats, ps := resize(r.Cat, o), resize(r.P, o)
	cats, ps = cats[:len(obs)], ps[:len(obs)]
	n := 0
	for b, cat := range obs {
		x := num[b*m+a]
		cats[n], ps[n] = cat, rho[b*m+a]
		var in int
		if x != 0 {
			in = 1
		}
		n += in
	}
	r.Cat, r.P = cats[:n], ps[:n]
	r.Rem = em.Unseen[a] * float64(em.C-n)
}

// blendFit sets dst to Blend(own, fit, g) for the fit that Result would
// write, without writing it: each row of a class own holds is blended
// straight from the rho table, whose entries for the class are the
// observed categories it has counts for (Result's rule), and only a class
// own lacks gets Result's row. At large C a fitted row holds hundreds of
// entries, of which Truncate keeps MaxRowEntries: writing them out, then
// hashing the stored row's few categories to find their partners, cost a
// fifth of a round at C = 1000; the rho table's own category index finds
// them with one lookup each. The result is Blend's bit for bit: the same
// entries in the same order from the same expressions (TestBlendFit).
func (em *EM) blendFit(dst, own *State, g float64, sc *blendScratch) {
	dst.Reset()
	for k, cl := range own.Class {
		b := slices.Index(em.Classes, cl)
		var pb float64
		if b >= 0 {
			pb = em.Pi[b]
		}
		r := dst.add(cl, g*own.Pi[k]+(1-g)*pb)
		if b < 0 {
			r.copyFrom(&own.Rows[k])
			continue
		}
		em.blendFitRow(r, &own.Rows[k], b, g, sc)
	}
	for a, cl := range em.Classes {
		if rowOf(own, cl) != nil {
			continue
		}
		em.resultRow(dst.add(cl, (1-g)*em.Pi[a]), a)
	}
}

// blendFitRow is blendRow(dst, a, fitted row of class b, g, C) reading the
// fitted row from the tables (see blendFit).
func (em *EM) blendFitRow(dst, a *Row, b int, g float64, sc *blendScratch) {
	m, o := em.sizes()
	c := em.C
	obs, num, rho := em.Obs[:o], em.num[:o*m], em.Rho[:o*m]
	// a's entries first, in a's order, each with its fitted partner's local
	// index (-1: none, the fitted row's remainder share)...
	na := len(a.Cat)
	cats, ps := resize(dst.Cat, na+o), resize(dst.P, na+o)
	fitted := resize(sc.fitted, o)
	sc.fitted = fitted
	part := resize(sc.part, na)
	sc.part = part
	for e, cat := range a.Cat {
		part[e] = -1
		if j := em.lookup(cat); j >= 0 && num[int(j)*m+b] != 0 {
			part[e] = j
			fitted[j] = 1
		}
		cats[e] = cat
	}
	// ...then the fitted row's other entries, in category order, counting
	// the fitted row's entries for its remainder. Every category is
	// written and kept by advancing n (as in resultRow): whether a class
	// has counts at a category is data, a branch on it mispredicted.
	ua := a.probAt(-1, c)
	gu, h := g*ua, 1-g
	n, nb := na, 0
	for j, cat := range obs {
		var has int
		if num[j*m+b] != 0 {
			has = 1
		}
		cats[n], ps[n] = cat, gu+h*rho[j*m+b]
		nb += has
		n += has &^ int(fitted[j])
		fitted[j] = 0
	}
	dst.Cat, dst.P = cats[:n], ps[:n]
	// The fitted row's remainder and its per-category share, as Result and
	// probAt compute them.
	var ub float64
	if n := c - nb; n > 0 {
		ub = em.Unseen[b] * float64(n) / float64(n)
	}
	for e, j := range part {
		pb := ub
		if j >= 0 {
			pb = rho[int(j)*m+b]
		}
		ps[e] = g*a.P[e] + (1-g)*pb
	}
	if rest := c - len(dst.Cat); rest > 0 {
		dst.Rem = float64(rest) * (g*ua + (1-g)*ub)
	} else {
		dst.Rem = 0
	}
}
