package crowd

import (
	"fmt"
	"math"
	"slices"
)

// Model is one M step's estimate: the class prior, the pooled confusion
// matrix and every annotator's confusion matrix, stored sparsely as the
// expected counts it has seen plus its prior (nothing per annotator is
// C x C).
//
// Row c of annotator a's matrix is the MAP estimate under a Dirichlet prior
// of weight Strength centred on mu_a, the pooled row adjusted to the
// annotator's own skill:
//
//	pi_a(c, l) = (N_a(c, l) + Strength * mu_a(c, l)) / (N_a(c) + Strength)
//
// with N_a(c, l) the expected number of items of true class c that a
// labelled l and P(c, l) = (sum_a N_a(c, l) + Smooth) / (sum_a N_a(c) + C Smooth).
//
// mu_a is a one-coin model nested between the pool and the annotator: its
// diagonal is the pooled one with the odds multiplied by
// odds(q_a) / odds(Accuracy), and its errors are spread as the pool's
// are, mu_a(c, l) = (1 - mu_a(c, c)) P(c, l) / (1 - P(c, c)); q_a (Skill)
// is the annotator's share of labels that are right, shrunk toward the
// pool's, Accuracy, by a Beta prior worth SkillStrength labels. So the three
// classical models are the ends of one hierarchy, weighed by evidence: an
// annotator with a handful of labels gets the pooled matrix (neither its
// accuracy nor its rows are known), one with some dozens its own accuracy
// (a one-coin model: one number is learnt from all its labels, where its
// C x C matrix would be noise), and one with hundreds per class its own
// matrix (Dawid-Skene). Both weights are chosen from the data (FitSkill,
// FitStrength). The pool alone cannot tell a spammer with three labels from
// an expert with three; the per-annotator matrix over 80 classes is
// unidentifiable from twenty labels; the skill layer is what lets a crowd of
// many light annotators be weighed at all.
type Model struct {
	C        int
	Strength float64
	// Accuracy is the pool's share of right labels: sum_c N(c, c) / N over
	// all annotators' expected counts. SkillStrength is the weight, in
	// labels, of the Beta prior that pulls each annotator's accuracy toward
	// it.
	Accuracy, SkillStrength float64
	// Prior is the class prior: ClassBalance / C plus (1 - ClassBalance)
	// times (sum_i T_i(c) + ClassPrior) / (n + C ClassPrior).
	Prior []float64
	// Pooled is the pooled matrix, row-major: P(c, l) = Pooled[c*C+l].
	Pooled []float64
	// Annotators, ascending by Key.
	Annotators []Annotator

	pooledT []float64 // Pooled transposed: P(c, l) = pooledT[l*C+c]
	errT    []float64 // P(c, l) / (1 - P(c, c)) at errT[l*C+c], 0 for c = l
	odds    []float64 // P(c, c) / (1 - P(c, c))
	index   map[int64]int
}

// Annotator is one annotator's part of a Model.
type Annotator struct {
	Key   int64
	Given int64
	// Row[c] is N_a(c): the expected number of items of class c it labelled.
	Row []float64
	// Label k of the distinct labels it gave (ascending) has the nonzero
	// counts N_a(Class[e], Labels[k]) = Count[e] for e in [Off[k], Off[k+1]).
	Labels []int32
	Off    []int32
	Class  []int32
	Count  []float64
	// Skill is q_a, its accuracy shrunk toward the pool's (Model.Accuracy).
	Skill float64

	inv      []float64 // 1 / (Row[c] + Strength)
	diag     []float64 // mu_a(c, c); nil: the pooled diagonal (Skill = Accuracy)
	right, n float64   // counts(): its expected right labels and labels
}

