package stages

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// roundsFn runs every round over all the batches, joined under one key,
// in one stage: each round reads the candidates' states of the round
// before it (candStatesFn's value, built here from the batches) and, with
// the head, fits it first (head.Head.Round) and gives every candidate its
// component as one more neighbour slot (engine.ExtraSlot), as engine.Run
// does.
//
// One stage, not a join per round: a round needs every candidate's state
// of the round before, so the batches of every round were under one key on
// one worker anyway, and the join per round only added, every round, the
// encoding and decoding of every batch, the candidates' states (and with
// the head, the candidates' features) and the runner's shuffle of them: on
// a 9,300 x 256 input more CPU than the rounds themselves. The rounds are
// the same calls on the same states in the same order, so the output is the
// same bytes. The candidates' states come in place, not as a side input:
// Prism spins its scheduler while a stage with side inputs runs
// (docs/ARCHITECTURE.md, "Long stages read no side input"), and the rounds
// are most of a run.
type roundsFn struct {
	Rounds  int
	Mixture mixture.Params
	Workers int
	// Device is RoundsParams.Device, resolved in Setup.
	Device string
	// Head is the head's parameters (headRoundsFn only).
	Head head.Params
	// Keep, when set with the head, is where the last round keeps the
	// head's fit (RoundsParams.Keep).
	Keep string

	scratch pool.Scratch[engine.RoundScratch]
	// rounder runs each batch's round (nil: engine.CPU on Workers and
	// scratch).
	rounder engine.Rounder
}

// Setup resolves the rounds' kernels once per worker process, as the
// neighbour stages resolve theirs (one CUDA context per process, shared by
// every DoFn instance); on the CPU they run on the stage's own goroutines
// and scratch.
func (f *roundsFn) Setup() error {
	var err error
	if f.rounder, err = gpu.RoundsOn(f.Device, f.Workers, &f.scratch); err != nil {
		return fmt.Errorf("stages: rounds: %w", err)
	}
	return nil
}

// ProcessElement is the stage without the head: the batches alone.
func (f *roundsFn) ProcessElement(ctx context.Context, _ int, items func(*Items) bool, emit func(Items)) error {
	return f.run(ctx, collect(items), nil, emit)
}

// headRoundsFn is roundsFn with the head: the batches and the candidates'
// features (CandidateFeatures) joined under the one key.
type headRoundsFn struct{ roundsFn }

func (f *headRoundsFn) ProcessElement(ctx context.Context, _ int, items func(*Items) bool, feats func(*Candidates) bool, emit func(Items)) error {
	var cands Candidates
	feats(&cands)
	return f.run(ctx, collect(items), &cands, emit)
}

// collect reads every batch of the iterator.
func collect(items func(*Items) bool) []Items {
	var batches []Items
	var it Items
	for items(&it) {
		batches = append(batches, it)
		it = Items{}
	}
	return batches
}

// run runs the rounds over batches and emits the last round's batches;
// cands is the candidates' features with the head, nil without.
func (f *roundsFn) run(ctx context.Context, batches []Items, cands *Candidates, emit func(Items)) error {
	var h *head.Head
	var k int
	var neigh []int32
	var weight []float64
	for r := range f.Rounds {
		progress.RoundStarted(r, f.Rounds)
		cs := candidateStates(batches)
		if cands != nil && len(cands.Keys) > 0 {
			nc := len(cands.Keys)
			if cs.States.Len() != nc {
				return fmt.Errorf("stages: round %d: %d candidates' states for %d candidates' features", r, cs.States.Len(), nc)
			}
			if h == nil {
				// Each candidate's neighbours and weights, in candidate
				// order, for the head's vote: the same every round.
				var err error
				if k, neigh, weight, err = candidateNeighbours(batches, nc); err != nil {
					return fmt.Errorf("stages: round %d: %w", r, err)
				}
				if h, err = head.New(cands.Features, cands.Keys, cands.D, f.Mixture.C, f.Head); err != nil {
					return fmt.Errorf("stages: round %d: %w", r, err)
				}
			}
		}
		var extra *mixture.States
		var ew float64
		if h != nil {
			var err error
			extra, ew, err = h.Round(r, &cs.States, k, func(c, j int) (int, float64) {
				return int(neigh[c*k+j]), weight[c*k+j]
			}, f.Mixture.C0, f.Mixture.Smooth)
			if err != nil {
				return fmt.Errorf("stages: round %d: %w", r, err)
			}
			if f.Keep != "" && r == f.Rounds-1 {
				if err := KeepHead(ctx, f.Keep, h); err != nil {
					return fmt.Errorf("stages: round %d: %w", r, err)
				}
			}
			if extra != nil {
				headRounds.Inc(ctx, 1)
				if r == f.Rounds-1 {
					headLast.Inc(ctx, 1)
				}
			}
		}
		next := make([]Items, len(batches))
		for b := range batches {
			var err error
			if next[b], err = f.batch(ctx, r, &batches[b], &cs, extra, ew); err != nil {
				return err
			}
		}
		batches = next
	}
	for _, bt := range batches {
		emit(bt)
	}
	return nil
}

