package mixture

import (
	"fmt"
	"math"

	"github.com/relabel/relabel/internal/pool"
)

// Pooled is the class-level transition every item shares, estimated by
// empirical Bayes over the whole dataset: the labels of an item
// and of its K neighbours are treated as noisy labels of the item's clean
// class, drawn through one C x C matrix T(c, l) = p(label l | clean class c),
// and T is fitted by EM as Dawid and Skene (1979) fit an annotator's
// confusion matrix, with the neighbourhood as the one annotator. One
// neighbourhood (K + 1 labels) cannot identify a per-item transition (the
// mixture needs 2 C - 1 labels), but pooled over every item the class-level
// one is identified, and with it a neighbourhood holding labels c and c + 1
// under pair-flip noise points to c whatever its majority says.
//
// transforms/crowd fits the same model for real annotators; it was not
// reused because its items are keyed by annotator id and its E step
// takes a neighbour prior of posteriors, where here the neighbours' labels
// are the annotations themselves.
type Pooled struct {
	// C is the number of classes.
	C int
	// T is row-major C x C: T[c*C+l] = p(label l | clean class c).
	T []float64
	// TOwn, when the fit splits the evidence (PooledInput.SplitOwn), is
	// the transition of an item's own labels, fitted apart from T (which
	// then reads only the neighbours' labels): the neighbours' labels carry
	// the label noise and the neighbourhood's own confusions (an item's
	// neighbour of a nearby class), its own label only the label noise.
	// nil when the fit does not split.
	TOwn []float64
	// LogLik is the log-likelihood of every item's evidence under the
	// fitted model (the last E step's), up to the multinomial coefficients:
	// fits from different starts compare by it.
	LogLik float64
	// Prior is the class prior of the E step (half uniform, half fitted:
	// EM's own class prior is self-reinforcing).
	Prior []float64
	// Iters is the number of EM steps the fit ran (at most its iters; fewer
	// where tol stopped it).
	Iters int
}

// PooledInput is what the fit reads: item i's given labels are
// Labels[LabelOff[i]:LabelOff[i+1]] (negative: unlabelled), its neighbours
// Index[i*K:(i+1)*K] (item indices, negative: none).
type PooledInput struct {
	N, K, C  int
	Labels   []int32
	LabelOff []int32
	Index    []int32
	// SplitOwn fits the item's own labels through their own matrix
	// (Pooled.TOwn), apart from its neighbours' (Pooled.T), as Dawid-Skene
	// fits two annotators.
	SplitOwn bool
	// NLabels and NLabelOff, when NLabelOff is set, hold the labels Index
	// points into (row j: NLabels[NLabelOff[j]:NLabelOff[j+1]]), so that
	// the fitted items can be a sample of the items their neighbours are
	// (PooledSampleCap); unset, Index points at the fitted items.
	NLabels   []int32
	NLabelOff []int32
}

// neighbourLabels is row j of the labels Index points into.
func (in *PooledInput) neighbourLabels(j int32) []int32 {
	if in.NLabelOff != nil {
		return in.NLabels[in.NLabelOff[j]:in.NLabelOff[j+1]]
	}
	return in.Labels[in.LabelOff[j]:in.LabelOff[j+1]]
}

