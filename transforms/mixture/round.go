package mixture

import (
	"errors"
	"fmt"
	"slices"
)

// Params configures one relabelling round (METHOD.md steps 3-7).
type Params struct {
	// C is the number of classes. Required.
	C int
	// C0 is how many classes each item's pi keeps (step 7), in [1, C].
	C0 int
	// L is the number of count vectors sampled per item.
	L int
	// N is the trials per count vector; identifiability needs N >= 2 C0 - 1
	// (DefaultN).
	N int
	// Mu is the mixture weight of the item's own state (step 3); the
	// neighbours share 1-Mu; 0 is meaningful (neighbours only). The paper
	// uses 0.5, the authors' code 0.99.
	Mu float64
	// Gamma is the momentum of the state update (step 6): 0 replaces the state
	// with the EM output (the authors' code).
	Gamma float64
	// Alpha and Beta are the Dirichlet priors of pi and rho rows (>= 1).
	Alpha, Beta float64
	// EMIters is the number of EM iterations per round.
	EMIters int
	// EMTol stops a round's EM once a step moved no class's pi by more than
	// this (at least one step runs). 0 runs EMIters steps, or until a step
	// reproduces its parameters exactly (which changes no result).
	EMTol float64
	// Variant selects the paper's or the authors' code's EM.
	Variant Variant
	// Draws is how the L vectors pick their components: Systematic (the
	// default) or IID (the paper's).
	Draws Draws
	// Smooth is the label smoothing of the initial rho rows, in [0, 1): 0 is
	// no smoothing.
	Smooth float64
	// MaxRowEntries bounds the explicit entries of a stored rho row (>= 1).
	MaxRowEntries int
	// Anchor is the weight of the item's initial (given-label) state as an extra
	// mixture component, next to its current state and its neighbours': it keeps
	// the given annotations in play over many rounds instead of letting repeated
	// averaging wash them out. 0 is the paper's method.
	Anchor float64
	// AnnotationWeight adds, per annotation beyond the first, this much weight
	// to the given-label component (see AnchorWeight). One label per item is
	// not identifiable on its own (N = 1) and enters only through the initial
	// state; several annotations are genuine i.i.d. draws from the item's
	// noisy-label distribution, so they keep a say in every round, the more
	// the more annotations. 0 is the paper's method.
	AnnotationWeight float64
	// Seed seeds all sampling, together with the item key and the round.
	Seed uint64
	// ActiveTol lets the rounds skip settled items: from the second round on,
	// an item runs only if its own state or a neighbour's has moved more than
	// ActiveTol (Distance, accumulated over the rounds it ran: States.Moved)
	// since it last moved that much; a skipped item keeps its state, and the
	// rounds stop once no item is active. 0 runs every item every round (the
	// paper's method), the default: over relabel's default 10 rounds the
	// states are still moving (on digits the median item moves 0.056 in
	// round 5 and 0.038 in round 10, by sampling noise and by the labels
	// still spreading: accuracy .89 after 5 rounds, .97 after 10), so a
	// tolerance that skips items also changes labels (docs/PERFORMANCE.md). It pays with more rounds, or
	// where most of the data is settled from the start. In [0, 1].
	ActiveTol float64
	// MinClassMass leaves out of EM's class set the classes whose share of
	// the item's mixture (own, neighbours and anchor, by weight) is below
	// it; the heaviest class always stays. Each state keeps C0 classes, so
	// a neighbourhood's union runs to most of C (15 of 20 on a
	// million-row synthetic input), nearly all of it stray mass that EM fits for
	// nothing: the E and M steps cost O(classes) per count vector. At the
	// default 0.01 a class gets at most one of the L = 100 systematic
	// draws; on the dev grid it leaves the mean within .0001 and every cell
	// within .002 of keeping every class, and cuts a round's work by a
	// third at C = 20 (docs/QUALITY.md, docs/PERFORMANCE.md). 0 keeps every
	// class (the paper's method). In [0, 1].
	MinClassMass float64
	// PooledIters, when > 0, starts every item from its posterior under the
	// pooled class-level transition (FitPooled, that many EM steps over the
	// given labels of the item and its neighbours) instead of its given
	// label: the structure every item's noise shares, which one
	// neighbourhood cannot identify, is estimated once over the whole
	// dataset. 0 is the paper's method (start from the given label). The
	// default, DefaultPooledIters with PooledWeight .3, PooledSplit and
	// PooledGate .5, is the best variant on the dev grid (docs/QUALITY.md):
	// the ten pair-flip cells gain (pair-0.45 +23 to +32 points), the gate
	// stays shut on every other cell, which is then the paper's start bit
	// for bit. relabel run's exact and sample modes fit it as stages
	// (pipelines/stages.PooledStart), the engine in process, by one rule
	// (engine.PooledInputs): the same items, in the same order.
	PooledIters int
	// PooledTol stops the pooled fit before PooledIters steps once a step
	// moved no entry of its transitions by more than this (FitPooled;
	// DefaultPooledTol). 0 runs all PooledIters steps. In [0, 1).
	PooledTol float64
	// PooledWeight is the share of the pooled posterior in that start, the
	// rest the given labels' (in (0, 1]; used when PooledIters > 0).
	PooledWeight float64
	// PooledOwn starts an item from the pooled transition's posterior of its
	// own labels only (Pooled.OwnPosterior), leaving its neighbours to the
	// rounds, instead of the posterior of its whole neighbourhood.
	PooledOwn bool
	// PooledSplit fits the item's own labels through their own transition
	// (PooledInput.SplitOwn), apart from the neighbours', which also carry
	// the neighbourhood's confusions; PooledOwn then starts from that own
	// transition's posterior.
	PooledSplit bool
	// PooledGate, when > 0, takes the pooled start only where the fitted
	// noise is structured (Pooled.Structure at or above the gate); below
	// it every item starts from its given label, as with PooledIters 0.
	PooledGate float64
}