// Estimate is the M step: the model that maximises the posterior given the
// expected counts s.
func Estimate(s *Stats, p Params) *Model {
	C := s.C
	m := &Model{C: C, Strength: p.Strength, Prior: classPrior(s, p), Pooled: make([]float64, C*C), index: map[int64]int{}}
	for _, a := range s.Annotators() {
		an := Annotator{Key: a, Given: s.Given(a), Row: make([]float64, C)}
		s.Cells(a, func(c, l int32, q int64) {
			if len(an.Labels) == 0 || an.Labels[len(an.Labels)-1] != l {
				an.Labels = append(an.Labels, l)
				an.Off = append(an.Off, int32(len(an.Class)))
			}
			v := float64(q) / One
			an.Class = append(an.Class, c)
			an.Count = append(an.Count, v)
			an.Row[c] += v
			m.Pooled[int(c)*C+int(l)] += v
		})
		an.Off = append(an.Off, int32(len(an.Class)))
		m.Annotators = append(m.Annotators, an)
	}
	slices.SortFunc(m.Annotators, func(x, y Annotator) int { return cmpInt64(x.Key, y.Key) })
	for c := 0; c < C; c++ {
		row := m.Pooled[c*C : (c+1)*C]
		var n float64
		for l := range row {
			row[l] += p.Smooth
			n += row[l]
		}
		for l := range row {
			row[l] /= n
		}
	}
	var right, labels []float64
	var sr, sn float64
	m.skillCounts(func(r, n float64) {
		right, labels = append(right, r), append(labels, n)
		sr += r
		sn += n
	})
	// The pool's accuracy, smoothed like its matrix.
	m.Accuracy = (sr + p.Smooth) / (sn + 2*p.Smooth)
	m.SkillStrength = p.SkillStrength
	if p.SkillStrength == 0 {
		m.SkillStrength = FitSkill(m, MinStrength, MaxStrength)
	}
	for i := range m.Annotators {
		m.Annotators[i].Skill = (right[i] + m.SkillStrength*m.Accuracy) / (labels[i] + m.SkillStrength)
	}
	if p.Strength == 0 {
		m.Strength = 1
		m.finish()
		m.Strength = FitStrength(m, MinStrength, MaxStrength)
	}
	m.finish()
	return m
}

// skillCounts calls fn with every annotator's expected number of right
// labels and of labels.
func (m *Model) skillCounts(fn func(right, n float64)) {
	for i := range m.Annotators {
		fn(m.Annotators[i].counts())
	}
}