// FitPooled fits T by at most iters EM steps, starting from the soft vote
// of each item's evidence, and returns the model and the posterior over
// clean classes of every item (row-major n x C). With tol > 0 it stops
// after the first step (past the first) whose M step moved no entry of T
// (nor of TOwn) by more than tol, as Params.EMTol stops a round's EM on
// its posteriors: EM's own log-likelihood is no test here, since the
// half-fitted prior makes it a MAP objective that can dip by 1e-9 per item
// near the optimum. tol 0 runs all iters steps. Deterministic: sums run in
// item order, and the stop reads only those sums.
func FitPooled(in PooledInput, iters int, tol float64) (*Pooled, []float64, error) {
	rows := in.N
	if in.NLabelOff != nil {
		rows = len(in.NLabelOff) - 1
	}
	bad := false
	for _, j := range in.Index {
		bad = bad || int(j) >= rows
	}
	if in.C < 2 || in.K < 0 || len(in.LabelOff) != in.N+1 || len(in.Index) != in.N*in.K || iters < 1 || bad || !(tol >= 0 && tol < 1) {
		return nil, nil, fmt.Errorf("mixture: pooled fit: n %d, K %d, C %d, %d offsets, %d neighbours, %d iterations, tolerance %g",
			in.N, in.K, in.C, len(in.LabelOff), len(in.Index), iters, tol)
	}
	c := in.C
	// ev holds item i's evidence, its own labels and its neighbours' (a
	// neighbour with several labels counts once, by their shares); with
	// SplitOwn, own holds the own labels apart. Sparse: an item's K + 1
	// labels touch a few of the C classes, and the E and M steps' cost is
	// in these sums (C x nonzero rather than C x C per item).
	var ev, own sparseRows
	dense := make([]float64, c)
	var ownDense []float64
	if in.SplitOwn {
		ownDense = make([]float64, c)
	}
	for i := range in.N {
		clear(dense)
		labels := in.Labels[in.LabelOff[i]:in.LabelOff[i+1]]
		if ownDense != nil {
			clear(ownDense)
			addLabels(ownDense, labels, false, c)
			own.add(ownDense)
		} else {
			addLabels(dense, labels, false, c)
		}
		for _, j := range in.Index[i*in.K : (i+1)*in.K] {
			if j >= 0 {
				addLabels(dense, in.neighbourLabels(j), true, c)
			}
		}
		ev.add(dense)
	}
	post := make([]float64, in.N*c)
	for i := range in.N { // soft vote
		q := post[i*c : (i+1)*c]
		clear(dense)
		ev.addTo(dense, i)
		if ownDense != nil {
			own.addTo(dense, i)
		}
		s := 0.0
		for _, v := range dense {
			s += v
		}
		for l, v := range dense {
			if s > 0 {
				q[l] = v / s
			} else {
				q[l] = 1 / float64(c)
			}
		}
	}
	m := &Pooled{C: c, T: make([]float64, c*c), Prior: make([]float64, c)}
	logT := make([]float64, c*c)
	logPrior := make([]float64, c)
	var ownM *Pooled
	var logOwn []float64
	if ownDense != nil {
		ownM = &Pooled{C: c, T: make([]float64, c*c), Prior: make([]float64, c)}
		logOwn = make([]float64, c*c)
	}
	ll := make([]float64, in.N)
	var prevT, prevOwn []float64
	if tol > 0 {
		prevT = make([]float64, c*c)
		if ownM != nil {
			prevOwn = make([]float64, c*c)
		}
	}
	for it := 0; it < iters; it++ {
		copy(prevT, m.T)
		if ownM != nil {
			copy(prevOwn, ownM.T)
		}
		m.mStep(&ev, post, in.N)
		moved := maxMove(prevT, m.T)
		for x, v := range m.T {
			logT[x] = math.Log(v)
		}
		for k, v := range m.Prior {
			logPrior[k] = math.Log(v)
		}
		if ownM != nil {
			ownM.mStep(&own, post, in.N)
			moved = max(moved, maxMove(prevOwn, ownM.T))
			for x, v := range ownM.T {
				logOwn[x] = math.Log(v)
			}
		}
		// Items' E steps are independent: they run on all cores, and the
		// log-likelihood is summed in item order after, so the fit is the
		// same bits on any number of cores.
		pool.Each(in.N, 0, (*pool.Scratch[struct{}])(nil), func(_ *struct{}, i int) {
			var ownIdx []int32
			var ownVal []float64
			if ownM != nil {
				ownIdx, ownVal = own.row(i)
			}
			evIdx, evVal := ev.row(i)
			ll[i] = eStep(post[i*c:(i+1)*c], evIdx, evVal, ownIdx, ownVal, logT, logOwn, logPrior)
		})
		m.LogLik = 0
		for _, v := range ll {
			m.LogLik += v
		}
		m.Iters = it + 1
		if tol > 0 && it > 0 && moved <= tol {
			break
		}
	}
	if ownM != nil {
		m.TOwn = ownM.T
		m.align(post, in.N)
	}
	return m, post, nil
}

// maxMove is the largest absolute change from prev to next (0 where prev
// is nil: no tolerance, nothing kept).
func maxMove(prev, next []float64) float64 {
	d := 0.0
	for x, v := range prev {
		d = max(d, math.Abs(next[x]-v))
	}
	return d
}

