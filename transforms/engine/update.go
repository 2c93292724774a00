package engine

import (
	"fmt"
	"math"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/mixture"
)

// NoNeighbour marks an empty neighbour slot of an Update.
const NoNeighbour = math.MinInt32

// Update is an incremental run's rounds (the lake's): a subset of the items
// (new rows, and old rows a new row became a neighbour of) runs every round
// from its given labels, while their other neighbours keep the states the
// last run stored. It runs through a Rounder (RunRound's contract), as Run
// and both pipelines' rounds do, so every round option (--active-tol
// included) means what it means in a full run.
type Update struct {
	// N is the number of items that run, K the neighbour slots per item.
	N, K int
	// Labels is item i's given labels (its initial state and its anchor).
	Labels func(i int) []int32
	// Key is item i's key, for seeding its draws.
	Key func(i int) uint64
	// Src locates item i's neighbour j, Src[i*K+j]: >= 0 an item of the
	// update (its state of the last round), NoNeighbour none, else Fixed's
	// item -Src-1.
	Src []int32
	// Weight is the mixture weight of each neighbour slot, as Src.
	Weight []float64
	// Fixed are the states of the neighbours that do not run.
	Fixed *mixture.States
	// Start, when set, starts item i from a fitted pooled transition (the
	// one the run that made the Fixed states started its items from), with
	// the given labels of its neighbours: NeighbourLabels(i, j) is item
	// i's neighbour j's (ok false: none). Nil: item i starts from its own
	// labels (mixture.State.Init).
	Start           *PooledStarter
	NeighbourLabels func(i, j int) ([]int32, bool)
	// Extra, when set, is one more mixture component per item (item i's
	// state at i: a kept linear head's, transforms/head.Fit), weighted
	// ExtraWeight times the item's neighbours' total in every round
	// (ExtraSlot), as Run weighs a Component's.
	Extra       *mixture.States
	ExtraWeight float64
	// Progress, if set, is called as each round starts.
	Progress func(round int)
	// Rounder runs the rounds (gpu.Resolve's). Optional, nil or the zero
	// CPU: RunRound on Run's workers and scratch (WithWorkers).
	Rounder Rounder
}

// Run runs rounds rounds of the update on workers goroutines and returns the
// items' final states, packed in item order, and how many item-rounds ran;
// an error is the Rounder's (a device's failure).
func (u *Update) Run(rounds, workers int, scratch *pool.Scratch[RoundScratch], p *mixture.Params) (mixture.States, int64, error) {
	rounder := WithWorkers(u.Rounder, workers, scratch)
	var states, init mixture.States
	states.Reset()
	var st mixture.State
	for i := 0; i < u.N; i++ {
		if u.Start != nil {
			u.Start.Start(&st, u.Labels(i), u.K, func(j int) ([]int32, bool) { return u.NeighbourLabels(i, j) })
		} else {
			st.Init(u.Labels(i), p.C, p.C0, p.Smooth)
		}
		states.Append(&st) // packing quantizes, as Run's states are
	}
	if p.UsesInit() {
		init.Reset()
		for i := 0; i < u.N; i++ {
			init.AppendFrom(&states, i)
		}
	}
	var total int64
	for r := 0; r < rounds; r++ {
		if u.Progress != nil {
			u.Progress(r)
		}
		own := states
		slots := u.K
		if u.Extra != nil {
			slots++
		}
		b := Batch{N: u.N, K: slots, Own: &own, Init: &init,
			Neighbour: func(i, j int) (*mixture.States, int, float64) {
				if j == u.K {
					return ExtraSlot(u.Extra, int32(i), u.ExtraWeight, u.Weight[i*u.K:(i+1)*u.K])
				}
				switch at := u.Src[i*u.K+j]; {
				case at == NoNeighbour:
					return nil, 0, 0
				case at >= 0:
					return &own, int(at), u.Weight[i*u.K+j]
				default:
					return u.Fixed, int(-at - 1), u.Weight[i*u.K+j]
				}
			},
			Annotations: func(i int) int { return annotations(u.Labels(i)) },
			Key:         u.Key,
		}
		var ran int
		var err error
		if states, ran, err = rounder.Round(b, r, p); err != nil {
			return mixture.States{}, total, fmt.Errorf("engine: update round %d of %d items: %w", r, u.N, err)
		}
		total += int64(ran)
		if ran == 0 {
			break // nothing moved: every later round would skip every item
		}
	}
	return states, total, nil
}
