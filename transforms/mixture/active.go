package mixture

import "math"

// Distance is the total variation distance between the joint distributions
// pi(k) rho_k(y) of two states over c categories: half the summed absolute
// difference over every (true class, noisy label) pair, in [0, 1] for
// normalised states. It bounds how much a state's change can move anything
// sampled from it: the round's mixture p~(y) is a weighted sum of its
// components' joints, so a component that moved by d moves one draw's
// category by at most its weight times d. The rounds use it to tell which
// items' inputs changed (Params.ActiveTol); an empty state is all-zero, so
// its distance to a normalised one is 1/2.
func Distance(a, b *State, c int) float64 {
	var d float64
	for k, cl := range a.Class {
		rb := rowOf(b, cl)
		if rb == nil {
			d += a.Pi[k] * rowMass(&a.Rows[k], c)
			continue
		}
		d += rowDistance(a.Pi[k], &a.Rows[k], b.ProbOf(cl), rb, c)
	}
	for k, cl := range b.Class {
		if rowOf(a, cl) == nil {
			d += b.Pi[k] * rowMass(&b.Rows[k], c)
		}
	}
	return d / 2
}

// rowMass is a row's total probability (1 for a normalised row).
func rowMass(r *Row, c int) float64 {
	m := r.Rem
	if len(r.Cat) >= c {
		m = 0
	}
	for _, p := range r.P {
		m += p
	}
	return m
}

// rowDistance is sum_y |pa ra(y) - pb rb(y)| over c categories: the
// explicit categories of either row one by one, the categories explicit in
// neither at once (each row spreads its remainder evenly over them).
func rowDistance(pa float64, ra *Row, pb float64, rb *Row, c int) float64 {
	var d float64
	union := len(ra.Cat)
	for e, cat := range ra.Cat {
		d += math.Abs(pa*ra.P[e] - pb*rb.Prob(cat, c))
	}
	for e, cat := range rb.Cat {
		if containsClass(ra.Cat, cat) {
			continue
		}
		union++
		d += math.Abs(pa*ra.Prob(cat, c) - pb*rb.P[e])
	}
	if rest := c - union; rest > 0 {
		var ua, ub float64
		if n := c - len(ra.Cat); n > 0 {
			ua = ra.Rem / float64(n)
		}
		if n := c - len(rb.Cat); n > 0 {
			ub = rb.Rem / float64(n)
		}
		d += float64(rest) * math.Abs(pa*ua-pb*ub)
	}
	return d
}
