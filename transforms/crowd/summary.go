package crowd

// Summary describes one annotator from its estimated matrix pi_a, weighting
// the true classes by w_c, the share of its labels that fell on items of
// class c (the class prior for an annotator without any).
type Summary struct {
	Key   int64
	Given int64
	// Accuracy is sum_c w_c pi_a(c, c): the estimated share of its labels
	// that are the true class.
	Accuracy float64
	// Diagonal is pi_a(c, c) for every class c.
	Diagonal []float64
	// Lift is how much its label improves a guess of the true class, as a
	// share of what a perfect annotator's would: with D = sum_l max_c w_c
	// pi_a(c, l) (the accuracy of the best guess from its label) and
	// B = max_c w_c (of the best guess without it), (D - B) / (1 - B). It is
	// 0 for a spammer, whose rows are all equal (its label is independent of
	// the truth), and 1 for an annotator whose label determines the class,
	// whether or not it is the right one.
	Lift float64
	// Misdirected is the share of its labels l whose most likely true class
	// (argmax_c w_c pi_a(c, l)) is not l.
	Misdirected float64
	// Spammer: Lift < Params.SpammerLift. Adversary: not a spammer, and most
	// of its labels point to another class (Misdirected > 1/2): its labels
	// are informative, but not literally.
	Spammer, Adversary bool
	// TooFew: it gave fewer than Params.FlagLabels labels, too few to judge;
	// it is then neither a spammer nor an adversary, whatever its estimates
	// say (they are mostly the prior's).
	TooFew bool
}

// Summarise describes every annotator of m, in ascending key order.
func (m *Model) Summarise(p Params) []Summary {
	C := m.C
	out := make([]Summary, len(m.Annotators))
	w := make([]float64, C)
	for i := range m.Annotators {
		an := &m.Annotators[i]
		var tot float64
		for _, r := range an.Row {
			tot += r
		}
		if tot > 0 {
			for c, r := range an.Row {
				w[c] = r / tot
			}
		} else {
			copy(w, m.Prior)
		}
		pi := m.Matrix(an.Key)
		s := Summary{Key: an.Key, Given: an.Given, Diagonal: make([]float64, C)}
		var best float64
		for c := 0; c < C; c++ {
			s.Diagonal[c] = pi[c*C+c]
			s.Accuracy += w[c] * pi[c*C+c]
			best = max(best, w[c])
		}
		var d float64
		for l := 0; l < C; l++ {
			var top, mass float64
			arg := -1
			for c := 0; c < C; c++ {
				v := w[c] * pi[c*C+l]
				mass += v
				if v > top {
					top, arg = v, c
				}
			}
			d += top
			if arg != l {
				s.Misdirected += mass
			}
		}
		if best < 1 {
			s.Lift = (d - best) / (1 - best)
		}
		s.TooFew = an.Given < int64(p.FlagLabels)
		s.Spammer = !s.TooFew && s.Lift < p.SpammerLift
		s.Adversary = !s.TooFew && !s.Spammer && s.Misdirected > 0.5
		out[i] = s
	}
	return out
}