// candidateStates is the candidates' states of the batches, in candidate
// order: what candStatesFn combines them into.
func candidateStates(batches []Items) CandStates {
	var fn candStatesFn
	acc := fn.CreateAccumulator()
	for _, bt := range batches {
		acc = fn.AddInput(acc, bt)
	}
	return fn.ExtractOutput(acc)
}

// candidateNeighbours returns the batches' K and each of the nc
// candidates' neighbours and weights (nc x K, candidate order).
func candidateNeighbours(batches []Items, nc int) (int, []int32, []float64, error) {
	if len(batches) == 0 {
		return 0, nil, nil, nil
	}
	k := batches[0].K
	neigh := make([]int32, nc*k)
	weight := make([]float64, nc*k)
	for b := range batches {
		bt := &batches[b]
		if bt.K != k {
			return 0, nil, nil, fmt.Errorf("batches of %d and %d neighbours", k, bt.K)
		}
		for i, c := range bt.Cand {
			if c >= 0 {
				copy(neigh[int(c)*k:int(c+1)*k], bt.Neigh[i*k:(i+1)*k])
				copy(weight[int(c)*k:int(c+1)*k], bt.Weight[i*k:(i+1)*k])
			}
		}
	}
	return k, neigh, weight, nil
}

// batch runs round r for the items of one batch, reading neighbours'
// states from cs, and with the head's states extra (weight ew) one more
// slot per candidate.
func (f *roundsFn) batch(ctx context.Context, r int, bt *Items, cs *CandStates, extra *mixture.States, ew float64) (Items, error) {
	n, k := bt.Len(), bt.K
	if cs.States.Len() == 0 && len(bt.Neigh) > 0 {
		return Items{}, fmt.Errorf("stages: round %d: empty candidate states", r)
	}
	slots := k
	if extra != nil {
		slots++
	}
	next := *bt
	rounder := engine.WithWorkers(f.rounder, f.Workers, &f.scratch)
	var ran int
	var err error
	next.State, ran, err = rounder.Round(engine.Batch{N: n, K: slots, Own: &bt.State, Init: &bt.Init,
		Neighbour: func(i, j int) (*mixture.States, int, float64) {
			if j == k {
				return engine.ExtraSlot(extra, bt.Cand[i], ew, bt.Weight[i*k:(i+1)*k])
			}
			if c := bt.Neigh[i*k+j]; c >= 0 {
				return &cs.States, int(c), bt.Weight[i*k+j]
			}
			return nil, 0, 0
		},
		Annotations: func(i int) int { return engine.Annotations(bt.Labels[bt.LabelOff[i]:bt.LabelOff[i+1]]) },
		Key:         func(i int) uint64 { return uint64(bt.IDs[i]) },
	}, r, &f.Mixture)
	if err != nil {
		return Items{}, fmt.Errorf("stages: round %d: batch of %d items: %w", r, n, err)
	}
	itemRounds.Inc(ctx, int64(ran))
	return next, nil
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*roundsFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*headRoundsFn)(nil)).Elem())
}
