package engine

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// Weighting selects how an item's neighbours are weighted in its mixture.
type Weighting int

const (
	// LLC weights neighbours by locality-constrained linear coding (METHOD.md step 2).
	LLC Weighting = iota
	// Uniform gives each of the K neighbours weight 1/K.
	Uniform
	// Blend averages the LLC and uniform weights: LLC's codes are sparse (a
	// simplex QP puts its mass on a few neighbours), which sharpens boundaries
	// but makes each item's mixture rest on few, possibly noisy, labels; the
	// uniform half keeps every neighbour's vote.
	Blend
)

func (w Weighting) String() string {
	switch w {
	case LLC:
		return "llc"
	case Uniform:
		return "uniform"
	case Blend:
		return "blend"
	}
	return fmt.Sprintf("Weighting(%d)", int(w))
}

// ParseWeighting parses "llc" or "uniform".
func ParseWeighting(s string) (Weighting, error) {
	switch s {
	case "llc":
		return LLC, nil
	case "uniform":
		return Uniform, nil
	case "blend":
		return Blend, nil
	}
	return 0, fmt.Errorf("engine: unknown weighting %q (want llc, uniform or blend)", s)
}

// Options configures an in-process relabelling (Run). Every field is
// required: options.Options.Engine fills them from the one option model.
type Options struct {
	// K is the number of neighbours, >= 1.
	K int
	// Metric ranks neighbours.
	Metric knn.Metric
	// Standardise z-scores every feature (mean 0, variance 1 over all items)
	// before the search: raw features on different scales (pixels, integer
	// codes) otherwise let a few dimensions decide the neighbours.
	Standardise bool
	// Candidates bounds the candidate set neighbours are searched in; 0 or >= n
	// means all items. Otherwise the items with the smallest hash of (seed, key).
	Candidates int
	// Weighting of neighbours.
	Weighting Weighting
	// LLC configures the QP when Weighting is LLC or Blend.
	LLC llc.Params
	// Rounds of sample + EM, >= 0.
	Rounds int
	// Mixture configures each round.
	Mixture mixture.Params
	// Workers bounds goroutines, >= 1.
	Workers int
	// OnPooled, when set, is given the fitted pooled transition
	// (mixture.Params.PooledIters > 0; FitPooledStart) before the rounds,
	// whether the gate takes it or not: the quality harness logs its
	// Structure. It changes nothing.
	OnPooled func(*mixture.Pooled)
	// NewComponent, when set, builds one more mixture component for the
	// candidates before the rounds (transforms/head's linear head:
	// head.Factory), from the candidates' features as given (not
	// standardised), their keys and the dimension, the candidates in key
	// order (as pipelines/stages holds them; Component's indices are
	// positions in that order). Only Run reads it; nil adds nothing.
	NewComponent func(x []float32, keys []int64, d int) (Component, error)
	// Given reads each item's given label through the class-level
	// transition fitted after the rounds (mixture.GivenFit) against its
	// neighbours' final posteriors, in a run whose items mostly carry one
	// label: Result.Given and Result.States then hold that model and its
	// posteriors. Off, the final states are the output.
	Given bool
}

// Component is called before each round r with the candidates' states of
// the last round (the initial ones before round 0), in key order, and
// their neighbourhoods (neighbour: candidate c's neighbour j, j < k, as a
// key-order position, -1 for none, and its weight), and returns one more
// mixture component per candidate (states in key order) and its
// weight relative to the item's neighbours' total; nil states (weight 0):
// none this round. Items that are not candidates get none: the component is
// fitted and applied where the features travel (pipelines/stages' exact and
// sample modes carry the candidates' features only), and in exact mode every
// item is a candidate.
type Component func(r int, cand *mixture.States, k int, neighbour func(c, j int) (int, float64)) (*mixture.States, float64, error)

// Validate checks every field: the options are complete (options.Options
// resolves them), nothing here is defaulted.
func (o Options) Validate() error {
	var errs []error
	if o.K < 1 {
		errs = append(errs, fmt.Errorf("engine: K = %d, want >= 1", o.K))
	}
	if o.Rounds < 0 {
		errs = append(errs, fmt.Errorf("engine: rounds = %d, want >= 0", o.Rounds))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("engine: workers = %d, want >= 1", o.Workers))
	}
	if o.Weighting != LLC && o.Weighting != Uniform && o.Weighting != Blend {
		errs = append(errs, fmt.Errorf("engine: weighting %v unknown", o.Weighting))
	}
	if o.Candidates < 0 {
		errs = append(errs, fmt.Errorf("engine: candidates = %d, want >= 0", o.Candidates))
	}
	if err := o.LLC.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Mixture.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Data is a whole dataset in memory: n items with keys (unique), d-dimensional
