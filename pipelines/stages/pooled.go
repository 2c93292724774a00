package stages

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// PooledGather is the pooled fit's input gathered from the batches
// (pooledGatherFn): per item its key, given labels (LabelN[i] of them,
// consecutive in Labels) and K neighbours' candidate indices, and per
// candidate its index and given labels (CandN[j] of them in CandLabels).
// After ExtractOutput the items are the fit's sample
// (engine.PooledSample's rule) in ascending key order and the candidates
// in candidate order.
type PooledGather struct {
	K                 int
	Keys              []int64
	Labels, LabelN    []int32
	Neigh             []int32
	CandIdx           []int32
	CandLabels, CandN []int32
}

// pooledGatherFn gathers the compact inputs of the pooled fit from every
// batch into one value: a few dozen bytes an item (its labels and K
// neighbour indices, no features, no state), at most
// mixture.PooledSampleCap items (up to twice that while merging: past it
// the accumulator keeps the cap's first by engine.PooledBefore, a choice
// that does not depend on how the runner splits or merges, since the first
// of a union are the first of its parts' first), plus every candidate's
// labels. One combine and one fit in one place rather than one combine per
// EM step (PooledIters of them, each a stage): the fit's sums then run in
// one fixed order, key order, on every runner, and are those of the
// in-process engine (engine.PooledInputsOf) bit for bit.
type pooledGatherFn struct {
	Seed uint64
}

func (pooledGatherFn) CreateAccumulator() PooledGather { return PooledGather{} }

func (f pooledGatherFn) AddInput(a PooledGather, it Items) PooledGather {
	if a.K == 0 {
		a.K = it.K
	}
	for i := range it.Len() {
		labels := it.Labels[it.LabelOff[i]:it.LabelOff[i+1]]
		a.Keys = append(a.Keys, it.IDs[i])
		a.Labels = append(a.Labels, labels...)
		a.LabelN = append(a.LabelN, int32(len(labels)))
		a.Neigh = append(a.Neigh, it.Neigh[i*it.K:(i+1)*it.K]...)
		if it.Cand[i] >= 0 {
			a.CandIdx = append(a.CandIdx, it.Cand[i])
			a.CandLabels = append(a.CandLabels, labels...)
			a.CandN = append(a.CandN, int32(len(labels)))
		}
	}
	return f.trim(a)
}

func (f pooledGatherFn) MergeAccumulators(a, b PooledGather) PooledGather {
	if a.K == 0 {
		a.K = b.K
	}
	a.Keys = append(a.Keys, b.Keys...)
	a.Labels = append(a.Labels, b.Labels...)
	a.LabelN = append(a.LabelN, b.LabelN...)
	a.Neigh = append(a.Neigh, b.Neigh...)
	a.CandIdx = append(a.CandIdx, b.CandIdx...)
	a.CandLabels = append(a.CandLabels, b.CandLabels...)
	a.CandN = append(a.CandN, b.CandN...)
	return f.trim(a)
}

// trim bounds a while it grows: past twice the cap it keeps the cap's
// worth (bound), so the sort runs once per cap items added, not per batch.
func (f pooledGatherFn) trim(a PooledGather) PooledGather {
	if len(a.Keys) > 2*mixture.PooledSampleCap {
		return f.bound(a, mixture.PooledSampleCap)
	}
	return a
}

func (f pooledGatherFn) ExtractOutput(a PooledGather) PooledGather {
	a = f.bound(a, mixture.PooledSampleCap)
	order := make([]int, len(a.Keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(a.Keys[x], a.Keys[y]) })
	out := a.items(order)
	cord := make([]int, len(a.CandIdx))
	for i := range cord {
		cord[i] = i
	}
	slices.SortFunc(cord, func(x, y int) int { return cmp.Compare(a.CandIdx[x], a.CandIdx[y]) })
	off := offsets(a.CandN)
	for _, j := range cord {
		out.CandIdx = append(out.CandIdx, a.CandIdx[j])
		out.CandLabels = append(out.CandLabels, a.CandLabels[off[j]:off[j+1]]...)
		out.CandN = append(out.CandN, a.CandN[j])
	}
	return out
}