// DefaultParams returns relabel's defaults for c classes, chosen by
// measurement on the dev grid (docs/QUALITY.md); the data-dependent ones
// (C0, N, MaxRowEntries) follow from c as DefaultC0, DefaultN and
// DefaultMaxRowEntries say. options.Defaults takes its method defaults from
// here, so each is written once. Seed is left 0 (a seed like any other).
func DefaultParams(c int) Params {
	c0 := DefaultC0(c)
	return Params{
		C:  c,
		C0: c0,
		// L = 100 with systematic component draws is as accurate on the dev
		// grid as L = 250 with i.i.d. draws (the paper's), at 40% of the
		// rounds' cost (docs/QUALITY.md).
		L:       100,
		Draws:   Systematic,
		N:       DefaultN(c0),
		Mu:      0.5,
		Gamma:   0.5,
		Alpha:   1.1,
		Beta:    1.1,
		EMIters: DefaultEMIters(Paper),
		// With more than one step: stop EM once pi moves by at most 1e-2 a
		// step, the same dev-grid accuracy as running to the fixpoint at
		// half the steps (docs/PERFORMANCE.md, docs/QUALITY.md).
		EMTol:   1e-2,
		Variant: Paper,
		Smooth:  0.1,
		// Several annotations per item keep a say every round (docs/QUALITY.md).
		AnnotationWeight: 0.05,
		MaxRowEntries:    DefaultMaxRowEntries(c0),
		MinClassMass:     0.01,
		PooledIters:      DefaultPooledIters,
		PooledTol:        DefaultPooledTol,
		PooledWeight:     0.3,
		PooledSplit:      true,
		PooledGate:       0.5,
	}
}

// DefaultPooledIters is PooledIters' default: 30 EM steps, where the split
// fit reaches its optimum on satellite pair-0.45 (10 steps stop short of
// it; docs/QUALITY.md).
const DefaultPooledIters = 30

// DefaultPooledTol is PooledTol's default: stop the pooled fit once a step
// moves no transition entry by more than 1e-3. Where the fitted noise is
// unstructured (idn, sym) the fit settles in 5-8 steps and the other 20-odd
// were spent only to keep the gate shut (about half a second of fashion's
// run, docs/PERFORMANCE.md); where it is structured, the entries still
// move by 1e-2 a step while the fit climbs (satellite pair-0.45 until step
// 29), so the cells the start exists for keep their steps
// (docs/QUALITY.md). A thousandth of a probability is far below what the
// start's posterior (weighted PooledWeight, refined by the rounds) can
// tell apart.
const DefaultPooledTol = 1e-3

