package stages

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// Standardised returns r's features z-scored with the global moments (a copy),
// or r's own slice when standardisation is off.
func Standardised(r *schemas.Rows, st *Stats, on bool) []float32 {
	if !on {
		return r.Features
	}
	x := append([]float32(nil), r.Features...)
	engine.Standardise(x, r.D, st.Mean, st.M2)
	return x
}

// candRowsFn emits the candidate rows of a batch (standardised), as a
// Candidates fragment; candidatesFn merges the fragments.
type candRowsFn struct {
	Standardise bool
}

func (f *candRowsFn) ProcessElement(r schemas.Rows, st Stats, emit func(Candidates)) error {
	if st.Dup != "" {
		// neighboursFn reports the duplicate. Failing here too raced with
		// it: a failed fragment left the candidates' singleton empty, and
		// neighboursFn, started on it, sometimes failed first with "got 0
		// values" for its side input instead of naming the duplicate.
		// An empty fragment keeps the singleton whole.
		emit(Candidates{D: r.D})
		return nil
	}
	x := Standardised(&r, &st, f.Standardise)
	// Sized up front: appending a batch's features grew them by copying
	// at every doubling.
	n := 0
	for _, key := range r.IDs {
		if st.CandIndex(key) >= 0 {
			n++
		}
	}
	out := Candidates{D: r.D, Keys: make([]int64, 0, n), Features: make([]float32, 0, n*r.D)}
	for i, key := range r.IDs {
		if st.CandIndex(key) < 0 {
			continue
		}
		out.Keys = append(out.Keys, key)
		out.Features = append(out.Features, x[i*r.D:(i+1)*r.D]...)
	}
	if len(out.Keys) > 0 {
		emit(out)
	}
	return nil
}

// candidatesFn concatenates candidate fragments and sorts them by key, so that
// row c is candidate index c (Stats.CandIndex) whatever the merge order.
type candidatesFn struct{}

func (candidatesFn) CreateAccumulator() Candidates { return Candidates{} }

func (candidatesFn) AddInput(a, b Candidates) Candidates { return mergeCandidates(a, b) }

func (candidatesFn) MergeAccumulators(a, b Candidates) Candidates { return mergeCandidates(a, b) }

func mergeCandidates(a, b Candidates) Candidates {
	if a.D == 0 {
		a.D = b.D
	}
	a.Keys = append(a.Keys, b.Keys...)
	a.Features = append(a.Features, b.Features...)
	return a
}

func (candidatesFn) ExtractOutput(a Candidates) Candidates {
	idx := make([]int, len(a.Keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(x, y int) int { return cmp.Compare(a.Keys[x], a.Keys[y]) })
	out := Candidates{D: a.D, Keys: make([]int64, len(idx)), Features: make([]float32, len(a.Features))}
	for c, i := range idx {
		out.Keys[c] = a.Keys[i]
		copy(out.Features[c*a.D:(c+1)*a.D], a.Features[i*a.D:(i+1)*a.D])
	}
	return out
}

// neighboursFn searches a batch's K nearest candidates, weights them (LLC) and
// emits the batch as Items with initial states. The candidate index is built
// once per bundle: Prism decodes a singleton side input once per bundle, and
// indexing costs O(S d) against the search's O(B S d).
type neighboursFn struct {
	P engine.NeighbourParams

	cands    *float32
	idx      knn.Index
	res      knn.Result
	wb       engine.WeightBuffer
	searcher knn.Searcher
	coder    llc.Coder
}

// Setup picks the kernels once per worker process (one CUDA context per
// process, shared by every DoFn instance).
func (f *neighboursFn) Setup() error {
	var err error
	f.searcher, f.coder, _, err = gpu.Backends(f.P.Device)
	return err
}

func (f *neighboursFn) Teardown() {
	if f.idx != nil {
		f.idx.Close()
	}
}

func (f *neighboursFn) ProcessElement(ctx context.Context, r schemas.Rows, st Stats, cands Candidates, emit func(Items)) error {
	if st.Dup != "" {
		return errors.New(st.Dup)
	}
	cm := knn.Matrix{Rows: len(cands.Keys), Cols: cands.D, Data: cands.Features}
	// The side input is decoded once per bundle: rebuild the index only when
	// the candidates' storage changed.
	if len(cands.Features) > 0 && (f.idx == nil || f.cands != &cands.Features[0]) {
		if f.idx != nil {
			f.idx.Close()
		}
		idx, err := f.searcher.Index(cm, cands.Keys, f.P.Metric)
		if err != nil {
			return fmt.Errorf("stages: indexing %d candidates: %w", len(cands.Keys), err)
		}
		f.idx, f.cands = idx, &cands.Features[0]
	}
	x := Standardised(&r, &st, f.P.Standardise)
	n, k := r.Len(), f.P.K
	q := knn.Matrix{Rows: n, Cols: r.D, Data: x}
	if err := f.idx.Search(&f.res, q, r.IDs, k); err != nil {
		return fmt.Errorf("stages: %s rows %d..%d: kNN: %w", r.Shard, r.Offset, r.Offset+int64(n), err)
	}
	it := Items{
		Shard: r.Shard, Offset: r.Offset, IDKind: r.IDKind, IDs: r.IDs, StrIDs: r.StrIDs,
		Labels: r.Labels, LabelOff: r.LabelOff, Multi: r.Multi,
		Cand: make([]int32, n), K: k, Neigh: append([]int32(nil), f.res.Index...), Weight: make([]float64, n*k),
	}
	if err := f.wb.Weights(it.Weight, q, cm, &f.res, f.P.Weighting, f.P.LLC, f.coder); err != nil {
		return fmt.Errorf("stages: %s rows %d..%d: neighbour weights: %w", r.Shard, r.Offset, r.Offset+int64(n), err)
	}
	var s mixture.State
	mp := &f.P.Mixture
	it.State.Reset()
	if mp.UsesInit() {
		it.Init.Reset()
	}
	for i := 0; i < n; i++ {
		it.Cand[i] = st.CandIndex(r.IDs[i])
		s.Init(r.Labels[r.LabelOff[i]:r.LabelOff[i+1]], mp.C, mp.C0, mp.Smooth)
		it.State.Append(&s)
		if mp.UsesInit() {
			it.Init.Append(&s)
		}
	}
	emit(it)
	return nil
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*candRowsFn)(nil)).Elem())
	register.Emitter1[Candidates]()
	beam.RegisterDoFn(reflect.TypeOf((*candidatesFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*neighboursFn)(nil)).Elem())
	register.Emitter1[Items]()
}

// Neighbours builds the candidate set and emits every batch as Items.
// rows: PCollection<schemas.Rows>; stats: singleton PCollection<Stats>.
// Returns PCollection<Items>. It panics on invalid p, while the pipeline is
// built.
func Neighbours(s beam.Scope, rows, stats beam.PCollection, p engine.NeighbourParams) beam.PCollection {
	s = s.Scope("relabel.Neighbours")
	if err := p.Validate(); err != nil {
		panic(err)
	}
	frags := beam.ParDo(s, &candRowsFn{Standardise: p.Standardise}, rows, beam.SideInput{Input: stats})
	cands := beam.Combine(s, &candidatesFn{}, frags)
	return beam.ParDo(s, &neighboursFn{P: p}, rows, beam.SideInput{Input: stats}, beam.SideInput{Input: cands})
}
