package engine

import (
	"fmt"
	"slices"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/mixture"
)

// GivenBatch is what the given-label model (mixture.GivenFit) reads of a
// batch of n items after the last round: their final states (Own: only
// FitGivenBatch reads them), their neighbours' (Neighbour, as Batch's),
// their keys and single given labels (negative: unlabelled).
type GivenBatch struct {
	N, K      int
	Own       *mixture.States
	Neighbour func(i, j int) (ss *mixture.States, at int, weight float64)
	Key       func(i int) int64
	Given     func(i int) int32
}

// tempered is a batch's neighbour references with each referenced state's
// posterior tempered at every one of a list of temperatures, once per
// state: a state neighbours about K items, and tempering it again for each
// of them (math.Pow per class, temperature and neighbour) was most of the
// temperature choice's CPU. The evidence it gives is
// mixture.NeighbourEvidence's, bit for bit: the same tempered values summed
// in the same neighbour order.
type tempered struct {
	k, nt int
	// ref[i*k+j] is neighbour j of item i as an index into cls and off
	// (-1: absent, of weight <= 0 or with an empty state: it adds
	// nothing), w[i*k+j] its weight.
	ref []int32
	w   []float64
	// cls[u] is referenced state u's classes (a view of its packed
	// Class); its values tempered at temperature x are
	// q[off[u]+x*len(cls[u]):][:len(cls[u])].
	cls [][]int32
	off []int
	q   []float32
}

// temper gathers b's neighbour references (of the items with want(i); nil:
// every item) and tempers each state they reference at temps.
func temper(b *GivenBatch, temps []float64, want func(i int) bool, workers int) *tempered {
	tn := &tempered{k: b.K, nt: len(temps), ref: make([]int32, b.N*b.K), w: make([]float64, b.N*b.K)}
	type state struct {
		ss *mixture.States
		at int
	}
	var uniq []state
	// Each distinct packed States gets an index of its items' unique
	// numbers; a batch's neighbours live in one or a few of them.
	seen := map[*mixture.States][]int32{}
	var last *mixture.States
	var lastIdx []int32
	for i := 0; i < b.N; i++ {
		row := tn.ref[i*b.K : (i+1)*b.K]
		if want != nil && !want(i) {
			for j := range row {
				row[j] = -1
			}
			continue
		}
		for j := range row {
			row[j] = -1
			ss, at, wt := b.Neighbour(i, j)
			if ss == nil || wt <= 0 || ss.ItemOff[at] == ss.ItemOff[at+1] {
				continue
			}
			if ss != last {
				idx, ok := seen[ss]
				if !ok {
					idx = make([]int32, ss.Len())
					for x := range idx {
						idx[x] = -1
					}
					seen[ss] = idx
				}
				last, lastIdx = ss, idx
			}
			if lastIdx[at] < 0 {
				lastIdx[at] = int32(len(uniq))
				uniq = append(uniq, state{ss, at})
			}
			row[j], tn.w[i*b.K+j] = lastIdx[at], wt
		}
	}
	tn.cls, tn.off = make([][]int32, len(uniq)), make([]int, len(uniq))
	n := 0
	for u, st := range uniq {
		tn.cls[u] = st.ss.Class[st.ss.ItemOff[st.at]:st.ss.ItemOff[st.at+1]]
		tn.off[u] = n
		n += len(tn.cls[u]) * len(temps)
	}
	tn.q = make([]float32, n)
	pool.EachChunk(len(uniq), workers, nil, func(_ *struct{}, _, lo, hi int) {
		for u := lo; u < hi; u++ {
			st := uniq[u]
			pi := st.ss.Pi[st.ss.ItemOff[st.at]:st.ss.ItemOff[st.at+1]]
			for x, t := range temps {
				at := tn.off[u] + x*len(pi)
				mixture.Temper(tn.q[at:at:at+len(pi)], pi, t)
			}
		}
	})
	return tn
}

// evidence sets e to item i's neighbours' evidence at temperature x.
func (tn *tempered) evidence(e *mixture.Evidence, i, x int) {
	e.Reset()
	var ws float64
	for j, u := range tn.ref[i*tn.k : (i+1)*tn.k] {
		if u < 0 {
			continue
		}
		n := len(tn.cls[u])
		at := tn.off[u] + x*n
		w := tn.w[i*tn.k+j]
		e.Add(tn.cls[u], tn.q[at:at+n], w)
		ws += w
	}
	e.Normalise(ws)
}

// GivenScores adds, for every item of b, the log-likelihood of its clean
// label own[i] (negative: none, skipped) under its neighbours' evidence at
// each of mixture.GivenTemperatures to score (one entry per temperature).
// Items are summed in item order: the same batch gives the same bits on any
// number of workers.
func GivenScores(b GivenBatch, own []int32, workers int, score []float64) {
	givenScores(temper(&b, mixture.GivenTemperatures, func(i int) bool { return own[i] >= 0 }, workers), own, workers, score)
}

