package crowdstages

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/transforms/crowd"
)

// statsFn combines the E step's expected counts of every batch.
type statsFn struct {
	C int
}

func (f *statsFn) CreateAccumulator() crowd.Stats { return *crowd.NewStats(f.C) }

func (f *statsFn) AddInput(a crowd.Stats, b Batch) crowd.Stats {
	for i := 0; i < b.Len(); i++ {
		ann, lab := b.Item(i)
		a.Add(b.Post[i*b.C:(i+1)*b.C], ann, lab)
	}
	return a
}

func (f *statsFn) MergeAccumulators(a, b crowd.Stats) crowd.Stats {
	a.Merge(&b)
	return a
}

func (f *statsFn) ExtractOutput(a crowd.Stats) crowd.Stats { return a }

// estimateFn is the M step: the model from the combined statistics.
type estimateFn struct {
	Params crowd.Params
	Round  int
}

func (f *estimateFn) ProcessElement(s crowd.Stats, emit func(crowd.Model)) {
	m := crowd.Estimate(&s, f.Params)
	if f.Round == 0 || f.Round == f.Params.WithDefaults().Iterations {
		log.Printf("relabel: crowd iteration %d: %d items, %d annotators, prior strength %.3g", f.Round, s.Items, len(m.Annotators), m.Strength)
	}
	emit(*m)
}

// candPostsFn collects the candidates' posteriors of one iteration, in
// candidate order: the side input of the next E step with features.
type candPostsFn struct {
	C int
}

func (f *candPostsFn) CreateAccumulator() CandPosts { return CandPosts{C: f.C} }

func (f *candPostsFn) AddInput(a CandPosts, b Batch) CandPosts {
	for i, c := range b.Cand {
		if c < 0 {
			continue
		}
		a.Idx = append(a.Idx, c)
		a.Post = append(a.Post, b.Post[i*b.C:(i+1)*b.C]...)
	}
	return a
}

func (f *candPostsFn) MergeAccumulators(a, b CandPosts) CandPosts {
	a.Idx = append(a.Idx, b.Idx...)
	a.Post = append(a.Post, b.Post...)
	return a
}

func (f *candPostsFn) ExtractOutput(a CandPosts) CandPosts {
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
	return out
}

// eStepFn is the E step of a batch without neighbours.
type eStepFn struct {
	Params crowd.Params

	w crowd.Scratch
}

func (f *eStepFn) ProcessElement(b Batch, m crowd.Model, emit func(Batch)) {
	next := b
	next.Post = make([]float64, len(b.Post))
	C := b.C
	for i := 0; i < b.Len(); i++ {
		ann, lab := b.Item(i)
		m.Posterior(next.Post[i*C:(i+1)*C], nil, ann, lab, &f.w)
	}
	emit(next)
}

// eStepNbFn is the E step of a batch whose items' priors come from their
// neighbours' posteriors of the previous iteration (crowd.NeighbourPrior).
type eStepNbFn struct {
	Params crowd.Params

	w     crowd.Scratch
	prior []float64
}

func (f *eStepNbFn) ProcessElement(b Batch, m crowd.Model, cp CandPosts, emit func(Batch)) error {
	C, k := b.C, b.K
	if cp.C != C {
		return fmt.Errorf("crowdstages: candidate posteriors of %d classes, want %d", cp.C, C)
	}
	ncand := int32(len(cp.Post) / C)
	post := func(j int32) []float64 { return cp.Post[int(j)*C : int(j+1)*C] }
	for _, j := range b.Neigh {
		if j >= ncand {
			return fmt.Errorf("crowdstages: %s rows %d..: neighbour %d of %d candidates", b.Shard, b.Offset, j, ncand)
		}
	}
	if len(f.prior) != C {
		f.prior = make([]float64, C)
	}
	lambda := f.Params.WithDefaults().Lambda()
	next := b
	next.Post = make([]float64, len(b.Post))
	for i := 0; i < b.Len(); i++ {
		ann, lab := b.Item(i)
		crowd.NeighbourPrior(f.prior, &m, lambda, b.Neigh[i*k:(i+1)*k], b.Weight[i*k:(i+1)*k], post)
		m.Posterior(next.Post[i*C:(i+1)*C], f.prior, ann, lab, &f.w)
	}
	emit(next)
	return nil
}

func init() {
	register.Combiner3[crowd.Stats, Batch, crowd.Stats](&statsFn{})
	register.DoFn2x0[crowd.Stats, func(crowd.Model)](&estimateFn{})
	register.Emitter1[crowd.Model]()
	register.Combiner3[CandPosts, Batch, CandPosts](&candPostsFn{})
	register.DoFn3x0[Batch, crowd.Model, func(Batch)](&eStepFn{})
	register.DoFn4x1[Batch, crowd.Model, CandPosts, func(Batch), error](&eStepNbFn{})
}

// rounds runs p.Iterations EM iterations over batches (PCollection<Batch>)
// and returns the final batches and the final model (singleton
// PCollection<crowd.Model>, estimated from the final posteriors).
// withNeighbours chooses the neighbour prior.
func rounds(s beam.Scope, batches beam.PCollection, p crowd.Params, withNeighbours bool) (beam.PCollection, beam.PCollection) {
	p = p.WithDefaults()
	model := func(s beam.Scope, b beam.PCollection, r int) beam.PCollection {
		st := beam.Combine(s, &statsFn{C: p.C}, b)
		return beam.ParDo(s, &estimateFn{Params: p, Round: r}, st)
	}
	for r := 0; r < p.Iterations; r++ {
		rs := s.Scope(fmt.Sprintf("iteration %d", r+1))
		m := model(rs, batches, r)
		if withNeighbours {
			cp := beam.Combine(rs, &candPostsFn{C: p.C}, batches)
			batches = beam.ParDo(rs, &eStepNbFn{Params: p}, batches, beam.SideInput{Input: m}, beam.SideInput{Input: cp})
		} else {
			batches = beam.ParDo(rs, &eStepFn{Params: p}, batches, beam.SideInput{Input: m})
		}
	}
	return batches, model(s.Scope("final model"), batches, p.Iterations)
}

var _ = context.Background
