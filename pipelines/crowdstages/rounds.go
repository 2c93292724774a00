package crowdstages

import (
	"cmp"
	"fmt"
	"log"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/transforms/crowd"
)

// statsFn combines the E step's expected counts of every batch.
type statsFn struct {
	C int
}

func (f *statsFn) CreateAccumulator() crowd.Stats { return *crowd.NewStats(f.C) }

func (f *statsFn) AddInput(a crowd.Stats, b Batch) (crowd.Stats, error) {
	if err := b.unspill(); err != nil {
		return a, err
	}
	for i := 0; i < b.Len(); i++ {
		ann, lab := b.Item(i)
		a.Add(b.Post[i*b.C:(i+1)*b.C], ann, lab)
	}
	return a, nil
}

func (f *statsFn) MergeAccumulators(a, b crowd.Stats) crowd.Stats {
	a.Merge(&b)
	return a
}

func (f *statsFn) ExtractOutput(a crowd.Stats) crowd.Stats { return a }

// estimateFn is the M step: the model from the combined statistics of
// iteration Round's batches. It runs after every reader of iteration
// Round-1's batches, and removes their spill generation (Spill).
type estimateFn struct {
	Params crowd.Params
	Round  int
	Spill  spillio.Dir
}

func (f *estimateFn) ProcessElement(s crowd.Stats, emit func(modelMsg)) error {
	if err := drop(f.Spill, f.Round-1); err != nil {
		return err
	}
	m := crowd.Estimate(&s, f.Params)
	if f.Round == 0 || f.Round == f.Params.Iterations {
		log.Printf("relabel: crowd iteration %d: %d items, %d annotators, prior strength %.3g", f.Round, s.Items, len(m.Annotators), m.Strength)
	}
	msg, err := putModel(f.Spill, f.Round, m)
	if err != nil {
		return err
	}
	emit(msg)
	return nil
}

// candPostsFn collects the candidates' posteriors of one iteration, in
// candidate order: the side input of the next E step with features, inline
// or, spilled, as the candidate file of generation Gen (candMsg).
type candPostsFn struct {
	C     int
	Gen   int
	Spill spillio.Dir
}

func (f *candPostsFn) CreateAccumulator() CandPosts { return CandPosts{C: f.C} }

func (f *candPostsFn) AddInput(a CandPosts, b Batch) (CandPosts, error) {
	if err := b.unspill(); err != nil {
		return a, err
	}
	for i, c := range b.Cand {
		if c < 0 {
			continue
		}
		a.Idx = append(a.Idx, c)
		a.Post = append(a.Post, b.Post[i*b.C:(i+1)*b.C]...)
	}
	return a, nil
}

func (f *candPostsFn) MergeAccumulators(a, b CandPosts) CandPosts {
	a.Idx = append(a.Idx, b.Idx...)
	a.Post = append(a.Post, b.Post...)
	return a
}

func (f *candPostsFn) ExtractOutput(a CandPosts) (candMsg, error) {
	C := f.C
	order := make([]int, len(a.Idx))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(a.Idx[x], a.Idx[y]) })
	out := CandPosts{C: C, Post: make([]float64, 0, len(a.Post))}
	for _, i := range order {
		out.Post = append(out.Post, a.Post[i*C:(i+1)*C]...)
	}
	return putCand(f.Spill, f.Gen, &out)
}

// eStepFn is the E step of a batch without neighbours: iteration Round's
// batches from Round-1's.
type eStepFn struct {
	Params crowd.Params
	Round  int
	Spill  spillio.Dir

	w crowd.Scratch
}

func (f *eStepFn) ProcessElement(b Batch, mm modelMsg, emit func(Batch)) error {
	if err := b.unspill(); err != nil {
		return err
	}
	m, err := mm.get()
	if err != nil {
		return err
	}
	next := b
	next.Post = make([]float64, len(b.Post))
	C := b.C
	for i := 0; i < b.Len(); i++ {
		ann, lab := b.Item(i)
		m.Posterior(next.Post[i*C:(i+1)*C], nil, ann, lab, &f.w)
	}
	if err := put(f.Spill, f.Round, &next); err != nil {
		return err
	}
	emit(next)
	return nil
}