// counts are the annotator's expected numbers of right labels and of
// labels.
func (an *Annotator) counts() (right, n float64) {
	for k, l := range an.Labels {
		for e := an.Off[k]; e < an.Off[k+1]; e++ {
			if an.Class[e] == l {
				right += an.Count[e]
			}
			n += an.Count[e]
		}
	}
	return right, n
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// finish builds the derived lookups.
func (m *Model) finish() {
	C := m.C
	m.pooledT = make([]float64, C*C)
	for c := 0; c < C; c++ {
		for l := 0; l < C; l++ {
			m.pooledT[l*C+c] = m.Pooled[c*C+l]
		}
	}
	m.errT = make([]float64, C*C)
	m.odds = make([]float64, C)
	for c := 0; c < C; c++ {
		pcc := m.Pooled[c*C+c]
		m.odds[c] = pcc / (1 - pcc)
		for l := 0; l < C; l++ {
			if l != c {
				m.errT[l*C+c] = m.Pooled[c*C+l] / (1 - pcc)
			}
		}
	}
	m.index = make(map[int64]int, len(m.Annotators))
	for i := range m.Annotators {
		an := &m.Annotators[i]
		m.index[an.Key] = i
		an.inv = make([]float64, C)
		for c, r := range an.Row {
			an.inv[c] = 1 / (r + m.Strength)
		}
		an.diag = m.skillDiag(an.diag[:0], an.Skill)
		an.right, an.n = an.counts()
	}
}

// skillDiag appends mu(c, c) for an annotator of skill q to dst: the
// pooled diagonal with its odds scaled by odds(q) / odds(Accuracy). It
// returns nil for q = Accuracy (the pooled diagonal itself).
func (m *Model) skillDiag(dst []float64, q float64) []float64 {
	if q == m.Accuracy || m.Accuracy <= 0 || m.Accuracy >= 1 {
		return nil
	}
	k := (q / (1 - q)) / (m.Accuracy / (1 - m.Accuracy))
	for _, o := range m.odds {
		dst = append(dst, k*o/(1+k*o))
	}
	return dst
}

// Mean sets dst[c] = mu_a(c, l), the prior mean of annotator a's column l
// (the pooled column for an annotator the model has not seen).
func (m *Model) Mean(dst []float64, a int64, l int32) {
	m.mean(dst, m.Annotator(a), l)
}

func (m *Model) mean(dst []float64, an *Annotator, l int32) {
	if an == nil {
		m.meanDiag(dst, nil, l)
		return
	}
	m.meanDiag(dst, an.diag, l)
}

// meanDiag sets dst to column l of the one-coin matrix of diagonal diag
// (nil: the pooled matrix).
func (m *Model) meanDiag(dst, diag []float64, l int32) {
	C := m.C
	if diag == nil {
		copy(dst, m.pooledT[int(l)*C:(int(l)+1)*C])
		return
	}
	et := m.errT[int(l)*C : (int(l)+1)*C]
	for c := range dst {
		dst[c] = (1 - diag[c]) * et[c]
	}
	dst[l] = diag[l]
}

// Annotator returns annotator a's part of the model, nil for an annotator
// the statistics never saw (its matrix is the pooled one).
func (m *Model) Annotator(a int64) *Annotator {
	if i, ok := m.index[a]; ok {
		return &m.Annotators[i]
	}
	return nil
}

// Column sets dst[c] = pi_a(c, l) for every class c.
func (m *Model) Column(dst []float64, a int64, l int32) {
	C := m.C
	if len(dst) != C || l < 0 || int(l) >= C {
		panic(fmt.Sprintf("crowd: Column: len(dst) = %d, label %d, C = %d", len(dst), l, C))
	}
	an := m.Annotator(a)
	m.mean(dst, an, l)
	if an == nil {
		return
	}
	s := m.Strength
	for c := range dst {
		dst[c] *= s * an.inv[c]
	}
	if k, ok := slices.BinarySearch(an.Labels, l); ok {
		for e := an.Off[k]; e < an.Off[k+1]; e++ {
			c := an.Class[e]
			dst[c] += an.Count[e] * an.inv[c]
		}
	}
}

// Matrix returns annotator a's confusion matrix, dense and row-major
// (row c sums to 1): for reports and tests, not for the E step.
func (m *Model) Matrix(a int64) []float64 {
	C := m.C
	out := make([]float64, C*C)
	col := make([]float64, C)
	for l := 0; l < C; l++ {
		m.Column(col, a, int32(l))
		for c, v := range col {
			out[c*C+l] = v
		}
	}
	return out
}

// Scratch is reusable workspace for Posterior and HeldOut.
type Scratch struct{ col, lcol, tot, own, diag []float64 }

// Posterior is the E step for one item: dst[c] is proportional to
// prior[c] * prod_k pi_{ann[k]}(c, lab[k]), normalised. A nil prior means
// the class prior. The product is taken in the order given; callers pass
// annotations in a fixed order (ascending annotator) so that the result does
// not depend on how the input was sharded.
func (m *Model) Posterior(dst, prior []float64, ann []int64, lab []int32, w *Scratch) {
	C := m.C
	if prior == nil {
		prior = m.Prior
	}
	if len(dst) != C || len(prior) != C || len(ann) != len(lab) {
		panic(fmt.Sprintf("crowd: Posterior: len(dst) = %d, len(prior) = %d, C = %d, %d annotators for %d labels", len(dst), len(prior), C, len(ann), len(lab)))
	}
	if len(w.col) != C {
		w.col = make([]float64, C)
	}
	copy(dst, prior)
	normalise(dst)
	for k, a := range ann {
		m.Column(w.col, a, lab[k])
		for c, v := range w.col {
			dst[c] *= v
		}
		if !normalise(dst) {
			// Every class vetoed (only with a degenerate prior): start
			// again from the class prior.
			copy(dst, m.Prior)
			for k2 := 0; k2 <= k; k2++ {
				m.Column(w.col, ann[k2], lab[k2])
				for c, v := range w.col {
					dst[c] *= v
				}
				normalise(dst)
			}
		}
	}
}

// normalise scales x to sum 1, reporting false (and leaving x uniform) when
// its sum is not positive and finite.
func normalise(x []float64) bool {
	var s float64
	for _, v := range x {
		s += v
	}
	if !(s > 0) || math.IsInf(s, 0) {
		for i := range x {
			x[i] = 1 / float64(len(x))
		}
		return false
	}
	inv := 1 / s
	for i := range x {
		x[i] *= inv
	}
	return true
}
