package mixture

import "math"

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