// features (row-major) and annotations: item i's labels are
// Labels[LabelOff[i]:LabelOff[i+1]], class indices, negative = unlabelled.
type Data struct {
	Keys     []int64
	D        int
	Features []float32
	Labels   []int32
	LabelOff []int32
}

// Len is the number of items.
func (d *Data) Len() int { return len(d.Keys) }

// Result is every item's final state, in input order.
type Result struct {
	States mixture.States
	// Candidates are the item indices used as the candidate set.
	Candidates []int
	// ItemRounds counts the item-rounds that ran (mixture.Params.ActiveTol
	// skips settled items).
	ItemRounds int64
	// Given is the given-label model (Options.Given), nil when it did not
	// run; States then hold its posteriors.
	Given *mixture.GivenFit
}

// Backends are the kernels the engine calls; nil fields get the CPU ones.
type Backends struct {
	Searcher knn.Searcher
	Coder    llc.Coder
	// Rounder runs the rounds (gpu.Resolve's); nil or the zero CPU:
	// RunRound on the caller's workers (WithWorkers).
	Rounder Rounder
}

// Run relabels d. It is deterministic for fixed options: every random draw is
// seeded from (seed, item key, round).
func Run(d *Data, o Options, be Backends) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if be.Searcher == nil {
		be.Searcher = knn.CPU{}
	}
	if be.Coder == nil {
		be.Coder = llc.CPU{}
	}
	rounder := WithWorkers(be.Rounder, o.Workers, nil)
	n := d.Len()
	feats := d.Features
	if o.Standardise {
		feats = append([]float32(nil), d.Features...)
		mean, std := Moments(feats, n, d.D)
		Standardise(feats, d.D, mean, std)
	}
	cands := SelectCandidates(d.Keys, o.Candidates, o.Mixture.Seed)
	nb, err := Neighbours(feats, d.Keys, d.D, cands, o, be)
	if err != nil {
		return nil, err
	}
	var states, init mixture.States
	states.Reset()
	var st mixture.State
	var start *PooledStarter
	if o.Mixture.PooledIters > 0 {
		in := PooledInputsOf(d, nb, cands, o.Mixture.Seed)
		m, open, err := FitPooledStart(&in, &o.Mixture)
		if err != nil {
			return nil, err
		}
		if m != nil && o.OnPooled != nil {
			o.OnPooled(m)
		}
		if open {
			start = NewPooledStarter(m, &o.Mixture)
		}
	}
	for i := 0; i < n; i++ {
		labels := d.Labels[d.LabelOff[i]:d.LabelOff[i+1]]
		if start != nil {
			start.Start(&st, labels, nb.K, func(j int) ([]int32, bool) {
				c := nb.Index[i*nb.K+j]
				if c < 0 {
					return nil, false
				}
				x := cands[c]
				return d.Labels[d.LabelOff[x]:d.LabelOff[x+1]], true
			})
		} else {
			st.Init(labels, o.Mixture.C, o.Mixture.C0, o.Mixture.Smooth)
		}
		states.Append(&st) // packing quantizes, as the pipeline's states are
	}
	if o.Mixture.UsesInit() {
		init.Reset()
		for i := 0; i < n; i++ {
			init.AppendFrom(&states, i)
		}
	}
	// The component sees the candidates in key order, as the pipeline's
	// rounds hold them (stages.Candidates), with their features as given:
	// the sums of its fit run in the same order on the same bits there and
	// here, whatever the input's order. hc[h] is the candidate index
	// (into cands) at key-order position h, pos its inverse.
	var comp Component
	var hc, pos []int32
	candOf := make([]int32, n) // item -> key-order position, -1: none
	if o.NewComponent != nil {
		hc = make([]int32, len(cands))
		pos = make([]int32, len(cands))
		for c := range hc {
			hc[c] = int32(c)
		}
		sort.Slice(hc, func(a, b int) bool { return d.Keys[cands[hc[a]]] < d.Keys[cands[hc[b]]] })
		for i := range candOf {
			candOf[i] = -1
		}
		cx := make([]float32, 0, len(cands)*d.D)
		ckeys := make([]int64, len(cands))
		for h, c := range hc {
			i := cands[c]
			pos[c] = int32(h)
			candOf[i] = int32(h)
			ckeys[h] = d.Keys[i]
			cx = append(cx, d.Features[i*d.D:(i+1)*d.D]...)
		}
		if comp, err = o.NewComponent(cx, ckeys, d.D); err != nil {
			return nil, err
		}
	}
	var candStates, headStates mixture.States
	res := &Result{Candidates: cands}
	for r := 0; r < o.Rounds; r++ {
		candStates.Reset()
		for _, i := range cands {
			candStates.AppendFrom(&states, i)
		}
		k, slots := nb.K, nb.K
		var extra *mixture.States
		var ew float64
		if comp != nil {
			headStates.Reset()
			for _, c := range hc {
				headStates.AppendFrom(&states, cands[c])
			}
			cand := func(h, j int) (int, float64) {
				i := cands[hc[h]]
				if c := nb.Index[i*k+j]; c >= 0 {
					return int(pos[c]), nb.Weight[i*k+j]
				}
				return -1, nb.Weight[i*k+j]
			}
			if extra, ew, err = comp(r, &headStates, k, cand); err != nil {
				return nil, err
			}
			if extra != nil {
				slots++
			}
		}
		b := Batch{N: n, K: slots, Own: &states, Init: &init,
			Neighbour: func(i, j int) (*mixture.States, int, float64) {
				if j == k {
					return ExtraSlot(extra, candOf[i], ew, nb.Weight[i*k:(i+1)*k])
				}
				if c := nb.Index[i*k+j]; c >= 0 {
					return &candStates, int(c), nb.Weight[i*k+j]
				}
				return nil, 0, 0
			},
			Annotations: func(i int) int { return annotations(d.Labels[d.LabelOff[i]:d.LabelOff[i+1]]) },
			Key:         func(i int) uint64 { return uint64(d.Keys[i]) },
		}
		var ran int
		if states, ran, err = rounder.Round(b, r, &o.Mixture); err != nil {
			return nil, fmt.Errorf("engine: round %d of %d items: %w", r, n, err)
		}
		res.ItemRounds += int64(ran)
		if ran == 0 {
			// Nothing moved: every later round would skip every item.
			break
		}
	}
	res.States = states
	if o.Given && singleLabelled(d) {
		k := nb.K
		b := GivenBatch{N: n, K: k, Own: &states,
			Neighbour: func(i, j int) (*mixture.States, int, float64) {
				if c := nb.Index[i*k+j]; c >= 0 {
					return &states, cands[c], nb.Weight[i*k+j]
				}
				return nil, 0, 0
			},
			Key:   func(i int) int64 { return d.Keys[i] },
			Given: func(i int) int32 { return GivenOf(d.Labels[d.LabelOff[i]:d.LabelOff[i+1]]) },
		}
		if res.Given, err = FitGivenBatch(b, o.Mixture.C, o.Mixture.Seed, o.Workers); err != nil {
			return nil, err
		}
		res.States = GivenStates(b, res.Given, o.Mixture.C0, o.Workers)
	}
	return res, nil
}

