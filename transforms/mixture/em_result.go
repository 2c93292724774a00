package mixture

import "slices"

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
