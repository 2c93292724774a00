package stages

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"runtime"
	"slices"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// candStatesFn collects the candidates' states of a round into one value in
// candidate order: the side input of the next round. A side input (rather than
// a keyed join of every item with each of its K neighbours) because the
// candidate set is bounded (--candidates, default all items up to the size the
// sample/exact modes are meant for): it is shipped once per bundle in bulk, while a
// join would shuffle K copies of every state every round, and Prism holds
// shuffled data in memory at about 10x its size.
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

// roundFn runs one round (mixture.Round) for every item of a batch, reading
// neighbours' states of the previous round from the side input. Items of a
// batch run on all cores: Prism may hand a worker one bundle at a time.
type roundFn struct {
	Round   int
	Rounds  int
	Mixture mixture.Params
	Workers int

	pool sync.Pool
	once sync.Once
}

type roundWorker struct {
	ws    mixture.Workspace
	own   mixture.State
	init  mixture.State
	dst   mixture.State
	neigh []mixture.State
	w     []float64
}

func (f *roundFn) ProcessElement(ctx context.Context, it Items, cs CandStates, emit func(Items)) error {
	n, k := it.Len(), it.K
	if cs.States.Len() == 0 && len(it.Neigh) > 0 {
		return fmt.Errorf("stages: round %d: empty candidate states", f.Round)
	}
	f.once.Do(func() {
		if f.Round == f.Rounds-1 || f.Round == 0 {
			log.Printf("relabel: round %d/%d started", f.Round+1, f.Rounds)
		}
	})
	out := make([]mixture.State, n)
	workers := f.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	const chunk = 64
	next := make(chan int, workers)
	go func() {
		for lo := 0; lo < n; lo += chunk {
			next <- lo
		}
		close(next)
	}()
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, _ := f.pool.Get().(*roundWorker)
			if w == nil {
				w = &roundWorker{}
			}
			defer f.pool.Put(w)
			for lo := range next {
				for i := lo; i < min(lo+chunk, n); i++ {
					f.one(w, &it, &cs, i, k, &out[i])
				}
			}
		}()
	}
	wg.Wait()
	next2 := it
	next2.State = mixture.States{}
	next2.State.Reset()
	for i := range out {
		next2.State.Append(&out[i])
	}
	itemRounds.Inc(ctx, int64(n))
	emit(next2)
	return nil
}

func (f *roundFn) one(w *roundWorker, it *Items, cs *CandStates, i, k int, dst *mixture.State) {
	if cap(w.neigh) < k {
		w.neigh = make([]mixture.State, k)
	}
	w.neigh, w.w = w.neigh[:0], w.w[:0]
	for j := 0; j < k; j++ {
		c := it.Neigh[i*k+j]
		if c < 0 {
			continue
		}
		w.neigh = w.neigh[:len(w.neigh)+1]
		cs.States.Get(&w.neigh[len(w.neigh)-1], int(c))
		w.w = append(w.w, it.Weight[i*k+j])
	}
	it.State.Get(&w.own, i)
	var init *mixture.State
	if it.Init.Len() > 0 {
		it.Init.Get(&w.init, i)
		init = &w.init
	}
	iw := f.Mixture.AnchorWeight(engine.Annotations(it.Labels[it.LabelOff[i]:it.LabelOff[i+1]]))
	w.ws.Round(&w.dst, &w.own, init, iw, w.neigh, w.w, uint64(it.IDs[i]), f.Round, &f.Mixture)
	dst.CopyFrom(&w.dst)
}

var itemRounds = beam.NewCounter("relabel", "item_rounds")

func init() {
	register.Combiner2[CandStates, Items](&candStatesFn{})
	register.DoFn4x1[context.Context, Items, CandStates, func(Items), error](&roundFn{})
}

// Rounds runs R rounds over items (PCollection<Items>), each reading the
// candidates' states of the previous round as a singleton side input.
// Returns PCollection<Items> with final states.
func Rounds(s beam.Scope, items beam.PCollection, rounds, workers int, p mixture.Params) beam.PCollection {
	s = s.Scope("relabel.Rounds")
	for r := 0; r < rounds; r++ {
		rs := s.Scope(fmt.Sprintf("round%02d", r))
		cs := beam.Combine(rs, &candStatesFn{}, items)
		items = beam.ParDo(rs, &roundFn{Round: r, Rounds: rounds, Mixture: p, Workers: workers}, items, beam.SideInput{Input: cs})
	}
	return items
}
