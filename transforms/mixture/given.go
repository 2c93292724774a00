package mixture

import (
	"fmt"
	"math"
	"slices"

	"github.com/relabel/relabel/internal/pool"
)

// The given-label model reads an item's given label as what it is: one noisy
// draw through a class-level transition A(c, g) = p(given label g | clean
// class c), not one vote among its neighbours'. The clean-label posterior of
// item i is then Bayes' rule on two independent pieces of evidence:
//
//	p_i(c) ∝ e_i(c) A(c, g_i)
//
// where e_i is the neighbours' evidence, the weighted mean of the item's
// neighbours' final posteriors (the item's own state is left out: it already
// holds its given label, and counting that label twice is what makes
// relabelling overwrite correct labels on clean data). Where the fitted A says
// a class's labels are 99% right, overturning one needs evidence 99 times
// stronger than for keeping it; where it says 40% of them are wrong, much
// less. A is fitted by EM over every item (or a seeded sample of them); for
// a fixed e its log-likelihood, sum_i log sum_c e_i(c) A(c, g_i), is concave
// in A, so EM finds its maximum whatever the start.
//
// e is calibrated in two steps. The neighbours' temperature is chosen from
// the model's own output: the temperature at which the neighbours' tempered
// posteriors best predict each item's own clean label (the argmax of its
// final state), from GivenTemperatures. That makes e at most as sharp as
// its neighbours' vote: where classes are cleanly separated but a
// neighbourhood's members are not all of one class (a vote share of .7 for
// a class the rounds, reading the neighbours' neighbours too, are sure of),
// e understates what the rounds know, and one neighbour agreeing with a
// wrong given label keeps it. So the evidence is then raised to a power,
// e^p renormalised, with p from GivenPowers chosen, with A fitted at each,
// by the likelihood of the given labels: the power at which the model
// predicts the labels the data holds best. Where neighbourhoods' mixing is
// real class overlap the labels are best predicted by the unsharpened
// evidence (p = 1); where it is not, by sharper evidence and a noisier A.
// Choosing the temperature by that likelihood as well was measured and
// dropped: at high temperatures the neighbours' posteriors carry mass on
// the item's own label (the item is one of their neighbours), which predicts
// it without being evidence about the clean class (docs/QUALITY.md).

// GivenTemperatures are the neighbour temperatures GivenFit chooses from.
var GivenTemperatures = []float64{0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1}

// GivenPowers are the powers of the evidence GivenFit chooses from.
var GivenPowers = []float64{1, 2, 3, 5, 10}

// givenFloor is the share of an item's evidence spread over every class, so
// that a label no neighbour holds keeps a nonzero posterior.
const givenFloor = 1e-6

// GivenIters is the number of EM steps of the transition's fit.
const GivenIters = 30

// Evidence is an item's neighbours' evidence over clean classes: Class in
// ascending order, P summing to 1.
type Evidence struct {
	Class []int32
	P     []float64
}

// Reset empties e, keeping its storage.
func (e *Evidence) Reset() { e.Class, e.P = e.Class[:0], e.P[:0] }

// GivenScratch is reusable room for NeighbourEvidence.
type GivenScratch struct{ src, q []float32 }

// NeighbourEvidence sets e to the weighted mean of the neighbours' posteriors
// (neigh[j] weighted w[j]), each tempered at t (Temper); neighbours of weight
// 0 or with an empty state add nothing, and an item without any gets an
// empty e. The sums run in neighbour order.
func NeighbourEvidence(e *Evidence, neigh []State, w []float64, t float64, s *GivenScratch) {
	e.Reset()
	var ws float64
	for j := range neigh {
		n := &neigh[j]
		if w[j] <= 0 || n.Len() == 0 {
			continue
		}
		s.src = s.src[:0]
		for _, p := range n.Pi {
			s.src = append(s.src, float32(p))
		}
		s.q = Temper(s.q, s.src, t)
		e.Add(n.Class, s.q, w[j])
		ws += w[j]
	}
	e.Normalise(ws)
}