// align resolves the fit's label permutation. The mixture is identified
// only up to a permutation of the clean classes (METHOD.md): a fit that
// swapped two classes explains the evidence exactly as well (satellite
// pair-0.45 from the soft vote reaches the log-likelihood of a fit
// started from the truth with two of its grey-soil classes exchanged).
// The permutation kept is the one under which the own labels are more
// often right than wrong: it maximises the sum over classes of
// log TOwn(c, c), by swapping pairs of classes while a swap raises it (a
// local search: an exact assignment solver, e.g. the Hungarian method,
// was not worth a dependency for a step that is the identity on every
// fit but a wrongly settled one; gonum has none). T, TOwn, the prior and
// every posterior are permuted together, so the likelihood is unchanged.
func (m *Pooled) align(post []float64, n int) {
	c := m.C
	perm := make([]int, c) // fitted class k is clean class perm[k]
	for k := range perm {
		perm[k] = k
	}
	lt := func(k, l int) float64 { return math.Log(m.TOwn[k*c+l]) }
	for moved := true; moved; {
		moved = false
		for a := range c {
			for b := a + 1; b < c; b++ {
				if lt(a, perm[b])+lt(b, perm[a]) > lt(a, perm[a])+lt(b, perm[b])+1e-9 {
					perm[a], perm[b] = perm[b], perm[a]
					moved = true
				}
			}
		}
	}
	identity := true
	for k, p := range perm {
		identity = identity && k == p
	}
	if identity {
		return
	}
	rows := func(x []float64) {
		y := append([]float64(nil), x...)
		for k, p := range perm {
			copy(x[p*c:(p+1)*c], y[k*c:(k+1)*c])
		}
	}
	rows(m.T)
	rows(m.TOwn)
	pr := append([]float64(nil), m.Prior...)
	for k, p := range perm {
		m.Prior[p] = pr[k]
	}
	q := make([]float64, c)
	for i := range n {
		copy(q, post[i*c:(i+1)*c])
		for k, p := range perm {
			post[i*c+p] = q[k]
		}
	}
}

// LabelTransition is the transition an item's own labels are read
// through: TOwn where the fit split the evidence (PooledInput.SplitOwn),
// else the one T. Structure, OwnPosterior and the calibration
// (CalibrationStats.AddLabelLikelihood's tOwn) all read this one.
func (m *Pooled) LabelTransition() []float64 {
	if m.TOwn != nil {
		return m.TOwn
	}
	return m.T
}

// Structure measures how structured the fitted label noise is, from 0
// (symmetric: a wrong label goes to any other class alike) to 1 (pair
// flips: it always goes to the same one). It reads the own labels'
// transition (TOwn where the fit split the evidence, else T): the mean
// over classes of the largest off-diagonal entry as a share of its row's
// off-diagonal mass, which is 1/(C-1) under symmetric noise and about 1
// under pair flips, rescaled so that the symmetric baseline is 0 whatever
// C: (share - 1/(C-1)) / (1 - 1/(C-1)), at least 0. Without the rescaling
// one gate could not serve every C: at C = 3 symmetric noise already gives
// .5, and at C = 2 every flip goes to the one other class (structure is
// then 0: pair and symmetric noise are the same thing there). It reads no
// trusted label, so a run can decide from it whether the pooled start is
// worth taking (Params.PooledGate).
func (m *Pooled) Structure() float64 {
	c := m.C
	if c <= 2 {
		return 0
	}
	tr := m.LabelTransition()
	var s float64
	for k := range c {
		var off, top float64
		for l, v := range tr[k*c : (k+1)*c] {
			if l != k {
				off += v
				top = max(top, v)
			}
		}
		if off > 0 {
			s += top / off
		}
	}
	base := 1 / float64(c-1)
	return max(0, (s/float64(c)-base)/(1-base))
}

// addLabels adds an item's labels to ev: each 1, or, as a neighbour's
// (share), 1/count each.
func addLabels(ev []float64, labels []int32, share bool, c int) {
	n := 0
	for _, l := range labels {
		if l >= 0 && int(l) < c {
			n++
		}
	}
	if n == 0 {
		return
	}
	w := 1.0
	if share {
		w = 1 / float64(n)
	}
	for _, l := range labels {
		if l >= 0 && int(l) < c {
			ev[l] += w
		}
	}
}

