package stages

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// givenFn replaces every item's final state by its posterior under the
// given-label model (engine.FitGivenBatch, engine.GivenStates), reading
// the neighbours' final states from the candidates' states joined under
// one key. The model is fitted over every item at once,
// so the fn holds all batches: the exact and sample modes are for data
// that fits one worker. Batches are put in (shard, offset) order first,
// so that the fit's sums run over the items in the same order whatever
// order the join delivers them in.
type givenFn struct {
	C, C0   int
	Seed    uint64
	Workers int
	Keep    string
}

func (f *givenFn) ProcessElement(ctx context.Context, _ int, items func(*Items) bool, css func(*CandStates) bool, emit func(Items)) error {
	var cs CandStates
	if !css(&cs) {
		cs.States.Reset()
	}
	var all []Items
	var it Items
	for items(&it) {
		all = append(all, it)
		it = Items{}
	}
	slices.SortFunc(all, func(a, b Items) int {
		if c := cmp.Compare(a.Shard, b.Shard); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	// Items are addressed by their place in the concatenation of the
	// sorted batches.
	var off []int
	n, k := 0, 0
	for b := range all {
		off = append(off, n)
		n += all[b].Len()
		k = max(k, all[b].K)
	}
	at := func(i int) (*Items, int) {
		b, found := slices.BinarySearch(off, i)
		if !found {
			b--
		}
		return &all[b], i - off[b]
	}
	var own mixture.States
	own.Reset()
	for b := range all {
		for i := 0; i < all[b].Len(); i++ {
			own.AppendFrom(&all[b].State, i)
		}
	}
	gb := engine.GivenBatch{N: n, K: k, Own: &own,
		Neighbour: func(i, j int) (*mixture.States, int, float64) {
			it, x := at(i)
			if j >= it.K {
				return nil, 0, 0
			}
			if c := it.Neigh[x*it.K+j]; c >= 0 {
				return &cs.States, int(c), it.Weight[x*it.K+j]
			}
			return nil, 0, 0
		},
		Key: func(i int) int64 { it, x := at(i); return it.IDs[x] },
		Given: func(i int) int32 {
			it, x := at(i)
			return schemas.GivenLabel(it.Labels[it.LabelOff[x]:it.LabelOff[x+1]])
		},
	}
	fit, err := engine.FitGivenBatch(gb, f.C, f.Seed, f.Workers)
	if err != nil {
		return fmt.Errorf("stages: given-label model: %w", err)
	}
	if f.Keep != "" {
		if err := KeepGiven(ctx, f.Keep, fit); err != nil {
			return err
		}
	}
	post := engine.GivenStates(gb, fit, f.C0, f.Workers)
	for b := range all {
		next := all[b]
		next.State = mixture.States{}
		next.State.Reset()
		for i := 0; i < next.Len(); i++ {
			next.State.AppendFrom(&post, off[b]+i)
		}
		emit(next)
	}
	return nil
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*givenFn)(nil)).Elem())
}

// GivenParams configures Given.
type GivenParams struct {
	// C is the number of classes, C0 the classes an item's posterior
	// keeps. Required: 2 <= C, 1 <= C0 <= C.
	C, C0 int
	// Seed picks the items the transition is fitted on past
	// mixture.PooledSampleCap. Optional, default 0.
	Seed uint64
	// Workers bounds goroutines. Optional, default 0: GOMAXPROCS.
	Workers int
	// Keep, when set, is a directory (a blobio path every worker can
	// write) where the fit is kept for keptio.ReadFitDir: an incremental run
	// reads the rows it relabels through the same fit. Optional.
	Keep string
}

// Validate checks p.
func (p GivenParams) Validate() error {
	if p.C < 2 || p.C0 < 1 || p.C0 > p.C || p.Workers < 0 {
		return fmt.Errorf("stages: Given: C = %d, C0 = %d, workers = %d", p.C, p.C0, p.Workers)
	}
	return nil
}

// Given reads every item's given label through the class-level label
// transition fitted after the rounds, against its neighbours' final
// posteriors (mixture.GivenFit says why), as engine.Run does with
// engine.Options.Given. PCollection<Items> with final states in,
// PCollection<Items> with the model's posteriors as states out: the
// writer takes them at temperature 1. It panics on invalid p, while the
// pipeline is built.
func Given(s beam.Scope, items beam.PCollection, p GivenParams) beam.PCollection {
	s = s.Scope("relabel.Given")
	if err := p.Validate(); err != nil {
		panic(err)
	}
	cs := beam.Combine(s, &candStatesFn{}, items)
	in := beam.CoGroupByKey(s, beam.ParDo(s, keyItems, items), beam.ParDo(s, keyCandStates, cs))
	return beam.ParDo(s, &givenFn{C: p.C, C0: p.C0, Seed: p.Seed, Workers: p.Workers, Keep: p.Keep}, in)
}