// Add adds w times one neighbour's tempered posterior (q over classes
// class) to e: NeighbourEvidence's sum, for callers that temper each
// neighbour state once and reuse it for every item it neighbours.
func (e *Evidence) Add(class []int32, q []float32, w float64) {
	for k, c := range class {
		at, found := slices.BinarySearch(e.Class, c)
		if !found {
			e.Class = slices.Insert(e.Class, at, c)
			e.P = slices.Insert(e.P, at, 0)
		}
		e.P[at] += w * float64(q[k])
	}
}

// Normalise divides e by ws, the sum of the weights Add added (0: left
// empty as it is).
func (e *Evidence) Normalise(ws float64) {
	if ws > 0 {
		for k := range e.P {
			e.P[k] /= ws
		}
	}
}

// Mass is e's mass on class c (0 where absent).
func (e *Evidence) Mass(c int32) float64 {
	if at, ok := slices.BinarySearch(e.Class, c); ok {
		return e.P[at]
	}
	return 0
}

// GivenScore adds to score[j] the log-likelihood of an item's own clean
// label own (the argmax of its final state) under its neighbours' evidence
// at GivenTemperatures[j], ev[j]. GivenFit's temperature maximises the sum
// over items.
func GivenScore(score []float64, ev []Evidence, own int32) {
	for j := range ev {
		score[j] += math.Log(givenFloor + ev[j].Mass(own))
	}
}

// GivenTemperature is the temperature of the largest score (the smallest
// of equal ones).
func GivenTemperature(score []float64) float64 {
	best := 0
	for j, v := range score {
		if v > score[best] {
			best = j
		}
	}
	return GivenTemperatures[best]
}

// GivenFit is the fitted given-label model.
type GivenFit struct {
	// C is the number of classes.
	C int
	// T is the neighbours' temperature.
	T float64
	// Power is the evidence's power (GivenPowers; 1: as pooled).
	Power float64
	// A is row-major C x C: A[c*C+g] = p(given label g | clean class c).
	A []float64
	// LogLik is the given labels' log-likelihood under the fit.
	LogLik float64
	// Items is the number of labelled items the fit read, and Mass[c]
	// their expected number of clean class c (from the last E-step,
	// prior included): with A, the counts FitGivenPrior starts from.
	Items int
	Mass  []float64
}

// FitGiven fits the model over the items' evidence at temperature t
// (ev[i]) and given labels (given[i]; negative: unlabelled, skipped): at
// each of GivenPowers, A by FitGivenPrior without a prior; the fit of the
// largest likelihood of the given labels is returned (the smallest power
// of equal ones). The powers' fits are independent and run on workers
// goroutines (0: GOMAXPROCS), each its own sums in item order: the same
// bits whatever the workers.
func FitGiven(ev []Evidence, given []int32, c int, t float64, workers int) (*GivenFit, error) {
	if err := checkGiven(ev, given, c, nil); err != nil {
		return nil, err
	}
	var shared givenScratch
	shared.supports(c, ev, given)
	fits := make([]*GivenFit, len(GivenPowers))
	pool.EachIndexWith(len(GivenPowers), workers, func(gs *givenScratch, x int) error {
		if gs.off == nil {
			gs.sup, gs.off = shared.sup, shared.off
		}
		fits[x] = fitGiven(ev, given, c, t, GivenPowers[x], nil, gs)
		return nil
	})
	var best *GivenFit
	for _, f := range fits {
		if best == nil || f.LogLik > best.LogLik {
			best = f
		}
	}
	return best, nil
}

// givenScratch is what the fits at every power share: the labelled items'
// supports (an item's evidence classes and its given label: the same at
// every power, Sharpen keeping the classes) and room for their floored
// evidence at one power. Built once, not per power: with the powers' sharpened
// copies of every item's evidence, it was most of the memory the fit
// held over a sample of 200,000 items.
type givenScratch struct {
	sup   []int32
	off   []int // nil until supports fills it
	mass  []float64
	sharp Evidence
}