// mStep re-estimates T and the prior from the posteriors: T(c, l) is the
// expected count of label l on items of class c, plus one pseudo-count
// spread over the row (a class no item holds gets a uniform row).
func (m *Pooled) mStep(ev *sparseRows, post []float64, n int) {
	c := m.C
	clear(m.T)
	clear(m.Prior)
	for i := range n {
		q := post[i*c : (i+1)*c]
		idx, val := ev.row(i)
		for k, p := range q {
			if p == 0 {
				continue
			}
			m.Prior[k] += p
			row := m.T[k*c : (k+1)*c]
			for t, l := range idx {
				row[l] += p * val[t]
			}
		}
	}
	for k := range c {
		row := m.T[k*c : (k+1)*c]
		s := 0.0
		for l := range row {
			row[l] += 1 / float64(c)
			s += row[l]
		}
		for l := range row {
			row[l] /= s
		}
	}
	s := 0.0
	for _, v := range m.Prior {
		s += v
	}
	for k := range m.Prior {
		m.Prior[k] = 0.5/float64(c) + 0.5*m.Prior[k]/s
	}
}

// eStep sets q to the posterior over clean classes of the neighbours'
// evidence (evIdx, evVal: its nonzero counts, in class order) through logT
// and, in the split fit, of the item's own labels (ownIdx, ownVal; nil: no
// own-label term) through logOwn, and returns the item's log-likelihood.
func eStep(q []float64, evIdx []int32, evVal []float64, ownIdx []int32, ownVal []float64, logT, logOwn, logPrior []float64) float64 {
	c := len(q)
	top := math.Inf(-1)
	for k := range q {
		v := addEvidence(logPrior[k], evIdx, evVal, logT[k*c:(k+1)*c])
		if ownIdx != nil {
			v = addEvidence(v, ownIdx, ownVal, logOwn[k*c:(k+1)*c])
		}
		q[k] = v
		top = max(top, v)
	}
	return NormExp(q, top)
}

// addEvidence adds each count of the sparse evidence (idx, val) times its
// log row entry to v, in class order: the sum a dense loop skipping zero
// counts makes, bit for bit.
func addEvidence(v float64, idx []int32, val []float64, row []float64) float64 {
	for t, l := range idx {
		v += val[t] * row[l]
	}
	return v
}

// sparseRows holds rows of class counts by their nonzero entries, in
// class order (row i: idx, val [off[i]:off[i+1]]). Skipping zeros changes
// no sum: the dense loops it replaced added p * 0 = +0 or skipped them.
type sparseRows struct {
	off []int32
	idx []int32
	val []float64
}

func (r *sparseRows) reset() { r.off, r.idx, r.val = r.off[:0], r.idx[:0], r.val[:0] }

// add appends the dense row x.
func (r *sparseRows) add(x []float64) {
	if len(r.off) == 0 {
		r.off = append(r.off, 0)
	}
	for l, v := range x {
		if v != 0 {
			r.idx = append(r.idx, int32(l))
			r.val = append(r.val, v)
		}
	}
	r.off = append(r.off, int32(len(r.idx)))
}

// row is row i.
func (r *sparseRows) row(i int) ([]int32, []float64) {
	lo, hi := r.off[i], r.off[i+1]
	return r.idx[lo:hi], r.val[lo:hi]
}

// addTo adds row i to the dense x.
func (r *sparseRows) addTo(x []float64, i int) {
	idx, val := r.row(i)
	for t, l := range idx {
		x[l] += val[t]
	}
}

// NormExp sets q to exp(q - top), normalised, and returns the log of the
// normaliser (the item's log-likelihood of its evidence): a softmax that
// stays finite for any q when top is q's largest entry (transforms/head's
// softmax uses it too).
func NormExp(q []float64, top float64) float64 {
	s := 0.0
	for k, v := range q {
		q[k] = math.Exp(v - top)
		s += q[k]
	}
	for k := range q {
		q[k] /= s
	}
	return top + math.Log(s)
}

// InitPosterior sets s to an item's start from a posterior over clean
// classes q (length c, summing to 1), weighted w, and its given labels'
// shares, weighted 1 - w: its c0 most probable classes, each with the
// label-smoothed identity row State.Init gives a given label.
func (s *State) InitPosterior(q []float64, labels []int32, w float64, c0 int, smooth float64) {
	c := len(q)
	s.Init(labels, c, c+1, smooth) // every labelled class, shares summing to 1
	given := map[int32]float64{}
	for k, x := range s.Class {
		given[x] = s.Pi[k]
	}
	if len(given) == 0 {
		w = 1
	}
	s.Reset()
	for k, p := range q {
		v := w*p + (1-w)*given[int32(k)]
		if v <= 0 {
			continue
		}
		r := s.add(int32(k), v)
		r.Cat = append(r.Cat, int32(k))
		r.P = append(r.P, 1-smooth)
		r.Rem = smooth
	}
	s.Truncate(c0, 0)
}
