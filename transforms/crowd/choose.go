package crowd

import (
	"fmt"
	"math"
	"slices"
)

// Choice is the annotator model whose posteriors a fit returns: the one the
// crowd's labels support (Evidence.Choice). The three are nested, each the
// one before with more parameters: the vote has one number, the pool a C x C
// matrix, the annotators' model one per annotator (shrunk toward the pool).
type Choice int8

const (
	// Vote is one symmetric one-coin matrix for every annotator
	// (EstimateVote): the majority vote, its ties broken by the class prior.
	Vote Choice = iota
	// Pooled is the annotators' model's pooled matrix for every annotator
	// (Model.Pool): one class-conditional confusion for the whole crowd.
	Pooled
	// Annotators is Model: every annotator its own rows and skill, shrunk
	// toward the pool's by evidence.
	Annotators
	numChoices
)

func (c Choice) String() string {
	switch c {
	case Vote:
		return "vote"
	case Pooled:
		return "pooled"
	case Annotators:
		return "annotators"
	}
	return fmt.Sprintf("Choice(%d)", int(c))
}

// Pool is m with its annotators forgotten: every annotator gets the pooled
// matrix, under m's class prior.
func (m *Model) Pool() *Model {
	p := &Model{C: m.C, Strength: m.Strength, Accuracy: m.Accuracy, SkillStrength: m.SkillStrength,
		Prior: m.Prior, Pooled: m.Pooled, index: map[int64]int{}}
	p.finish()
	return p
}

// EstimateVote is the simplest model a crowd's labels define: every
// annotator labels an item of class c as c with probability q and as each
// other class with probability (1-q)/(C-1), with the class prior of
// Estimate. q is the moment estimate from how often two labels of one item
// agree, A = q^2 + (1-q)^2/(C-1) (Stats.Agree and Pairs, with one agreeing
// pseudo-pair: where no item has two labels, the labels are believed), at
// most 1 - Smooth so that no label vetoes a class. Its posterior's argmax
// is the majority vote wherever the vote is not tied and the class prior
// is near uniform; it has no per-annotator parameter to overfit. It has no
// Annotators: every key gets Pooled (Column).
func EstimateVote(s *Stats, p Params) *Model {
	C := s.C
	m := &Model{C: C, Strength: p.Strength, Prior: classPrior(s, p), Pooled: make([]float64, C*C), index: map[int64]int{}}
	a := float64(s.Agree+1) / float64(s.Pairs+1)
	q := VoteAccuracy(a, C)
	q = min(q, 1-p.Smooth)
	for c := 0; c < C; c++ {
		for l := 0; l < C; l++ {
			m.Pooled[c*C+l] = (1 - q) / float64(C-1)
		}
		m.Pooled[c*C+c] = q
	}
	m.Accuracy = q
	m.finish()
	return m
}

// VoteAccuracy solves A = q^2 + (1-q)^2/(C-1) for q >= 1/C: the accuracy
// of C-class one-coin annotators whose labels of one item agree at rate A
// (1/C where they agree no more than chance would).
func VoteAccuracy(a float64, C int) float64 {
	c := float64(C)
	d := 1 - c + c*(c-1)*a
	if d <= 0 {
		return 1 / c
	}
	return min(1, (1+math.Sqrt(d))/c)
}

// classPrior is the M step's class prior: ClassBalance / C plus
// (1 - ClassBalance) times (sum_i T_i(c) + ClassPrior) / (n + C ClassPrior).
func classPrior(s *Stats, p Params) []float64 {
	prior := make([]float64, s.C)
	var tot float64
	for c, v := range s.Class {
		prior[c] = float64(v)/One + p.ClassPrior
		tot += prior[c]
	}
	for c := range prior {
		prior[c] = (1-p.ClassBalance)*prior[c]/tot + p.ClassBalance/float64(s.C)
	}
	return prior
}

// ScoreUnit and SquareUnit are the fixed-point units of Evidence: its sums
// do not depend on the order a runner merges them in, as Stats' do not.
const (
	ScoreUnit  = 1 << 16
	SquareUnit = 1 << 8
)

// Evidence compares the three models on held-out labels: over the items
// with at least two labels, the log-probability of each label given the
// item's other labels (Model.HeldOut), under the annotators' model with the
// item left out of its annotators' counts, under the pool and under the
// vote. An item with one label says nothing about whom to believe: any
// confusion of its annotator fits it as well as the identity does, so no
// model is identified by it and such items are not scored.
type Evidence struct {
	// Items scored (at least two labels).
	Items int64
	// Score[c] is the summed held-out log-likelihood under Choice c, in
	// units of 1/ScoreUnit nats.
	Score [numChoices]int64
	// Square[c] is the sum over items of the squared difference between
	// the scores of Choice c and of the next simpler one (c-1; Square[0]:
	// Annotators and Vote), each rounded to 1/SquareUnit nats, in units of
	// 1/SquareUnit^2.
	Square [numChoices]int64
}

// Add scores one item: its held-out log-likelihoods under each Choice.
func (e *Evidence) Add(ll [numChoices]float64) {
	e.Items++
	for c, v := range ll {
		e.Score[c] += int64(math.Round(v * ScoreUnit))
		o := ll[(c+int(numChoices)-1)%int(numChoices)]
		d := int64(math.Round((v - o) * SquareUnit))
		e.Square[c] += d * d
	}
}