// singleLabelled reports whether at most half of d's labelled items carry
// several annotations: the given-label model reads one label per item, and
// where most items have several, their own mixture already identifies how
// reliable those are.
func singleLabelled(d *Data) bool {
	var labelled, multi int
	for i := 0; i < d.Len(); i++ {
		switch a := annotations(d.Labels[d.LabelOff[i]:d.LabelOff[i+1]]); {
		case a > 1:
			multi++
			labelled++
		case a == 1:
			labelled++
		}
	}
	return labelled > 0 && 2*multi <= labelled
}

// GivenOf is an item's given label: its one label, the most frequent of
// several (the smallest class of equal counts), or -1 when unlabelled.
func GivenOf(labels []int32) int32 {
	var counts map[int32]int
	best := int32(-1)
	for _, l := range labels {
		if l < 0 {
			continue
		}
		if best < 0 {
			best = l
			continue
		}
		if counts == nil {
			counts = map[int32]int{}
			for _, m := range labels {
				if m >= 0 {
					counts[m]++
				}
			}
		}
		if counts[l] > counts[best] || (counts[l] == counts[best] && l < best) {
			best = l
		}
	}
	return best
}

// ExtraSlot is the extra component's neighbour slot of an item that is
// candidate c (-1: none) with neighbour weights nw: candidate c's state of
// extra, weighted ew times the neighbours' total. Run and the pipeline's
// rounds (pipelines/stages) both call it, so they weigh it alike.
func ExtraSlot(extra *mixture.States, c int32, ew float64, nw []float64) (*mixture.States, int, float64) {
	if c < 0 {
		return nil, 0, 0
	}
	s := 0.0
	for _, w := range nw {
		s += w
	}
	return extra, int(c), ew * s
}