// PooledSampleCap bounds the items the pooled fit reads: past it, the
// items with the smallest hash of (seed, key) (engine.PooledInputs). The
// fit estimates C x C (two with PooledSplit) transition entries and C
// prior weights from every fitted item's K + 1 labels: from 200,000 items
// each entry rests on about 200,000 (K + 1) / C^2 labels, over 20,000 at
// C = 10 and 3,000 at C = 26, far more precision than a start the rounds
// then refine needs, while the fit's memory and time stay bounded on any
// input. Every dev set (at most 70,000 rows) is fitted whole.
const PooledSampleCap = 200_000

// DefaultEMIters is the default number of EM steps per round for variant
// v. Paper: one. Each round's EM starts from the item's current state
// (warm start), and the rounds themselves iterate: one step per round is
// EM run incrementally across the rounds, and on the whole dev grid it is
// as accurate as stepping to the tolerance (every cell within .07 point,
// the idn/sym-0.4 mean .9391 both ways) at 14% less engine time and a
// tenth less wall time on the fashion run (docs/QUALITY.md,
// docs/PERFORMANCE.md). Code: ten, the authors' code's, which
// re-initialises and re-samples every step and needs the steps to fit.
func DefaultEMIters(v Variant) int {
	if v == Code {
		return 10
	}
	return 1
}

// DefaultC0 is the default C0 for c classes: min(c, 5). The paper keeps
// 10 (CIFAR-100); on the dev grid 5 is as accurate or better on every
// dataset (letter, C = 26, gains .2-.4 point: a state's sixth to tenth
// classes hold the neighbourhood's stray mass, which rounds only spread) and
// halves the trials (N = 9) and the classes EM fits (docs/QUALITY.md).
func DefaultC0(c int) int { return min(c, DefaultC0Max) }

// DefaultC0Max is DefaultC0's bound, for texts that state the default.
const DefaultC0Max = 5

// DefaultN is the default N for c0 kept classes: 2 c0 - 1, the
// identifiability bound.
func DefaultN(c0 int) int { return 2*c0 - 1 }

// DefaultMaxRowEntries is the default MaxRowEntries for c0 kept classes: 2 c0.
func DefaultMaxRowEntries(c0 int) int { return 2 * c0 }

// Validate reports every invalid field. Every field is required
// (DefaultParams has them all): a zero L, N, EMIters or MaxRowEntries is an
// error, not a default.
// PooledOpen says whether the gate takes the pooled start fitted as m:
// always with PooledGate 0, else where m's Structure is at least the gate.
// The engine's start and the quality harness's calibration decide by it.
func (p *Params) PooledOpen(m *Pooled) bool {
	return p.PooledGate == 0 || m.Structure() >= p.PooledGate
}