// Merge adds o into e.
func (e *Evidence) Merge(o Evidence) {
	e.Items += o.Items
	for c := range e.Score {
		e.Score[c] += o.Score[c]
		e.Square[c] += o.Square[c]
	}
}

// Gain is how many nats Choice c gains over the next simpler one (c-1; for
// Vote, Annotators over Vote) on the held-out labels, in total, and its
// standard error from the items' spread.
func (e Evidence) Gain(c Choice) (gain, se float64) {
	if e.Items == 0 {
		return 0, 0
	}
	o := (c + numChoices - 1) % numChoices
	gain = float64(e.Score[c]-e.Score[o]) / ScoreUnit
	if c == Vote {
		gain = -gain
	}
	n := float64(e.Items)
	mean := gain / n
	v := float64(e.Square[c])/(SquareUnit*SquareUnit)/n - mean*mean
	return gain, math.Sqrt(max(0, v) * n)
}

// Choice is the model the labels support: from the vote up, each richer
// model is taken where it predicts the held-out labels better than the one
// below it by more than one standard error of the difference (the simpler
// model wins what the data cannot tell apart). Where no item has two labels
// nothing tells an annotator's confusion from its items' classes, and the
// vote keeps every single label.
func (e Evidence) Choice() Choice {
	ch := Vote
	for c := Pooled; c < numChoices; c++ {
		gain, se := e.Gain(c)
		if e.Items == 0 || gain <= se {
			break
		}
		ch = c
	}
	return ch
}

// HeldOut is sum_k log p(lab[k] | the other labels of the item) under m, the
// item's posterior's class prior m.Prior. own is the item's posterior as
// m's statistics counted it (Stats.Add): its counts are taken out of its
// annotators' rows and skills before they predict its labels, so that an
// annotator of few labels does not predict the labels it was fitted to
// (the pooled matrix, the pool's accuracy and the weights are left as they
// are: one item moves them by one part in the crowd). nil: the item is
// not in m's statistics (the vote's single parameter is left as is). It
// needs at least two labels.
func (m *Model) HeldOut(ann []int64, lab []int32, own []float64, w *Scratch) float64 {
	C, n := m.C, len(lab)
	if n < 2 || len(ann) != n || (own != nil && len(own) != C) {
		panic(fmt.Sprintf("crowd: HeldOut: %d annotators, %d labels, %d posteriors for C = %d", len(ann), n, len(own), C))
	}
	if len(w.col) != C {
		w.col = make([]float64, C)
	}
	w.lcol = slices.Grow(w.lcol[:0], n*C)[:n*C]
	w.tot = slices.Grow(w.tot[:0], C)[:C]
	if own != nil {
		w.own = slices.Grow(w.own[:0], C)[:C]
		for c, v := range own {
			w.own[c] = float64(Quantize(v)) / One
		}
	}
	for c := range w.tot {
		w.tot[c] = math.Log(m.Prior[c])
	}
	for k := range lab {
		lc := w.lcol[k*C : (k+1)*C]
		if own == nil {
			m.Column(w.col, ann[k], lab[k])
		} else {
			m.columnWithout(ann, lab, k, w)
		}
		for c, v := range w.col {
			lc[c] = math.Log(v)
			w.tot[c] += lc[c]
		}
	}
	all := logSumExp(w.tot)
	var ll float64
	for k := range lab {
		lc := w.lcol[k*C : (k+1)*C]
		top := math.Inf(-1)
		for c, v := range w.tot {
			top = max(top, v-lc[c])
		}
		var s float64
		for c, v := range w.tot {
			s += math.Exp(v - lc[c] - top)
		}
		ll += all - (top + math.Log(s))
	}
	return ll
}

// columnWithout sets w.col to annotator ann[k]'s column lab[k] with the
// item's counts (w.own, once per annotation of ann[k] on the item) taken
// out of its rows and of its skill.
func (m *Model) columnWithout(ann []int64, lab []int32, k int, w *Scratch) {
	a, l := ann[k], lab[k]
	an := m.Annotator(a)
	if an == nil {
		m.Column(w.col, a, l)
		return
	}
	var mine, same, right float64
	for j, b := range ann {
		if b != a {
			continue
		}
		mine++
		right += w.own[lab[j]]
		if lab[j] == l {
			same++
		}
	}
	var mass float64
	for _, v := range w.own {
		mass += v
	}
	q := (max(0, an.right-right) + m.SkillStrength*m.Accuracy) / (max(0, an.n-mine*mass) + m.SkillStrength)
	w.diag = m.skillDiag(w.diag[:0], q)
	m.meanDiag(w.col, w.diag, l)
	s := m.Strength
	for c := range w.col {
		w.col[c] *= s
	}
	if i, ok := slices.BinarySearch(an.Labels, l); ok {
		for e := an.Off[i]; e < an.Off[i+1]; e++ {
			c := an.Class[e]
			w.col[c] += max(0, an.Count[e]-same*w.own[c])
		}
	}
	for c := range w.col {
		w.col[c] /= max(0, an.Row[c]-mine*w.own[c]) + s
	}
}

func logSumExp(x []float64) float64 {
	top := math.Inf(-1)
	for _, v := range x {
		top = max(top, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - top)
	}
	return top + math.Log(s)
}