// supports fills s's supports from ev and given, labels of c classes
// (once).
func (s *givenScratch) supports(c int, ev []Evidence, given []int32) {
	if s.off != nil {
		return
	}
	n := 0
	for i := range ev {
		n += len(ev[i].Class) + 1
	}
	s.sup, s.off = make([]int32, 0, n), make([]int, 1, len(ev)+1)
	for i := range ev {
		if g := given[i]; g >= 0 && int(g) < c {
			s.sup = appendSupport(s.sup, &ev[i], g)
		}
		s.off = append(s.off, len(s.sup))
	}
}

// FitGivenPrior fits A by GivenIters EM steps over the items' evidence at
// temperature t raised to power (Sharpen), starting from 80% right
// labels, with one pseudo-count spread over each row, and the counts of an
// earlier fit (prior: prior.Mass[c] items of clean class c, their given
// labels spread as prior.A's row c) added to the items' own in every
// M-step: the MAP estimate under a Dirichlet prior worth the items that fit
// read. The prior is how an incremental run updates the fit of the run
// before it with the rows it relabels, each weighing in with the items
// behind it; nil: none. Sums run in item order: the same inputs give the
// same bits.
func FitGivenPrior(ev []Evidence, given []int32, c int, t, power float64, prior *GivenFit) (*GivenFit, error) {
	if err := checkGiven(ev, given, c, prior); err != nil {
		return nil, err
	}
	if !(power >= 1) {
		return nil, fmt.Errorf("mixture: given-label fit: evidence power %v, want >= 1", power)
	}
	return fitGiven(ev, given, c, t, power, prior, &givenScratch{}), nil
}

// checkGiven checks a fit's evidence, labels and prior.
func checkGiven(ev []Evidence, given []int32, c int, prior *GivenFit) error {
	if c < 2 || len(ev) != len(given) {
		return fmt.Errorf("mixture: given-label fit: C = %d, %d evidence rows, %d labels", c, len(ev), len(given))
	}
	if prior != nil && (prior.C != c || len(prior.A) != c*c || len(prior.Mass) != c) {
		return fmt.Errorf("mixture: given-label fit: a prior of %d classes (%d transition values, %d masses) for %d", prior.C, len(prior.A), len(prior.Mass), c)
	}
	return nil
}

// fitGiven is FitGivenPrior on checked arguments, with the supports in gs
// (built on the first call) and its room for the floored evidence.
func fitGiven(ev []Evidence, given []int32, c int, t, power float64, prior *GivenFit, gs *givenScratch) *GivenFit {
	f := &GivenFit{C: c, T: t, Power: power, A: make([]float64, c*c), Mass: make([]float64, c)}
	for k := range c {
		for l := range c {
			if k == l {
				f.A[k*c+l] = 0.8
			} else {
				f.A[k*c+l] = 0.2 / float64(c-1)
			}
		}
	}
	next := make([]float64, c*c)
	// Each labelled item's floored evidence over its support at this power,
	// computed once: every EM step reads the same (posterior's first
	// factor).
	gs.supports(c, ev, given)
	sup, off := gs.sup, gs.off
	if cap(gs.mass) < len(sup) {
		gs.mass = make([]float64, len(sup))
	}
	mass := gs.mass[:len(sup)]
	for i := range ev {
		if off[i] == off[i+1] {
			continue
		}
		e := &ev[i]
		if power != 1 {
			Sharpen(&gs.sharp, e, power)
			e = &gs.sharp
		}
		for k, x := range sup[off[i]:off[i+1]] {
			mass[off[i]+k] = f.floored(e, x)
		}
	}
	var p []float64
	for it := 0; it < GivenIters; it++ {
		clear(next)
		if prior != nil {
			for k := range c {
				for l := range c {
					next[k*c+l] = prior.Mass[k] * prior.A[k*c+l]
				}
			}
		}
		f.LogLik, f.Items = 0, 0
		for i := range ev {
			g := given[i]
			if g < 0 || int(g) >= c {
				continue
			}
			var lik float64
			p, lik = f.posteriorOf(p, sup[off[i]:off[i+1]], mass[off[i]:off[i+1]], g)
			f.LogLik += math.Log(lik)
			f.Items++
			for k, x := range sup[off[i]:off[i+1]] {
				next[int(x)*c+int(g)] += p[k]
			}
		}
		for k := range c {
			row := next[k*c : (k+1)*c]
			s := 0.0
			for l := range row {
				s += row[l]
				row[l] += 1 / float64(c)
			}
			f.Mass[k] = s
			s += 1
			for l := range row {
				f.A[k*c+l] = row[l] / s
			}
		}
	}
	if prior != nil {
		f.Items += prior.Items
	}
	return f
}