func (p Params) Validate() error {
	var errs []error
	if p.C < 1 {
		errs = append(errs, fmt.Errorf("C = %d, want >= 1", p.C))
	}
	if p.C0 < 1 || p.C0 > p.C {
		errs = append(errs, fmt.Errorf("C0 = %d, want in [1, C = %d]", p.C0, p.C))
	}
	if p.L < 1 {
		errs = append(errs, fmt.Errorf("L = %d, want >= 1", p.L))
	}
	if p.N < 1 {
		errs = append(errs, fmt.Errorf("N = %d, want >= 1", p.N))
	}
	if p.EMIters < 1 {
		errs = append(errs, fmt.Errorf("EM iterations = %d, want >= 1", p.EMIters))
	}
	if !(p.EMTol >= 0 && p.EMTol < 1) {
		errs = append(errs, fmt.Errorf("EM tolerance = %g, want in [0,1)", p.EMTol))
	}
	if p.MaxRowEntries < 1 {
		errs = append(errs, fmt.Errorf("MaxRowEntries = %d, want >= 1", p.MaxRowEntries))
	}
	if p.Mu < 0 || p.Mu > 1 {
		errs = append(errs, fmt.Errorf("mu = %g, want in [0,1]", p.Mu))
	}
	if p.Gamma < 0 || p.Gamma >= 1 {
		errs = append(errs, fmt.Errorf("gamma = %g, want in [0,1)", p.Gamma))
	}
	if p.Alpha < 1 || p.Beta < 1 {
		errs = append(errs, fmt.Errorf("alpha = %g, beta = %g, want >= 1 (MAP of a Dirichlet below 1 is on the boundary)", p.Alpha, p.Beta))
	}
	if p.Smooth < 0 || p.Smooth >= 1 {
		errs = append(errs, fmt.Errorf("smooth = %g, want in [0,1)", p.Smooth))
	}
	if p.Anchor < 0 || p.AnnotationWeight < 0 {
		errs = append(errs, fmt.Errorf("anchor = %g, annotation weight = %g, want >= 0", p.Anchor, p.AnnotationWeight))
	}
	if !(p.PooledGate >= 0 && p.PooledGate <= 1) {
		errs = append(errs, fmt.Errorf("pooled gate = %g, want in [0, 1]", p.PooledGate))
	}
	if !(p.PooledTol >= 0 && p.PooledTol < 1) {
		errs = append(errs, fmt.Errorf("pooled tolerance = %g, want in [0, 1)", p.PooledTol))
	}
	if p.PooledIters < 0 || p.PooledIters > 0 && !(p.PooledWeight > 0 && p.PooledWeight <= 1) {
		errs = append(errs, fmt.Errorf("pooled iterations = %d, weight %g, want >= 0 and a weight in (0, 1]", p.PooledIters, p.PooledWeight))
	}
	if !(p.MinClassMass >= 0 && p.MinClassMass <= 1) {
		errs = append(errs, fmt.Errorf("minimum class mass = %g, want in [0,1]", p.MinClassMass))
	}
	if !(p.ActiveTol >= 0 && p.ActiveTol <= 1) {
		errs = append(errs, fmt.Errorf("active tolerance = %g, want in [0,1]", p.ActiveTol))
	}
	if p.Draws != Systematic && p.Draws != IID {
		errs = append(errs, fmt.Errorf("component draws %v unknown", p.Draws))
	}
	if p.Variant != Paper && p.Variant != Code {
		errs = append(errs, fmt.Errorf("variant %v unknown", p.Variant))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("mixture: %w", err)
	}
	return nil
}

// AnchorWeight is the mixture weight of the given-label component of an item
// with n annotations: Anchor + AnnotationWeight (n - 1), and 0 without any.
func (p *Params) AnchorWeight(n int) float64 {
	if n <= 0 {
		return 0
	}
	return p.Anchor + p.AnnotationWeight*float64(n-1)
}

// UsesInit reports whether rounds need the items' initial states.
func (p *Params) UsesInit() bool { return p.Anchor > 0 || p.AnnotationWeight > 0 }

// Workspace holds everything a round needs so that rounds over a batch reuse
// memory. One per goroutine.
type Workspace struct {
	sampler Sampler
	em      EM
	y       Counts
	fit     State
	comps   []*State
	w       []float64
	classes []int32
	blend   blendScratch
	// refBlend makes Round write the fit out (EM.Result) and blend it with
	// Blend, the reference that EM.blendFit must reproduce bit for bit
	// (tests only).
	refBlend bool
	// mass is each class's share of the mixture (classSet's scratch).
	mass []float64
	// Trace, when non-nil, receives the MAP objective before every EM step
	// (tests check it never decreases).
	Trace func(iter int, objective float64)
}

// Round computes one item's next state (METHOD.md steps 3-7) into dst:
//
//	p~(y) = mu * own + (1-mu) * sum_j weights[j] * neigh[j]   (+ initWeight * init)
//
// sampled L times, fitted by MAP-EM, blended with own by Gamma and truncated to
// C0 classes. own may be empty (unlabelled item); neighbours with empty states
// or zero weight are skipped and the remaining weights renormalised. init is the
// item's initial (given-label) state with its weight initWeight
// (Params.AnchorWeight; nil or 0 for the paper's method). key identifies the item
// for seeding. dst must not alias own.
func (ws *Workspace) Round(dst, own, init *State, initWeight float64, neigh []State, weights []float64, key uint64, round int, p *Params) {
	ws.comps, ws.w = ws.comps[:0], ws.w[:0]
	var nw float64
	for j := range neigh {
		if weights[j] > 0 && neigh[j].Len() > 0 {
			nw += weights[j]
		}
	}
	mu := p.Mu
	if own.Len() == 0 || nw == 0 {
		mu = float64(boolTo01(own.Len() > 0))
	}
	if own.Len() > 0 && mu > 0 {
		ws.comps = append(ws.comps, own)
		ws.w = append(ws.w, mu)
	}
	if nw > 0 && mu < 1 {
		for j := range neigh {
			if weights[j] > 0 && neigh[j].Len() > 0 {
				ws.comps = append(ws.comps, &neigh[j])
				ws.w = append(ws.w, (1-mu)*weights[j]/nw)
			}
		}
	}
	if initWeight > 0 && init != nil && init.Len() > 0 {
		ws.comps = append(ws.comps, init)
		ws.w = append(ws.w, initWeight)
	}
	ws.fitComponents(dst, own, key, round, p)
}