// annotations counts an item's labels (unlabelled entries excluded).
func annotations(labels []int32) int {
	n := 0
	for _, l := range labels {
		if l >= 0 {
			n++
		}
	}
	return n
}

// Annotations counts an item's labels (unlabelled entries excluded).
func Annotations(labels []int32) int { return annotations(labels) }

// RoundScratch is one goroutine's workspace for running mixture.Round over
// items: the gathered neighbour states and weights, and room for unpacking an
// item's own, initial and next states. The engine and both round stages
// (pipelines/stages, pipelines/ivfstages) gather into it, each from where
// its neighbours' states live, and run it through internal/pool.
type RoundScratch struct {
	WS             mixture.Workspace
	Own, Init, Dst mixture.State
	// Neigh and W are the gathered neighbours' states and weights.
	Neigh []mixture.State
	W     []float64
}

// Reset empties the neighbour lists for an item with at most k neighbours,
// keeping the states' buffers for reuse.
func (s *RoundScratch) Reset(k int) {
	if cap(s.Neigh) < k {
		s.Neigh = make([]mixture.State, k)
	}
	s.Neigh, s.W = s.Neigh[:0], s.W[:0]
}

// Neighbour appends a neighbour of weight w and returns its state, for the
// caller to fill (its buffers are reused from earlier items).
func (s *RoundScratch) Neighbour(w float64) *mixture.State {
	s.Neigh = s.Neigh[:len(s.Neigh)+1]
	s.W = append(s.W, w)
	return &s.Neigh[len(s.Neigh)-1]
}

// Moments returns each feature's mean and standard deviation over n rows
// (float64 accumulation; a constant feature gets std 1 so it maps to 0).
func Moments(x []float32, n, d int) (mean, std []float64) {
	mean = make([]float64, d)
	std = make([]float64, d)
	// Each column's sums run over the rows in order whichever worker owns
	// it, so the moments are the same bits on any core count.
	eachSpan(d, n*d, func(lo, hi int) {
		m, s := mean[lo:hi], std[lo:hi]
		for i := 0; i < n; i++ {
			for j, v := range x[i*d+lo : i*d+hi] {
				m[j] += float64(v)
			}
		}
		for j := range m {
			m[j] /= float64(n)
		}
		for i := 0; i < n; i++ {
			for j, v := range x[i*d+lo : i*d+hi] {
				dv := float64(v) - m[j]
				s[j] += dv * dv
			}
		}
		for j := range s {
			s[j] = math.Sqrt(s[j] / float64(n))
			if s[j] == 0 {
				s[j] = 1
			}
		}
	})
	return mean, std
}

// Standardise z-scores x in place.
func Standardise(x []float32, d int, mean, std []float64) {
	StandardiseInto(x, x, d, mean, std)
}

// StandardiseInto writes src z-scored into dst (the same length; dst may be
// src): on every core, rows apart, the same bits as one core's.
func StandardiseInto(dst, src []float32, d int, mean, std []float64) {
	n := len(src) / d
	eachSpan(n, len(src), func(lo, hi int) {
		for i := lo * d; i < hi*d; i += d {
			for j := range d {
				dst[i+j] = float32((float64(src[i+j]) - mean[j]) / std[j])
			}
		}
	})
}

// eachSpan splits [0, n) into one span per core and runs f on each, where
// the work (about cost elements) is large enough to pay for the goroutines.
func eachSpan(n, cost int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	if cost < 1<<16 || w <= 1 {
		f(0, n)
		return
	}
	pool.EachIndex(w, w, func(k int) { f(k*n/w, (k+1)*n/w) })
}
