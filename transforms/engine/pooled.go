package engine

import (
	"cmp"
	"slices"

	"github.com/relabel/relabel/transforms/mixture"
)

// PooledInputs are the compact per-item inputs of the pooled fit
// (mixture.FitPooled): the fitted items' keys, given labels and
// neighbours (candidate indices, K per item, -1: none), in ascending key
// order, and the given labels of every candidate, in candidate order. The
// engine builds them from its data (PooledInputsOf), relabel run's stages
// gather them from their batches (pipelines/stages.PooledStart); both
// fit the same items in the same order, so the fit's float sums, and with
// them the fitted model, are the same bit for bit, whatever the runner,
// its bundles or the worker count.
type PooledInputs struct {
	K                   int
	Keys                []int64
	Labels, LabelOff    []int32
	Neigh               []int32
	CandLabels, CandOff []int32
}

// Len is the number of fitted items.
func (in *PooledInputs) Len() int { return len(in.Keys) }

// PooledBefore orders items for the fit's sample: by CandidateHash of
// (seed, key), then key, as SelectCandidates orders candidates. The fit
// reads the mixture.PooledSampleCap items first in this order (all of
// them below the cap).
func PooledBefore(seed uint64, a, b int64) bool {
	ha, hb := CandidateHash(seed, a), CandidateHash(seed, b)
	if ha != hb {
		return ha < hb
	}
	return a < b
}

// PooledSample returns the indices of the items the pooled fit reads, in
// ascending key order: every item up to mixture.PooledSampleCap, past it
// the PooledSampleCap first by PooledBefore.
func PooledSample(keys []int64, seed uint64) []int {
	idx := SelectCandidates(keys, mixture.PooledSampleCap, seed)
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	return idx
}

// PooledInputsOf gathers the fit's inputs from d, its neighbourhoods and
// candidate set (item indices in candidate order).
func PooledInputsOf(d *Data, nb *Neighbourhoods, cands []int, seed uint64) PooledInputs {
	k := nb.K
	in := PooledInputs{K: k, LabelOff: []int32{0}, CandOff: []int32{0}}
	for _, i := range PooledSample(d.Keys, seed) {
		in.Keys = append(in.Keys, d.Keys[i])
		in.Labels = append(in.Labels, d.Labels[d.LabelOff[i]:d.LabelOff[i+1]]...)
		in.LabelOff = append(in.LabelOff, int32(len(in.Labels)))
		in.Neigh = append(in.Neigh, nb.Index[i*k:(i+1)*k]...)
	}
	for _, i := range cands {
		in.CandLabels = append(in.CandLabels, d.Labels[d.LabelOff[i]:d.LabelOff[i+1]]...)
		in.CandOff = append(in.CandOff, int32(len(in.CandLabels)))
	}
	return in
}

// FitPooledStart fits the pooled transition (at most p.PooledIters EM
// steps, stopping at p.PooledTol; p.PooledSplit) over in and says whether the gate takes it
// (p.PooledGate 0: always; else Structure at or above the gate). The
// model is nil where nothing is fitted: the pooled start off
// (PooledIters 0), fewer than two classes, or no item.
func FitPooledStart(in *PooledInputs, p *mixture.Params) (m *mixture.Pooled, open bool, err error) {
	if p.PooledIters <= 0 || p.C < 2 || in.Len() == 0 {
		return nil, false, nil
	}
	m, _, err = mixture.FitPooled(mixture.PooledInput{N: in.Len(), K: in.K, C: p.C,
		Labels: in.Labels, LabelOff: in.LabelOff, Index: in.Neigh,
		NLabels: in.CandLabels, NLabelOff: in.CandOff, SplitOwn: p.PooledSplit}, p.PooledIters, p.PooledTol)
	if err != nil {
		return nil, false, err
	}
	return m, p.PooledOpen(m), nil
}

// PooledStarter sets items' initial states from a fitted pooled
// transition: each item's posterior under it (of its own labels and its
// neighbours', mixture.PooledScorer; of its own alone with
// Params.PooledOwn), weighted Params.PooledWeight against its given
// labels (mixture.State.InitPosterior). One per goroutine.
type PooledStarter struct {
	m  *mixture.Pooled
	sc *mixture.PooledScorer
	p  *mixture.Params
	q  []float64
}

// NewPooledStarter returns a starter of m under p.
func NewPooledStarter(m *mixture.Pooled, p *mixture.Params) *PooledStarter {
	return &PooledStarter{m: m, sc: m.Scorer(), p: p, q: make([]float64, p.C)}
}

// Start sets st to the start of an item with the given labels and k
// neighbours whose labels neighbour(j) returns (ok false: none).
func (s *PooledStarter) Start(st *mixture.State, labels []int32, k int, neighbour func(j int) ([]int32, bool)) {
	if s.p.PooledOwn {
		s.m.OwnPosterior(s.q, labels)
	} else {
		s.sc.Posterior(s.q, labels, k, neighbour)
	}
	st.InitPosterior(s.q, labels, s.p.PooledWeight, s.p.C0, s.p.Smooth)
}