// RoundComponents is Round on a mixture already assembled: comps and
// their weights w as Round weighs them (engine.Batch.Flatten builds them
// for a device, in Round's order). It reports whether the mixture was
// non-empty; when it is empty dst is a copy of own, as in Round.
func (ws *Workspace) RoundComponents(dst, own *State, comps []State, w []float64, key uint64, round int, p *Params) bool {
	ws.comps, ws.w = ws.comps[:0], append(ws.w[:0], w...)
	for j := range comps {
		ws.comps = append(ws.comps, &comps[j])
	}
	return ws.fitComponents(dst, own, key, round, p)
}

// fitComponents samples the mixture ws.comps, ws.w and fits it (METHOD.md
// steps 4-7): Round's work once its components are known.
func (ws *Workspace) fitComponents(dst, own *State, key uint64, round int, p *Params) bool {
	s := &ws.sampler
	s.Seed(p.Seed, key, round)
	s.Draws = p.Draws
	if !s.SetMixture(ws.comps, ws.w) {
		dst.CopyFrom(own)
		return false
	}
	ws.classSet(p.MinClassMass)

	em := &ws.em
	em.SetClasses(ws.classes, p.C, p.Alpha, p.Beta)
	s.Sample(&ws.y, p.L, p.N, p.C)
	em.Observe(&ws.y)
	switch p.Variant {
	case Code:
		em.InitCode(s)
	default:
		if own.Len() > 0 {
			em.InitFrom(own, p.Smooth)
		} else {
			em.InitFrom(&ws.fit, p.Smooth) // empty: uniform floor + default rows
		}
	}
	var obj float64
	for it := 0; it < p.EMIters; it++ {
		if p.Variant == Code && it > 0 {
			s.Sample(&ws.y, p.L, p.N, p.C)
			em.SetData(&ws.y)
		} else if em.Converged || p.EMTol > 0 && it > 0 && em.PiMoved <= p.EMTol {
			// The last step reproduced its parameters exactly: every further
			// step on the same data would too, so the result is already final
			// (or it moved pi by no more than EMTol, which is close enough).
			// The objective stays where it was.
			if ws.Trace == nil {
				break
			}
			ws.Trace(it, obj)
			continue
		}
		if ws.Trace == nil {
			em.StepFast()
			continue
		}
		obj = em.Step()
		ws.Trace(it, obj)
	}
	switch {
	case own.Len() == 0 || p.Gamma == 0:
		em.Result(dst)
	case ws.refBlend:
		em.Result(&ws.fit)
		blend(dst, own, &ws.fit, p.Gamma, p.C, &ws.blend)
		ws.fit.Reset()
	default:
		em.blendFit(dst, own, p.Gamma, &ws.blend)
	}
	dst.Truncate(p.C0, p.MaxRowEntries)
	return true
}