// bound keeps the first max items of a by engine.PooledBefore (all of
// them when there are no more).
func (f pooledGatherFn) bound(a PooledGather, max int) PooledGather {
	if len(a.Keys) <= max {
		return a
	}
	order := make([]int, len(a.Keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		switch kx, ky := a.Keys[x], a.Keys[y]; {
		case engine.PooledBefore(f.Seed, kx, ky):
			return -1
		case engine.PooledBefore(f.Seed, ky, kx):
			return 1
		}
		return 0
	})
	out := a.items(order[:max])
	out.CandIdx, out.CandLabels, out.CandN = a.CandIdx, a.CandLabels, a.CandN
	return out
}

// items returns a's items in the given order (no candidates).
func (a *PooledGather) items(order []int) PooledGather {
	out := PooledGather{K: a.K}
	off := offsets(a.LabelN)
	for _, i := range order {
		out.Keys = append(out.Keys, a.Keys[i])
		out.Labels = append(out.Labels, a.Labels[off[i]:off[i+1]]...)
		out.LabelN = append(out.LabelN, a.LabelN[i])
		out.Neigh = append(out.Neigh, a.Neigh[i*a.K:(i+1)*a.K]...)
	}
	return out
}

// offsets turns counts into offsets (len(n) + 1, from 0).
func offsets(n []int32) []int32 {
	off := make([]int32, len(n)+1)
	for i, v := range n {
		off[i+1] = off[i] + v
	}
	return off
}

// inputs is g, extracted, as the fit's inputs; an error if its candidates
// are not exactly 0..n-1 (a batch lost or repeated).
func (g *PooledGather) inputs() (engine.PooledInputs, error) {
	for j, c := range g.CandIdx {
		if int(c) != j {
			return engine.PooledInputs{}, fmt.Errorf("stages: pooled fit: candidate %d where %d was due (%d candidates gathered)", c, j, len(g.CandIdx))
		}
	}
	return engine.PooledInputs{K: g.K, Keys: g.Keys, Labels: g.Labels, LabelOff: offsets(g.LabelN),
		Neigh: g.Neigh, CandLabels: g.CandLabels, CandOff: offsets(g.CandN)}, nil
}

// PooledModel is the pooled fit's outcome, the round-0 start's joined
// value: whether the gate took the pooled start (Open), the fitted model
// (C, T, TOwn, Prior: mixture.Pooled; empty where nothing was fitted) and
// the candidates' labels, which an item's posterior reads through its
// neighbours.
type PooledModel struct {
	Open                bool
	Fitted              int
	Structure           float64
	C                   int
	T, TOwn             []float64
	Prior               []float64
	CandLabels, CandOff []int32
}

func encodePooledGather(g PooledGather) []byte {
	var w wire.Writer
	w.Uvarint(uint64(g.K))
	wire.Slice(&w, g.Keys)
	wire.Slice(&w, g.Labels)
	wire.Slice(&w, g.LabelN)
	wire.Slice(&w, g.Neigh)
	wire.Slice(&w, g.CandIdx)
	wire.Slice(&w, g.CandLabels)
	wire.Slice(&w, g.CandN)
	return w.B
}

func decodePooledGather(b []byte) (PooledGather, error) {
	r := wire.Reader{B: b}
	g := PooledGather{K: int(r.Uvarint())}
	g.Keys = wire.ReadSlice[int64](&r)
	g.Labels = wire.ReadSlice[int32](&r)
	g.LabelN = wire.ReadSlice[int32](&r)
	g.Neigh = wire.ReadSlice[int32](&r)
	g.CandIdx = wire.ReadSlice[int32](&r)
	g.CandLabels = wire.ReadSlice[int32](&r)
	g.CandN = wire.ReadSlice[int32](&r)
	return g, r.Err()
}

func encodePooledModel(m PooledModel) []byte {
	var w wire.Writer
	keptio.AppendPooled(&w, m.Kept())
	wire.Slice(&w, m.CandLabels)
	wire.Slice(&w, m.CandOff)
	return w.B
}

