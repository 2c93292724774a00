package mixture

import "math"

// PooledScorer computes items' posteriors under a fitted Pooled, one item
// at a time: the start of relabel run's stages and of the in-process
// engine, which both fit the model once (FitPooled) and then score every
// item, fitted or not, with it. Not safe for concurrent use (it keeps the
// item's evidence); Pooled.Scorer makes one per goroutine.
type PooledScorer struct {
	m                      *Pooled
	logT, logOwn, logPrior []float64
	ev, own                []float64
	evRows, ownRows        sparseRows
}

// Scorer returns a scorer of m.
func (m *Pooled) Scorer() *PooledScorer {
	s := &PooledScorer{m: m, logT: logs(m.T), logPrior: logs(m.Prior), ev: make([]float64, m.C)}
	if m.TOwn != nil {
		s.logOwn, s.own = logs(m.TOwn), make([]float64, m.C)
	}
	return s
}

func logs(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = math.Log(v)
	}
	return y
}

// Posterior sets q (length C) to the posterior over clean classes of an
// item with the given labels and the k neighbours whose labels
// neighbour(j) returns (ok false: no neighbour j), reading the evidence as
// FitPooled does (own labels through TOwn where the fit split, a
// neighbour's labels as shares of one), so that on a fitted item it is the
// fit's own last E step.
func (s *PooledScorer) Posterior(q []float64, labels []int32, k int, neighbour func(j int) ([]int32, bool)) {
	c := s.m.C
	clear(s.ev)
	var own []float64
	if s.own != nil {
		own = s.own
		clear(own)
		addLabels(own, labels, false, c)
	} else {
		addLabels(s.ev, labels, false, c)
	}
	for j := range k {
		if l, ok := neighbour(j); ok {
			addLabels(s.ev, l, true, c)
		}
	}
	s.evRows.reset()
	s.evRows.add(s.ev)
	evIdx, evVal := s.evRows.row(0)
	var ownIdx []int32
	var ownVal []float64
	if own != nil {
		s.ownRows.reset()
		s.ownRows.add(own)
		ownIdx, ownVal = s.ownRows.row(0)
	}
	eStep(q, evIdx, evVal, ownIdx, ownVal, s.logT, s.logOwn, s.logPrior)
}

// OwnPosterior sets q to the posterior over clean classes of an item's own
// labels under the pooled transition alone (TOwn where the fit split the
// evidence, else T; no neighbour), keeping only the
// classes above the uniform 1/C (the rest renormalised away; the most
// probable always stays): under symmetric noise that is the given label,
// under pair-flip noise the label and the class it flips from, so the
// rounds that follow weigh the neighbours once, not twice.
func (m *Pooled) OwnPosterior(q []float64, labels []int32) {
	c := m.C
	tr := m.LabelTransition()
	for k := range q {
		v := math.Log(m.Prior[k])
		for _, l := range labels {
			if l >= 0 && int(l) < c {
				v += math.Log(tr[k*c+int(l)])
			}
		}
		q[k] = v
	}
	top := math.Inf(-1)
	for _, v := range q {
		top = max(top, v)
	}
	s := 0.0
	for k, v := range q {
		q[k] = math.Exp(v - top)
		s += q[k]
	}
	kept := 0.0
	for k := range q {
		q[k] /= s
		if q[k] <= 1/float64(c) && q[k] < 1 {
			q[k] = 0
		}
		kept += q[k]
	}
	if kept == 0 { // uniform: every class at 1/C
		for k := range q {
			q[k] = 1 / float64(c)
		}
		return
	}
	for k := range q {
		q[k] /= kept
	}
}