// Sharpen sets dst to src raised to the power p and renormalised (p = 1:
// a copy). The powers are taken relative to src's largest mass, so that
// a power of evidence spread thin does not underflow.
func Sharpen(dst, src *Evidence, p float64) {
	dst.Class = append(dst.Class[:0], src.Class...)
	dst.P = append(dst.P[:0], src.P...)
	if p == 1 || len(src.P) == 0 {
		return
	}
	top := slices.Max(src.P)
	if !(top > 0) {
		return
	}
	var s float64
	for k, v := range dst.P {
		dst.P[k] = math.Pow(v/top, p)
		s += dst.P[k]
	}
	for k := range dst.P {
		dst.P[k] /= s
	}
}

// appendSupport appends to dst the classes an item's posterior covers:
// its evidence's and its given label, ascending.
func appendSupport(dst []int32, e *Evidence, g int32) []int32 {
	at, ok := slices.BinarySearch(e.Class, g)
	if ok {
		return append(dst, e.Class...)
	}
	dst = append(dst, e.Class[:at]...)
	dst = append(dst, g)
	return append(dst, e.Class[at:]...)
}

// floored is e's mass on class x with givenFloor spread over every class:
// the first factor of an item's posterior.
func (f *GivenFit) floored(e *Evidence, x int32) float64 {
	return e.Mass(x)*(1-givenFloor) + givenFloor/float64(f.C)
}

// posteriorOf writes into p the posterior over the classes sup (an item's
// support) whose floored evidence is mass, and returns it with the
// likelihood of the given label g.
func (f *GivenFit) posteriorOf(p []float64, sup []int32, mass []float64, g int32) ([]float64, float64) {
	c := f.C
	p = p[:0]
	var s float64
	for k, x := range sup {
		v := mass[k] * f.A[int(x)*c+int(g)]
		p = append(p, v)
		s += v
	}
	for k := range p {
		p[k] /= s
	}
	return p, s
}

// Posterior sets dst to an item's clean-label posterior (its classes most
// probable first, at most c0 of them, renormalised) from its neighbours'
// evidence (raised to f's power) and its given label g; an unlabelled item
// (g < 0) gets its evidence alone. s is the caller's room for the
// working (nil: a fresh one): it runs for every item of a run.
func (f *GivenFit) Posterior(dst *State, e *Evidence, g int32, c0 int, s *PosteriorScratch) {
	if s == nil {
		s = &PosteriorScratch{}
	}
	if p := f.EvidencePower(); p != 1 {
		Sharpen(&s.sharp, e, p)
		e = &s.sharp
	}
	dst.Reset()
	if g < 0 || int(g) >= f.C {
		for k, x := range e.Class {
			dst.add(x, e.P[k])
		}
	} else {
		s.sup = appendSupport(s.sup[:0], e, g)
		s.mass = s.mass[:0]
		for _, x := range s.sup {
			s.mass = append(s.mass, f.floored(e, x))
		}
		s.p, _ = f.posteriorOf(s.p, s.sup, s.mass, g)
		for k, x := range s.sup {
			dst.add(x, s.p[k])
		}
	}
	dst.Truncate(c0, 0)
}

// PosteriorScratch is reusable room for GivenFit.Posterior.
type PosteriorScratch struct {
	sharp Evidence
	sup   []int32
	mass  []float64
	p     []float64
}

// EvidencePower is f's evidence power; a fit kept before the power was
// chosen has none, which is 1.
func (f *GivenFit) EvidencePower() float64 {
	if f.Power == 0 {
		return 1
	}
	return f.Power
}