// classSet sets ws.classes, EM's class set, sorted: every class some
// component puts mass on, less those whose share of the mixture is below
// minMass (Params.MinClassMass); the heaviest class always stays.
func (ws *Workspace) classSet(minMass float64) {
	ws.classes, ws.mass = ws.classes[:0], ws.mass[:0]
	for j, st := range ws.comps {
		w := ws.w[j]
		for k, c := range st.Class {
			i := slices.Index(ws.classes, c)
			if i < 0 {
				i = len(ws.classes)
				ws.classes = append(ws.classes, c)
				ws.mass = append(ws.mass, 0)
			}
			ws.mass[i] += w * st.Pi[k]
		}
	}
	if minMass > 0 {
		var tot, heaviest float64
		for _, x := range ws.mass {
			tot += x
			heaviest = max(heaviest, x)
		}
		cut := min(minMass*tot, heaviest)
		n := 0
		for i, c := range ws.classes {
			if ws.mass[i] >= cut {
				ws.classes[n] = c
				n++
			}
		}
		ws.classes = ws.classes[:n]
	}
	sortInt32(ws.classes)
}

func boolTo01(b bool) int {
	if b {
		return 1
	}
	return 0
}

func containsClass(cs []int32, c int32) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func sortInt32(x []int32) {
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j] < x[j-1]; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
}

// Blend sets dst = g a + (1-g) b (METHOD.md step 6) for pi and, class by class,
// for rho rows. A class missing from one side has pi 0 there, and its row is
// taken from the other side alone (a row of a zero-mass class carries no
// information). Rows blend exactly: a category explicit in one row but not the
// other takes the other's per-category remainder share.
func Blend(dst, a, b *State, g float64, c int) { blend(dst, a, b, g, c, &blendScratch{}) }

// blendScratch holds Blend's category indices (reused across a worker's
// rounds).
type blendScratch struct {
	a        catIndex
	inA, inB []int32
	// fitted marks, by local category index, the fit's entries that the
	// stored row also holds, and part is each stored entry's partner in the
	// fit (EM.blendFitRow).
	fitted []uint8
	part   []int32
}

func blend(dst, a, b *State, g float64, c int, sc *blendScratch) {
	dst.Reset()
	for k, cl := range a.Class {
		pb, rb := b.ProbOf(cl), rowOf(b, cl)
		r := dst.add(cl, g*a.Pi[k]+(1-g)*pb)
		if rb == nil {
			r.copyFrom(&a.Rows[k])
			continue
		}
		blendRow(r, &a.Rows[k], rb, g, c, sc)
	}
	for k, cl := range b.Class {
		if rowOf(a, cl) != nil {
			continue
		}
		dst.add(cl, (1-g)*b.Pi[k]).copyFrom(&b.Rows[k])
	}
}

func rowOf(s *State, cl int32) *Row {
	for k, x := range s.Class {
		if x == cl {
			return &s.Rows[k]
		}
	}
	return nil
}

// blendRow sets dst to g a + (1-g) b entry by entry: a's categories in a's
// order, then b's that a lacks in b's order. Only a's categories are indexed
// (catIndex: a scan for short rows, a hash table for long ones): one pass
// over b finds, for each of its entries, the entry of a with the same
// category, and so also each of a's entries' partner in b. b is the EM fit,
// whose rows at large C hold hundreds of entries, a the stored state of at
// most MaxRowEntries: indexing b cost more than the whole blend otherwise.
func blendRow(dst, a, b *Row, g float64, c int, sc *blendScratch) {
	sc.a.build(a.Cat)
	inB := resize(sc.inB, len(a.Cat)) // a's entry -> b's entry, -1: absent
	for e := range inB {
		inB[e] = -1
	}
	inA := resize(sc.inA, len(b.Cat)) // b's entry -> a's entry, -1: absent
	for e, cat := range b.Cat {
		i := int32(sc.a.find(cat))
		inA[e] = i
		if i >= 0 {
			inB[i] = int32(e)
		}
	}
	sc.inB, sc.inA = inB, inA
	for e, cat := range a.Cat {
		dst.Cat = append(dst.Cat, cat)
		dst.P = append(dst.P, g*a.P[e]+(1-g)*b.probAt(int(inB[e]), c))
	}
	ua, ub := a.probAt(-1, c), b.probAt(-1, c) // each side's remainder share
	for e, cat := range b.Cat {
		if inA[e] >= 0 {
			continue
		}
		dst.Cat = append(dst.Cat, cat)
		dst.P = append(dst.P, g*ua+(1-g)*b.P[e])
	}
	if rest := c - len(dst.Cat); rest > 0 {
		dst.Rem = float64(rest) * (g*ua + (1-g)*ub)
	} else {
		dst.Rem = 0
	}
}
