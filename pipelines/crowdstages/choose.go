package crowdstages

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/transforms/crowd"
)

// voteFn is crowd.EstimateVote from the statistics of the join's batches
// (the soft majority vote).
type voteFn struct {
	Params crowd.Params
}

func (f *voteFn) ProcessElement(s crowd.Stats) modelMsg {
	return modelMsg{Model: *crowd.EstimateVote(&s, f.Params)}
}

// scoreFn scores a final batch's items under the three models
// (crowd.Evidence, as crowd.Fit does).
type scoreFn struct {
	w crowd.Scratch
}

func (f *scoreFn) ProcessElement(b Batch, mm, vm modelMsg) (crowd.Evidence, error) {
	var ev crowd.Evidence
	if err := b.unspill(); err != nil {
		return ev, err
	}
	m, err := mm.get()
	if err != nil {
		return ev, err
	}
	vote, pooled := &vm.Model, m.Pool()
	C := b.C
	for i := 0; i < b.Len(); i++ {
		ann, lab := b.Item(i)
		if len(lab) >= 2 {
			ev.Add([3]float64{vote.HeldOut(ann, lab, nil, &f.w), pooled.HeldOut(ann, lab, nil, &f.w),
				m.HeldOut(ann, lab, b.Post[i*C:(i+1)*C], &f.w)})
		}
	}
	return ev, nil
}

func mergeEvidence(a, b crowd.Evidence) crowd.Evidence {
	a.Merge(b)
	return a
}

// chosenFn gives a final batch the posteriors of the chosen model: as they
// are for the annotators' model; else one E step of the vote or the pool
// (with features, from the neighbours' final posteriors), spilled into
// generation Gen, the last (removed with the spill directory).
type chosenFn struct {
	Params crowd.Params
	Gen    int
	Spill  spillio.Dir

	w     crowd.Scratch
	prior []float64
}

func (f *chosenFn) ProcessElement(b Batch, mm, vm modelMsg, ev crowd.Evidence, emit func(Batch)) error {
	return f.step(b, mm, vm, ev, nil, emit)
}

// chosenNbFn is chosenFn with the neighbours' final posteriors.
type chosenNbFn struct {
	chosenFn
}

func (f *chosenNbFn) ProcessElement(b Batch, mm, vm modelMsg, ev crowd.Evidence, cm candMsg, emit func(Batch)) error {
	return f.step(b, mm, vm, ev, &cm, emit)
}

func (f *chosenFn) step(b Batch, mm, vm modelMsg, ev crowd.Evidence, cm *candMsg, emit func(Batch)) error {
	choice := ev.Choice()
	if choice == crowd.Annotators {
		emit(b)
		return nil
	}
	if err := b.unspill(); err != nil {
		return err
	}
	m := &vm.Model
	if choice == crowd.Pooled {
		am, err := mm.get()
		if err != nil {
			return err
		}
		m = am.Pool()
	}
	C := b.C
	var post func(j int32) []float64
	if cm != nil {
		cp, err := cm.get()
		if err != nil {
			return err
		}
		if err := checkNeighbours(b, cp); err != nil {
			return err
		}
		post = func(j int32) []float64 { return cp.Post[int(j)*C : int(j+1)*C] }
		if len(f.prior) != C {
			f.prior = make([]float64, C)
		}
	}
	next := b
	next.Post = make([]float64, len(b.Post))
	for i := 0; i < b.Len(); i++ {
		ann, lab := b.Item(i)
		var pr []float64
		if cm != nil {
			crowd.NeighbourPrior(f.prior, m, f.Params.NeighbourWeight, b.Neigh[i*b.K:(i+1)*b.K], b.Weight[i*b.K:(i+1)*b.K], post)
			pr = f.prior
		}
		m.Posterior(next.Post[i*C:(i+1)*C], pr, ann, lab, &f.w)
	}
	if err := putAs(f.Spill, f.Gen, "c", &next); err != nil {
		return err
	}
	emit(next)
	return nil
}

// choose weighs the three models on the final batches (PCollection<Batch>)
// with the final model fm and the vote vm (singleton PCollection<modelMsg>)
// and returns the batches with the chosen model's posteriors and the
// evidence (singleton PCollection<crowd.Evidence>). Cost: one pass over the
// batches to score them, and one more to recompute the posteriors where the
// choice is not the annotators' model (with features, after collecting the
// candidates' final posteriors).
func choose(s beam.Scope, final, fm, vm beam.PCollection, p crowd.Params, withNeighbours bool, sp spillio.Dir) (beam.PCollection, beam.PCollection) {
	s = s.Scope("choose model")
	scores := beam.ParDo(s, &scoreFn{}, final, beam.SideInput{Input: fm}, beam.SideInput{Input: vm})
	ev := beam.Combine(s, mergeEvidence, scores)
	f := chosenFn{Params: p, Gen: p.Iterations, Spill: sp}
	if withNeighbours {
		cp := beam.Combine(s, &candPostsFn{C: p.C, Gen: p.Iterations, Spill: sp}, final)
		return beam.ParDo(s, &chosenNbFn{chosenFn: f}, final, beam.SideInput{Input: fm}, beam.SideInput{Input: vm}, beam.SideInput{Input: ev}, beam.SideInput{Input: cp}), ev
	}
	return beam.ParDo(s, &f, final, beam.SideInput{Input: fm}, beam.SideInput{Input: vm}, beam.SideInput{Input: ev}), ev
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*voteFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*scoreFn)(nil)).Elem())
	register.Function2x1(mergeEvidence)
	beam.RegisterDoFn(reflect.TypeOf((*chosenFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*chosenNbFn)(nil)).Elem())
}