func decodePooledModel(b []byte) (PooledModel, error) {
	r := wire.Reader{B: b}
	k := keptio.ReadPooled(&r)
	m := PooledModel{Open: k.Open, Fitted: k.Fitted, Structure: k.Structure, C: k.C, T: k.T, TOwn: k.TOwn, Prior: k.Prior}
	m.CandLabels = wire.ReadSlice[int32](&r)
	m.CandOff = wire.ReadSlice[int32](&r)
	return m, r.Err()
}

// Kept is m's fitted transition, as an incremental run keeps it
// (io/keptio).
func (m PooledModel) Kept() keptio.Pooled {
	return keptio.Pooled{Open: m.Open, Fitted: m.Fitted, Structure: m.Structure, C: m.C, T: m.T, TOwn: m.TOwn, Prior: m.Prior}
}

// pooledFitFn fits the pooled transition over the gathered inputs
// (engine.FitPooledStart, the engine's own call) and emits the outcome.
// It counts what it decided (summary.json's metrics): pooled_fitted
// items, pooled_iters (the EM steps run, mixture.Params.PooledTol),
// pooled_open (1 where the gate took the start) and pooled_structure_ppm
// (Pooled.Structure in millionths).
type pooledFitFn struct {
	Mixture mixture.Params
}

func (f *pooledFitFn) ProcessElement(ctx context.Context, g PooledGather, emit func(PooledModel)) error {
	in, err := g.inputs()
	if err != nil {
		return err
	}
	m, open, err := engine.FitPooledStart(&in, &f.Mixture)
	if err != nil {
		return fmt.Errorf("stages: %w", err)
	}
	out := PooledModel{Open: open}
	if m != nil {
		out.Fitted, out.Structure = in.Len(), m.Structure()
		out.C, out.T, out.TOwn, out.Prior = m.C, m.T, m.TOwn, m.Prior
		pooledFitted.Inc(ctx, int64(in.Len()))
		pooledIters.Inc(ctx, int64(m.Iters))
		pooledStructure.Inc(ctx, int64(math.Round(out.Structure*1e6)))
	}
	if open {
		out.CandLabels, out.CandOff = in.CandLabels, in.CandOff
		pooledOpen.Inc(ctx, 1)
	}
	emit(out)
	return nil
}

var (
	pooledFitted    = beam.NewCounter("relabel", "pooled_fitted")
	pooledIters     = beam.NewCounter("relabel", "pooled_iters")
	pooledOpen      = beam.NewCounter("relabel", "pooled_open")
	pooledStructure = beam.NewCounter("relabel", "pooled_structure_ppm")
)

// pooledStartFn sets every item's round-0 state from the pooled fit where
// its gate opened (engine.PooledStarter, as the engine does), and passes
// the batches through untouched where it did not: a run whose gate stays
// shut is the paper's start bit for bit.
type pooledStartFn struct {
	Mixture mixture.Params
}

func (f *pooledStartFn) ProcessElement(_ int, items func(*Items) bool, models func(*PooledModel) bool, emit func(Items)) error {
	var pm PooledModel
	if !models(&pm) {
		return fmt.Errorf("stages: pooled start: no pooled fit")
	}
	var start *engine.PooledStarter
	if pm.Open {
		start = engine.NewPooledStarter(pm.Pooled(), &f.Mixture)
	}
	ncand := int32(len(pm.CandOff) - 1)
	var it Items
	for items(&it) {
		if start == nil {
			emit(it)
			it = Items{}
			continue
		}
		next := it
		next.State, next.Init = mixture.States{}, mixture.States{}
		next.State.Reset()
		uses := f.Mixture.UsesInit()
		if uses {
			next.Init.Reset()
		}
		var st mixture.State
		k := it.K
		for i := range it.Len() {
			var bad error
			start.Start(&st, it.Labels[it.LabelOff[i]:it.LabelOff[i+1]], k, func(j int) ([]int32, bool) {
				c := it.Neigh[i*k+j]
				if c < 0 {
					return nil, false
				}
				if c >= ncand {
					bad = fmt.Errorf("stages: pooled start: %s row %d: neighbour candidate %d of %d", it.Shard, it.Offset+int64(i), c, ncand)
					return nil, false
				}
				return pm.CandLabels[pm.CandOff[c]:pm.CandOff[c+1]], true
			})
			if bad != nil {
				return bad
			}
			next.State.Append(&st)
			if uses {
				next.Init.Append(&st)
			}
		}
		emit(next)
		it = Items{}
	}
	return nil
}