func givenScores(tn *tempered, own []int32, workers int, score []float64) {
	nt := tn.nt
	per := make([]float64, len(own)*nt)
	var scratch pool.Scratch[[]mixture.Evidence]
	pool.EachChunk(len(own), workers, &scratch, func(ev *[]mixture.Evidence, _, lo, hi int) {
		if len(*ev) < nt {
			*ev = make([]mixture.Evidence, nt)
		}
		for i := lo; i < hi; i++ {
			if own[i] < 0 {
				continue
			}
			for x := range nt {
				tn.evidence(&(*ev)[x], i, x)
			}
			mixture.GivenScore(per[i*nt:(i+1)*nt], (*ev)[:nt], own[i])
		}
	})
	for i := range own {
		for x := range nt {
			score[x] += per[i*nt+x]
		}
	}
}

// GivenEvidence returns every item's neighbours' evidence at temperature t
// and its given label, in item order.
func GivenEvidence(b GivenBatch, t float64, workers int) ([]mixture.Evidence, []int32) {
	return givenEvidence(&b, temper(&b, []float64{t}, nil, workers), 0, workers)
}

// givenEvidence is GivenEvidence at tn's temperature x.
func givenEvidence(b *GivenBatch, tn *tempered, x, workers int) ([]mixture.Evidence, []int32) {
	ev := make([]mixture.Evidence, b.N)
	given := make([]int32, b.N)
	pool.EachChunk(b.N, workers, nil, func(_ *struct{}, _, lo, hi int) {
		for i := lo; i < hi; i++ {
			tn.evidence(&ev[i], i, x)
			given[i] = b.Given(i)
		}
	})
	return ev, given
}

// GivenStates returns every item's clean-label posterior under the fitted
// model f, packed in item order (most probable first, at most c0 classes,
// no transition rows): what the output reads instead of the tempered final
// states.
func GivenStates(b GivenBatch, f *mixture.GivenFit, c0, workers int) mixture.States {
	tn := temper(&b, []float64{f.T}, nil, workers)
	parts := make([]mixture.States, pool.Chunks(b.N))
	pool.EachChunk(b.N, workers, nil, func(_ *struct{}, c, lo, hi int) {
		var st mixture.State
		var ev mixture.Evidence
		var ps mixture.PosteriorScratch
		part := &parts[c]
		part.Reset()
		for i := lo; i < hi; i++ {
			tn.evidence(&ev, i, 0)
			f.Posterior(&st, &ev, b.Given(i), c0, &ps)
			part.Append(&st)
		}
	})
	var out mixture.States
	out.Concat(parts)
	return out
}

// FitGivenSample fits the given-label model on the items of s (the sample
// FitGivenBatch draws), whose clean labels after the rounds (the top class
// of each item's final state; negative: none) are own: the neighbours'
// temperature is the one at which their evidence best predicts those
// labels, and the transition is fitted at that temperature
// (mixture.FitGiven). Iterating the two to a fixed point (the temperature
// chosen again to predict the fit's own output) was tried and dropped: it
// drifts towards keeping every given label (docs/QUALITY.md).
func FitGivenSample(s GivenBatch, own []int32, c, workers int) (*mixture.GivenFit, error) {
	tn := temper(&s, mixture.GivenTemperatures, nil, workers)
	score := make([]float64, len(mixture.GivenTemperatures))
	givenScores(tn, own, workers, score)
	t := mixture.GivenTemperature(score)
	ev, given := givenEvidence(&s, tn, slices.Index(mixture.GivenTemperatures, t), workers)
	return mixture.FitGiven(ev, given, c, t, workers)
}

// FitGivenBatch fits the given-label model over b (FitGivenSample) on the
// items among the mixture.PooledSampleCap first by PooledBefore (every
// item below the cap), in ascending key order.
func FitGivenBatch(b GivenBatch, c int, seed uint64, workers int) (*mixture.GivenFit, error) {
	keys := make([]int64, b.N)
	for i := range keys {
		keys[i] = b.Key(i)
	}
	idx := PooledSample(keys, seed)
	s := GivenBatch{N: len(idx), K: b.K,
		Neighbour: func(i, j int) (*mixture.States, int, float64) { return b.Neighbour(idx[i], j) },
		Key:       func(i int) int64 { return b.Key(idx[i]) },
		Given:     func(i int) int32 { return b.Given(idx[i]) },
	}
	own := make([]int32, len(idx))
	for x, i := range idx {
		own[x], _ = b.Own.Top(i)
	}
	return FitGivenSample(s, own, c, workers)
}

// GivenModel is how the output reads an item's given label.
type GivenModel int

const (
	// GivenVote leaves the given label where the rounds put it: one
	// component of the item's mixture; the output is the final states.
	GivenVote GivenModel = iota
	// GivenBayes reads it through the fitted class-level transition
	// against the neighbours' final posteriors (Options.Given).
	GivenBayes
)

func (m GivenModel) String() string {
	switch m {
	case GivenVote:
		return "vote"
	case GivenBayes:
		return "bayes"
	}
	return fmt.Sprintf("GivenModel(%d)", int(m))
}

// ParseGivenModel parses "vote" or "bayes".
func ParseGivenModel(s string) (GivenModel, error) {
	switch s {
	case "vote":
		return GivenVote, nil
	case "bayes":
		return GivenBayes, nil
	}
	return 0, fmt.Errorf("engine: unknown given-label model %q (want vote or bayes)", s)
}
