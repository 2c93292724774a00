package engine

import (
	"fmt"
	"slices"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/mixture"
)

// GivenBatch is what the given-label model (mixture.GivenFit) reads of a
// batch of n items after the last round: their final states, their
// neighbours' (Neighbour, as Batch's), their keys and single given labels
// (negative: unlabelled).
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

// GivenScores adds, for every item of b, the log-likelihood of its own
// clean label (the top class of its final state) under its neighbours'
// evidence at each of mixture.GivenTemperatures to score (one entry per
// temperature). Items are summed in item order: the same batch gives the
// same bits on any number of workers.
func GivenScores(b GivenBatch, workers int, score []float64) {
	nt := len(mixture.GivenTemperatures)
	per := make([]float64, b.N*nt)
	var scratch pool.Scratch[givenScratch]
	pool.EachChunk(b.N, workers, &scratch, func(g *givenScratch, _, lo, hi int) {
		if len(g.ev) < nt {
			g.ev = make([]mixture.Evidence, nt)
		}
		for i := lo; i < hi; i++ {
			own, _ := b.Own.Top(i)
			if own < 0 {
				continue
			}
			g.gather(&b, i)
			for j, t := range mixture.GivenTemperatures {
				mixture.NeighbourEvidence(&g.ev[j], g.neigh, g.w, t, &g.s)
			}
			mixture.GivenScore(per[i*nt:(i+1)*nt], g.ev[:nt], own)
		}
	})
	for i := 0; i < b.N; i++ {
		for j := range nt {
			score[j] += per[i*nt+j]
		}
	}
}

// GivenSample returns the evidence at temperature t and given label of the
// labelled items of b that the transition's fit reads: those among the
// mixture.PooledSampleCap first by PooledBefore (every item below the
// cap), in ascending key order.
func GivenSample(b GivenBatch, t float64, seed uint64, workers int) ([]mixture.Evidence, []int32) {
	keys := make([]int64, b.N)
	for i := range keys {
		keys[i] = b.Key(i)
	}
	idx := PooledSample(keys, seed)
	idx = slices.DeleteFunc(idx, func(i int) bool { return b.Given(i) < 0 })
	ev := make([]mixture.Evidence, len(idx))
	given := make([]int32, len(idx))
	var scratch pool.Scratch[givenScratch]
	pool.EachChunk(len(idx), workers, &scratch, func(g *givenScratch, _, lo, hi int) {
		for x := lo; x < hi; x++ {
			i := idx[x]
			g.gather(&b, i)
			mixture.NeighbourEvidence(&ev[x], g.neigh, g.w, t, &g.s)
			given[x] = b.Given(i)
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

// FitGivenBatch chooses the neighbours' temperature and fits the
// given-label model over b (GivenScores, GivenSample, mixture.FitGiven).
func FitGivenBatch(b GivenBatch, c int, seed uint64, workers int) (*mixture.GivenFit, error) {
	score := make([]float64, len(mixture.GivenTemperatures))
	GivenScores(b, workers, score)
	t := mixture.GivenTemperature(score)
	ev, given := GivenSample(b, t, seed, workers)
	return mixture.FitGiven(ev, given, c, t)
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
