package stages

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// candStatesFn collects the candidates' states of a round into one value in
// candidate order, which the next round's batches read their neighbours'
// states from (roundsFn builds it in place; the given-label stage joins it
// with the batches). One value
// for all batches (rather than a keyed join of every item with each of its K
// neighbours) because the candidate set is bounded (--candidates, default all
// items up to the size the sample/exact modes are meant for): it is shipped
// once in bulk, while a join per neighbour would shuffle K copies of every
// state every round, and Prism holds shuffled data in memory at about 10x its
// size.
type candStatesFn struct{}

func (candStatesFn) CreateAccumulator() CandStates { return CandStates{} }

func (candStatesFn) AddInput(a CandStates, it Items) CandStates {
	for i, c := range it.Cand {
		if c < 0 {
			continue
		}
		a.Idx = append(a.Idx, c)
		a.States.AppendFrom(&it.State, i)
	}
	return a
}

func (candStatesFn) MergeAccumulators(a, b CandStates) CandStates {
	for i, c := range b.Idx {
		a.Idx = append(a.Idx, c)
		a.States.AppendFrom(&b.States, i)
	}
	return a
}

func (candStatesFn) ExtractOutput(a CandStates) CandStates {
	order := make([]int, len(a.Idx))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(a.Idx[x], a.Idx[y]) })
	var out CandStates
	out.States.Reset()
	for _, i := range order {
		out.States.AppendFrom(&a.States, i)
	}
	return out
}

// itemRounds counts the item-rounds that ran (summary.json's item_rounds):
// every round stage, exact or ivf, adds the items it ran (settled items
// skip: mixture.Params.ActiveTol).
var itemRounds = beam.NewCounter("relabel", "item_rounds")

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*candStatesFn)(nil)).Elem())
	register.Function1x2(keyItems)
	register.Function1x2(keyCandStates)
	register.Iter1[Items]()
	register.Iter1[CandStates]()
}

// keyItems and keyCandStates put the batches and the candidates' states
// under one key, for the rounds' and the given-label stage's joins.
func keyItems(it Items) (int, Items)                { return 0, it }
func keyCandStates(cs CandStates) (int, CandStates) { return 0, cs }

// RoundsParams configures Rounds.
type RoundsParams struct {
	// Rounds of sample + EM. Optional, default 0: items keep their initial
	// states.
	Rounds int
	// Workers bounds the goroutines one bundle's items run on. Optional,
	// default 0: GOMAXPROCS.
	Workers int
	// Mixture configures each round. Required: Mixture.C and a valid rest
	// (mixture.Params.Validate), defaults already applied.
	Mixture mixture.Params
	// Device selects the rounds' kernels (gpu.Resolve: cpu, cuda or
	// auto), resolved in each worker's Setup. Optional, default "": auto.
	Device string
	// Head, when set, fits the linear head (transforms/head) before every
	// round and adds its component to the candidates' mixtures
	// (headRoundsFn), as engine.Run does with head.Factory. Optional, nil:
	// none (the graph is exactly the one without a head).
	Head *head.Params
	// Features is the candidates' features as given (CandidateFeatures).
	// Required with Head, ignored without.
	Features beam.PCollection
	// Keep, when set with Head, is a directory (a blobio path every worker
	// can write) where the last round keeps the head's fit for keptio.ReadFitDir
	// (keep.go says why). Optional, default "": nothing kept.
	Keep string
}

// Validate checks p, in the stage's terms.
func (p RoundsParams) Validate() error {
	err := p.validateRounds()
	if p.Head != nil && !p.Features.IsValid() {
		err = errors.Join(err, errors.New("stages: Rounds: a Head without the candidates' Features"))
	}
	return err
}

// validateRounds is Validate without the Features a Head needs: Local
// takes the head's features from the rows it holds.
func (p RoundsParams) validateRounds() error {
	var errs []error
	if p.Rounds < 0 {
		errs = append(errs, fmt.Errorf("stages: Rounds: Rounds = %d, want >= 0", p.Rounds))
	}
	if p.Workers < 0 {
		errs = append(errs, fmt.Errorf("stages: Rounds: Workers = %d, want >= 0 (0: GOMAXPROCS)", p.Workers))
	}
	if err := p.Mixture.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("stages: Rounds: %w", err))
	}
	if p.Head != nil {
		if err := p.Head.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("stages: Rounds: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Rounds starts items from the pooled transition where p.Mixture says so
// (PooledStart), then runs p.Rounds rounds over them (PCollection<Items>) in
// one stage, every batch under one key (roundsFn), and with p.Head the
// candidates' features joined to them under that key (headRoundsFn).
// Returns PCollection<Items> with final states. It panics on invalid p,
// while the pipeline is built.
func Rounds(s beam.Scope, items beam.PCollection, p RoundsParams) beam.PCollection {
	out, _ := RoundsPooled(s, items, p)
	return out
}

// RoundsPooled is Rounds, also returning the pooled start's outcome (one
// PooledModel, for WritePooled; invalid without a pooled start).
func RoundsPooled(s beam.Scope, items beam.PCollection, p RoundsParams) (beam.PCollection, beam.PCollection) {
	s = s.Scope("relabel.Rounds")
	if err := p.Validate(); err != nil {
		panic(err)
	}
	items, pooled := pooledStart(s, items, p.Mixture)
	if p.Rounds == 0 {
		return items, pooled
	}
	keyed := beam.ParDo(s, keyItems, items)
	if p.Head != nil {
		fn := &headRoundsFn{roundsFn{Rounds: p.Rounds, Mixture: p.Mixture, Workers: p.Workers, Device: p.Device, Head: *p.Head, Keep: p.Keep}}
		in := beam.CoGroupByKey(s, keyed, beam.ParDo(s, keyCandidates, p.Features))
		items = beam.ParDo(s, fn, in)
	} else {
		fn := &roundsFn{Rounds: p.Rounds, Mixture: p.Mixture, Workers: p.Workers, Device: p.Device}
		items = beam.ParDo(s, fn, beam.GroupByKey(s, keyed))
	}
	// A fusion break after the rounds: what reads their output first
	// (Write's calibration statistics) takes a side input, and fused into
	// the rounds' one long stage it would make Prism spin its scheduler for
	// the whole of the rounds (docs/ARCHITECTURE.md, "Long stages read no
	// side input"): a third of a 9,300 x 256 run's CPU. Prism only cuts the
	// stage here; other runners send the final batches through once.
	return beam.Reshuffle(s, items), pooled
}