// eStepNbFn is the E step of a batch whose items' priors come from their
// neighbours' posteriors of the previous iteration (crowd.NeighbourPrior).
type eStepNbFn struct {
	Params crowd.Params
	Round  int
	Spill  spillio.Dir

	w     crowd.Scratch
	prior []float64
}

func (f *eStepNbFn) ProcessElement(b Batch, mm modelMsg, cm candMsg, emit func(Batch)) error {
	if err := b.unspill(); err != nil {
		return err
	}
	m, err := mm.get()
	if err != nil {
		return err
	}
	cp, err := cm.get()
	if err != nil {
		return err
	}
	C, k := b.C, b.K
	if cp.C != C {
		return fmt.Errorf("crowdstages: candidate posteriors of %d classes, want %d", cp.C, C)
	}
	post := func(j int32) []float64 { return cp.Post[int(j)*C : int(j+1)*C] }
	if err := checkNeighbours(b, cp); err != nil {
		return err
	}
	if len(f.prior) != C {
		f.prior = make([]float64, C)
	}
	lambda := f.Params.NeighbourWeight
	next := b
	next.Post = make([]float64, len(b.Post))
	for i := 0; i < b.Len(); i++ {
		ann, lab := b.Item(i)
		crowd.NeighbourPrior(f.prior, m, lambda, b.Neigh[i*k:(i+1)*k], b.Weight[i*k:(i+1)*k], post)
		m.Posterior(next.Post[i*C:(i+1)*C], f.prior, ann, lab, &f.w)
	}
	if err := put(f.Spill, f.Round, &next); err != nil {
		return err
	}
	emit(next)
	return nil
}

// checkNeighbours reports a neighbour of b that is not among cp's
// candidates.
func checkNeighbours(b Batch, cp *CandPosts) error {
	ncand := int32(len(cp.Post) / b.C)
	for _, j := range b.Neigh {
		if j >= ncand {
			return fmt.Errorf("crowdstages: %s rows %d..: neighbour %d of %d candidates", b.Shard, b.Offset, j, ncand)
		}
	}
	return nil
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*statsFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*estimateFn)(nil)).Elem())
	register.Emitter1[modelMsg]()
	beam.RegisterDoFn(reflect.TypeOf((*candPostsFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*eStepFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*eStepNbFn)(nil)).Elem())
}

// rounds runs p.Iterations EM iterations over batches (PCollection<Batch>,
// spilled as generation 0 when sp is on), weighs the models the labels
// support (choose) and returns the final batches with the chosen model's
// posteriors, the annotators' final model (singleton PCollection<modelMsg>,
// estimated from its EM's final posteriors) and the evidence (singleton
// PCollection<crowd.Evidence>). withNeighbours chooses the neighbour prior.
func rounds(s beam.Scope, batches beam.PCollection, p crowd.Params, withNeighbours bool, sp spillio.Dir) (beam.PCollection, beam.PCollection, beam.PCollection) {
	model := func(s beam.Scope, b beam.PCollection, r int) (beam.PCollection, beam.PCollection) {
		st := beam.Combine(s, &statsFn{C: p.C}, b)
		return st, beam.ParDo(s, &estimateFn{Params: p, Round: r, Spill: sp}, st)
	}
	var first beam.PCollection // the join's statistics: the soft majority vote's
	for r := 0; r < p.Iterations; r++ {
		rs := s.Scope(fmt.Sprintf("iteration %d", r+1))
		st, m := model(rs, batches, r)
		if r == 0 {
			first = st
		}
		if withNeighbours {
			cp := beam.Combine(rs, &candPostsFn{C: p.C, Gen: r, Spill: sp}, batches)
			batches = beam.ParDo(rs, &eStepNbFn{Params: p, Round: r + 1, Spill: sp}, batches, beam.SideInput{Input: m}, beam.SideInput{Input: cp})
		} else {
			batches = beam.ParDo(rs, &eStepFn{Params: p, Round: r + 1, Spill: sp}, batches, beam.SideInput{Input: m})
		}
	}
	st, fm := model(s.Scope("final model"), batches, p.Iterations)
	if p.Iterations == 0 {
		first = st
	}
	vm := beam.ParDo(s.Scope("vote"), &voteFn{Params: p}, first)
	final, ev := choose(s, batches, fm, vm, p, withNeighbours, sp)
	return final, fm, ev
}
