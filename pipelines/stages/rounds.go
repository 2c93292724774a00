package stages

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// candStatesFn collects the candidates' states of a round into one value in
// candidate order, which the next round's batches are joined with. One value
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

// roundFn runs one round (mixture.Round) for every item of every batch,
// reading neighbours' states of the previous round from the candidates'
// states, both joined under one key (Rounds). Items of a batch run on all
// cores.
//
// The candidates' states come through a join, not as a side input: Prism
// spins its scheduler while a stage with side inputs runs (docs/ARCHITECTURE.md,
// "Long stages read no side input"), and a round is most of a run. One key puts
// every batch on one worker, as the side input did in effect (each worker
// held all candidates' states, and Prism runs a stage's pending elements as
// one bundle); the exact and sample modes are for data that fits one worker.
type roundFn struct {
	Round   int
	Rounds  int
	Mixture mixture.Params
	Workers int

	scratch pool.Scratch[engine.RoundScratch]
	once    sync.Once
}

func (f *roundFn) ProcessElement(ctx context.Context, _ int, items func(*Items) bool, css func(*CandStates) bool, emit func(Items)) error {
	var cs CandStates
	if !css(&cs) {
		cs.States.Reset() // no candidates at all
	}
	f.once.Do(func() { progress.RoundStarted(f.Round, f.Rounds) })
	var it Items
	for items(&it) {
		if err := f.batch(ctx, it, &cs, emit); err != nil {
			return err
		}
		it = Items{}
	}
	return nil
}

// batch runs the round for the items of one batch.
func (f *roundFn) batch(ctx context.Context, it Items, cs *CandStates, emit func(Items)) error {
	n, k := it.Len(), it.K
	if cs.States.Len() == 0 && len(it.Neigh) > 0 {
		return fmt.Errorf("stages: round %d: empty candidate states", f.Round)
	}
	next := it
	var ran int
	next.State, ran = engine.RunRound(engine.Batch{N: n, K: k, Own: &it.State, Init: &it.Init,
		Neighbour: func(i, j int) (*mixture.States, int, float64) {
			if c := it.Neigh[i*k+j]; c >= 0 {
				return &cs.States, int(c), it.Weight[i*k+j]
			}
			return nil, 0, 0
		},
		Annotations: func(i int) int { return engine.Annotations(it.Labels[it.LabelOff[i]:it.LabelOff[i+1]]) },
		Key:         func(i int) uint64 { return uint64(it.IDs[i]) },
	}, f.Round, f.Workers, &f.scratch, &f.Mixture)
	itemRounds.Inc(ctx, int64(ran))
	emit(next)
	return nil
}

// itemRounds counts the item-rounds that ran (summary.json's item_rounds):
// every round stage, exact or ivf, adds the items it ran (settled items
// skip: mixture.Params.ActiveTol).
var itemRounds = beam.NewCounter("relabel", "item_rounds")

func init() {
	register.Combiner2[CandStates, Items](&candStatesFn{})
	register.DoFn5x1[context.Context, int, func(*Items) bool, func(*CandStates) bool, func(Items), error](&roundFn{})
	register.Function1x2(keyItems)
	register.Function1x2(keyCandStates)
	register.Iter1[Items]()
	register.Iter1[CandStates]()
}

// keyItems and keyCandStates put a round's batches and the candidates'
// states under one key, for roundFn's join.
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
	// Head, when set, fits the linear head (transforms/head) before every
	// round and adds its component to the candidates' mixtures
	// (headRoundFn), as engine.Run does with head.Factory. Optional, nil:
	// none (the graph is exactly the one without a head).
	Head *head.Params
	// Features is the candidates' features as given (CandidateFeatures).
	// Required with Head, ignored without.
	Features beam.PCollection
	// Keep, when set with Head, is a directory (a blobio path every worker
	// can write) where the last round keeps the head's fit for ReadKept
	// (keep.go says why). Optional, default "": nothing kept.
	Keep string
}

// Validate checks p, in the stage's terms.
func (p RoundsParams) Validate() error {
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
		if !p.Features.IsValid() {
			errs = append(errs, errors.New("stages: Rounds: a Head without the candidates' Features"))
		}
	}
	return errors.Join(errs...)
}

// Rounds starts items from the pooled transition where p.Mixture says so
// (PooledStart), then runs p.Rounds rounds over them (PCollection<Items>), each joining
// every batch with the candidates' states of the previous round (one value,
// under one key: roundFn says why not a side input), and with p.Head the
// candidates' features and the head's carry too (headRoundFn).
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
	if p.Head != nil {
		carry := beam.Create(s, HeadCarry{})
		feats := beam.ParDo(s, keyCandidates, p.Features)
		for r := 0; r < p.Rounds; r++ {
			rs := s.Scope(fmt.Sprintf("round%02d", r))
			cs := beam.Combine(rs, &candStatesFn{}, items)
			in := beam.CoGroupByKey(rs, beam.ParDo(rs, keyItems, items), beam.ParDo(rs, keyCandStates, cs), feats, beam.ParDo(rs, keyHeadCarry, carry))
			items, carry = beam.ParDo2(rs, &headRoundFn{Round: r, Rounds: p.Rounds, Mixture: p.Mixture, Workers: p.Workers, Head: *p.Head, Keep: p.Keep}, in)
		}
		return items, pooled
	}
	for r := 0; r < p.Rounds; r++ {
		rs := s.Scope(fmt.Sprintf("round%02d", r))
		cs := beam.Combine(rs, &candStatesFn{}, items)
		in := beam.CoGroupByKey(rs, beam.ParDo(rs, keyItems, items), beam.ParDo(rs, keyCandStates, cs))
		items = beam.ParDo(rs, &roundFn{Round: r, Rounds: p.Rounds, Mixture: p.Mixture, Workers: p.Workers}, in)
	}
	return items, pooled
}