func keyPooledModel(m PooledModel) (int, PooledModel) { return 0, m }

// Pooled is the fitted model as mixture's (an empty decoded TOwn: none,
// the fit was not split).
func (m *PooledModel) Pooled() *mixture.Pooled {
	k := m.Kept()
	return k.Model()
}

// labelTransition is the transition the given labels are read through
// for calibration (StatsOf: mixture.Pooled.LabelTransition); nil where the
// gate kept the paper's start (nothing to read them through).
func (m *PooledModel) labelTransition() []float64 {
	if !m.Open {
		return nil
	}
	return m.Pooled().LabelTransition()
}

// PooledTransitionOnly drops the candidates' labels from a PooledModel:
// the writer's side input, and ivf's blocks (which hold their neighbours'
// labels themselves), need the fitted transition, not one label list per
// item.
func PooledTransitionOnly(m PooledModel) PooledModel {
	m.CandLabels, m.CandOff = nil, nil
	return m
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*pooledGatherFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*pooledFitFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*pooledStartFn)(nil)).Elem())
	register.Function1x2(keyPooledModel)
	register.Function1x1(PooledTransitionOnly)
	register.Emitter1[PooledModel]()
	register.Iter1[PooledModel]()
	beam.RegisterCoder(reflect.TypeOf(PooledGather{}), encodePooledGather, decodePooledGather)
	beam.RegisterCoder(reflect.TypeOf(PooledModel{}), encodePooledModel, decodePooledModel)
}

// PooledStart sets every item's round-0 state from the pooled class-level
// transition (mixture.Params.PooledIters > 0): one combine gathers the
// fit's compact inputs (pooledGatherFn), one stage fits them
// (pooledFitFn), and a join under one key, as Rounds joins the candidates'
// states, hands the outcome to every batch (pooledStartFn). items:
// PCollection<Items> with their given labels' states (Neighbours); returns
// PCollection<Items>. With PooledIters 0 it returns items as they are.
func PooledStart(s beam.Scope, items beam.PCollection, p mixture.Params) beam.PCollection {
	out, _ := pooledStart(s, items, p)
	return out
}

// pooledStart is PooledStart, also returning the fit's outcome (one
// PooledModel; an invalid PCollection with PooledIters 0).
func pooledStart(s beam.Scope, items beam.PCollection, p mixture.Params) (beam.PCollection, beam.PCollection) {
	if p.PooledIters <= 0 {
		return items, beam.PCollection{}
	}
	s = s.Scope("relabel.PooledStart")
	g := beam.Combine(s, &pooledGatherFn{Seed: p.Seed}, items)
	fit := PooledFit(s, g, p)
	in := beam.CoGroupByKey(s, beam.ParDo(s, keyItems, items), beam.ParDo(s, keyPooledModel, fit))
	return beam.ParDo(s, &pooledStartFn{Mixture: p}, in), fit
}

// PooledFit fits the pooled transition over gathered inputs
// (PCollection<PooledGather>, one element: extracted, so its items are the
// fit's sample in ascending key order and its candidates numbered 0..n-1)
// with engine.FitPooledStart, and counts what it decided (pooledFitFn).
// Returns PCollection<PooledModel>. ivf mode (pipelines/ivfstages)
// gathers its blocks' inputs itself and fits them here, so both modes fit
// by one call.
func PooledFit(s beam.Scope, gathered beam.PCollection, p mixture.Params) beam.PCollection {
	return beam.ParDo(s, &pooledFitFn{Mixture: p}, gathered)
}
