package engine

import (
	"fmt"

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

// givenScratch is one goroutine's room for gathering an item's neighbours.
type givenScratch struct {
	neigh []mixture.State
	w     []float64
	ev    []mixture.Evidence
	s     mixture.GivenScratch
}

func (g *givenScratch) gather(b *GivenBatch, i int) {
	if cap(g.neigh) < b.K {
		g.neigh = make([]mixture.State, b.K)
	}
	g.neigh, g.w = g.neigh[:0], g.w[:0]
	for j := 0; j < b.K; j++ {
		if ss, at, wt := b.Neighbour(i, j); ss != nil {
			g.neigh = g.neigh[:len(g.neigh)+1]
			ss.Get(&g.neigh[len(g.neigh)-1], at)
			g.w = append(g.w, wt)
		}
	}
}

// GivenScores adds, for every item of b, the log-likelihood of its clean
// label own[i] (negative: none, skipped) under its neighbours' evidence at
// each of mixture.GivenTemperatures to score (one entry per temperature).
// Items are summed in item order: the same batch gives the same bits on any
// number of workers.
func GivenScores(b GivenBatch, own []int32, workers int, score []float64) {
	nt := len(mixture.GivenTemperatures)
	per := make([]float64, b.N*nt)
	var scratch pool.Scratch[givenScratch]
	pool.EachChunk(b.N, workers, &scratch, func(g *givenScratch, _, lo, hi int) {
		if len(g.ev) < nt {
			g.ev = make([]mixture.Evidence, nt)
		}
		for i := lo; i < hi; i++ {
			if own[i] < 0 {
				continue
			}
			g.gather(&b, i)
			for j, t := range mixture.GivenTemperatures {
				mixture.NeighbourEvidence(&g.ev[j], g.neigh, g.w, t, &g.s)
			}
			mixture.GivenScore(per[i*nt:(i+1)*nt], g.ev[:nt], own[i])
		}
	})
	for i := 0; i < b.N; i++ {
		for j := range nt {
			score[j] += per[i*nt+j]
		}
	}
}

// GivenEvidence returns every item's neighbours' evidence at temperature t
// and its given label, in item order.
func GivenEvidence(b GivenBatch, t float64, workers int) ([]mixture.Evidence, []int32) {
	ev := make([]mixture.Evidence, b.N)
	given := make([]int32, b.N)
	var scratch pool.Scratch[givenScratch]
	pool.EachChunk(b.N, workers, &scratch, func(g *givenScratch, _, lo, hi int) {
		for i := lo; i < hi; i++ {
			g.gather(&b, i)
			mixture.NeighbourEvidence(&ev[i], g.neigh, g.w, t, &g.s)
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
	parts := make([]mixture.States, pool.Chunks(b.N))
	var scratch pool.Scratch[givenScratch]
	pool.EachChunk(b.N, workers, &scratch, func(g *givenScratch, c, lo, hi int) {
		if len(g.ev) < 1 {
			g.ev = make([]mixture.Evidence, 1)
		}
		var st mixture.State
		part := &parts[c]
		part.Reset()
		for i := lo; i < hi; i++ {
			g.gather(&b, i)
			mixture.NeighbourEvidence(&g.ev[0], g.neigh, g.w, f.T, &g.s)
			f.Posterior(&st, &g.ev[0], b.Given(i), c0)
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
	score := make([]float64, len(mixture.GivenTemperatures))
	GivenScores(s, own, workers, score)
	t := mixture.GivenTemperature(score)
	ev, given := GivenEvidence(s, t, workers)
	return mixture.FitGiven(ev, given, c, t)
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
