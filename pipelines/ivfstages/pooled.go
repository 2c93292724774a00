package ivfstages

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// pooledGatherFn gathers the pooled fit's inputs from the blocks into one
// stages.PooledGather, by exact mode's rule (engine.PooledInputs): every
// item up to mixture.PooledSampleCap, past it the cap's first by
// engine.PooledBefore, in ascending key order, each with its own given
// labels and its K neighbours' given labels.
//
// Exact mode numbers its neighbours by candidate and ships every
// candidate's labels once; ivf blocks know their neighbours by block-local
// index or external key, so here each item carries its neighbours' labels
// itself (the accumulator's candidates are item-aligned: K slots per item,
// CandN[i*K+j] labels for slot j, Neigh -1 where there is none), and the
// cap bounds them with the items: at most 2 x PooledSampleCap x (K+1) label
// lists while merging (about 35 MB at K 10), whatever the row count, where
// a global key -> labels table would grow with the rows. The fit reads a
// neighbour's labels through its index only (mixture.FitPooled), so the
// numbering does not change its sums: on the same neighbour graph the
// fitted model is exact mode's bit for bit. An external neighbour's labels
// came to the block with its stored copy for the search (Part.Labels,
// Block.ExtLabels): no join is needed.
//
// With Rows set, a block offers only its items below sampleThreshold
// (given.go says why); ExtractOutput checks that the cap's items came.
type pooledGatherFn struct {
	Seed uint64
	// Rows is the run's item count; 0: unknown (every item offered).
	Rows int64
}

func (pooledGatherFn) CreateAccumulator() stages.PooledGather { return stages.PooledGather{} }

func (f pooledGatherFn) AddInput(a stages.PooledGather, b Block) (stages.PooledGather, error) {
	if err := b.unspill(); err != nil {
		return a, err
	}
	k := b.K
	if a.K == 0 {
		a.K = k
	}
	if len(b.ExtLabelOff) != len(b.ExtKeys)+1 {
		return a, fmt.Errorf("ivfstages: pooled fit: block %d: labels of %d external neighbours for %d (searched with the pooled start off?)", b.Key, len(b.ExtLabelOff)-1, len(b.ExtKeys))
	}
	below := sampleThreshold(f.Rows, mixture.PooledSampleCap)
	for i := range b.Len() {
		if !offered(f.Seed, b.Keys[i], below) {
			continue
		}
		labels := b.Labels[b.LabelOff[i]:b.LabelOff[i+1]]
		a.Keys = append(a.Keys, b.Keys[i])
		a.Labels = append(a.Labels, labels...)
		a.LabelN = append(a.LabelN, int32(len(labels)))
		for j := range k {
			nl, ok := b.neighbourLabels(i, j)
			nb := int32(0)
			if !ok {
				nb = -1
			}
			a.Neigh = append(a.Neigh, nb)
			a.CandLabels = append(a.CandLabels, nl...)
			a.CandN = append(a.CandN, int32(len(nl)))
		}
	}
	return f.trim(a), nil
}

func (f pooledGatherFn) MergeAccumulators(a, b stages.PooledGather) stages.PooledGather {
	if a.K == 0 {
		a.K = b.K
	}
	a.Keys = append(a.Keys, b.Keys...)
	a.Labels = append(a.Labels, b.Labels...)
	a.LabelN = append(a.LabelN, b.LabelN...)
	a.Neigh = append(a.Neigh, b.Neigh...)
	a.CandLabels = append(a.CandLabels, b.CandLabels...)
	a.CandN = append(a.CandN, b.CandN...)
	return f.trim(a)
}

// trim bounds a while it grows: past twice the cap it keeps the cap's
// first (engine.PooledSample: by engine.PooledBefore, a choice that does
// not depend on how the runner splits or merges, since the first of a
// union are the first of its parts' first), so the selection runs once per
// cap items added.
func (f pooledGatherFn) trim(a stages.PooledGather) stages.PooledGather {
	if len(a.Keys) > 2*mixture.PooledSampleCap {
		return reorder(&a, engine.PooledSample(a.Keys, f.Seed), false)
	}
	return a
}

// ExtractOutput returns the sample (engine.PooledSample) in ascending key
// order with its neighbour slots numbered as stages.PooledFit reads them:
// slot i*K+j is candidate i*K+j.
func (f pooledGatherFn) ExtractOutput(a stages.PooledGather) (stages.PooledGather, error) {
	if err := checkSample("pooled", len(a.Keys), f.Rows, mixture.PooledSampleCap); err != nil {
		return a, err
	}
	return reorder(&a, engine.PooledSample(a.Keys, f.Seed), true), nil
}

// reorder returns a's items in the given order, each with its K neighbour
// slots; numbered, it also numbers the slots as candidates (CandIdx, and
// Neigh: the slot's index, or -1).
func reorder(a *stages.PooledGather, order []int, numbered bool) stages.PooledGather {
	k := a.K
	out := stages.PooledGather{K: k}
	off, coff := offsetsOf(a.LabelN), offsetsOf(a.CandN)
	for _, i := range order {
		out.Keys = append(out.Keys, a.Keys[i])
		out.Labels = append(out.Labels, a.Labels[off[i]:off[i+1]]...)
		out.LabelN = append(out.LabelN, a.LabelN[i])
		for j := i * k; j < (i+1)*k; j++ {
			nb := a.Neigh[j]
			if numbered && nb >= 0 {
				nb = int32(len(out.CandN))
			}
			if numbered {
				out.CandIdx = append(out.CandIdx, int32(len(out.CandN)))
			}
			out.Neigh = append(out.Neigh, nb)
			out.CandLabels = append(out.CandLabels, a.CandLabels[coff[j]:coff[j+1]]...)
			out.CandN = append(out.CandN, a.CandN[j])
		}
	}
	return out
}

// offsetsOf turns counts into offsets (len(n) + 1, from 0).
func offsetsOf(n []int32) []int32 {
	off := make([]int32, len(n)+1)
	for i, v := range n {
		off[i+1] = off[i] + v
	}
	return off
}

// neighbourLabels are item i's neighbour j's given labels (ok false: none).
func (b *Block) neighbourLabels(i, j int) ([]int32, bool) {
	switch c := b.Nbr[i*b.K+j]; {
	case c >= 0:
		return b.Labels[b.LabelOff[c]:b.LabelOff[c+1]], true
	case c != -1:
		e := -2 - c
		return b.ExtLabels[b.ExtLabelOff[e]:b.ExtLabelOff[e+1]], true
	}
	return nil, false
}

func keyBlock(b Block) (int64, Block) { return b.Key, b }

func blockKeyAtZero(b Block) (int, int64) { return 0, b.Key }

func modelAtZero(m stages.PooledModel) (int, stages.PooledModel) { return 0, m }

// pooledToBlocksFn sends the fitted model (one small value: C x C
// transitions and a prior) to each block key, for the start's join. The
// keys and the model meet under one key (a join, not a side input: a side
// input of a global combine over the search's waves, flattened, read empty
// on Prism v2.77, and a stage with side inputs spins Prism's scheduler, see
// searchFn); the keys are one int64 a block.
type pooledToBlocksFn struct{}

func (pooledToBlocksFn) ProcessElement(_ int, keys func(*int64) bool, models func(*stages.PooledModel) bool, emit func(int64, stages.PooledModel)) error {
	var m stages.PooledModel
	if !models(&m) {
		return fmt.Errorf("ivfstages: pooled start: no pooled fit")
	}
	var key int64
	for keys(&key) {
		emit(key, m)
	}
	return nil
}

// pooledStartFn sets a block's items' round-0 states from the pooled fit
// where its gate opened (engine.PooledStarter, as exact mode's stage and
// the engine do, reading each item's neighbours' labels locally or from
// ExtLabels), and passes the block on untouched where it did not: a run
// whose gate stays shut starts from the given labels bit for bit. A
// started block drops its ExtLabels (nothing reads them again) and, with
// the spill on, goes to the search's generation under its own name (the
// search's file stays readable should a bundle be retried).
type pooledStartFn struct {
	Mixture mixture.Params
	Spill   Spill
}

func (f *pooledStartFn) ProcessElement(key int64, blocks func(*Block) bool, models func(*stages.PooledModel) bool, emit func(Block)) error {
	var pm stages.PooledModel
	if !models(&pm) {
		return fmt.Errorf("ivfstages: pooled start: block %d: no pooled fit", key)
	}
	var b Block
	if !blocks(&b) {
		return nil // a key of the fan-out only: cannot happen, the keys are the blocks'
	}
	var extra Block
	if blocks(&extra) {
		return fmt.Errorf("ivfstages: pooled start: block %d: two blocks under one key", key)
	}
	if !pm.Open {
		emit(b)
		return nil
	}
	if err := b.unspill(); err != nil {
		return err
	}
	start := engine.NewPooledStarter(pm.Pooled(), &f.Mixture)
	uses := f.Mixture.UsesInit()
	b.State = mixture.States{}
	b.State.Reset()
	if uses {
		b.Init = mixture.States{}
		b.Init.Reset()
	}
	var st mixture.State
	for i := range b.Len() {
		start.Start(&st, b.Labels[b.LabelOff[i]:b.LabelOff[i+1]], b.K, func(j int) ([]int32, bool) { return b.neighbourLabels(i, j) })
		b.State.Append(&st)
		if uses {
			b.Init.Append(&st)
		}
	}
	b.ExtLabels, b.ExtLabelOff = nil, nil
	if f.Spill.On() {
		refs, err := f.Spill.write(genSearched, "p"+strconv.FormatInt(b.Key, 16), encodeBlock(b))
		if err != nil {
			return err
		}
		b = Block{Key: b.Key, Spilled: refs[0]}
	}
	emit(b)
	return nil
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*pooledGatherFn)(nil)).Elem())
	register.Function1x2(keyBlock)
	register.Function1x2(blockKeyAtZero)
	register.Function1x2(modelAtZero)
	beam.RegisterDoFn(reflect.TypeOf((*pooledToBlocksFn)(nil)).Elem())
	register.Emitter2[int64, stages.PooledModel]()
	beam.RegisterDoFn(reflect.TypeOf((*pooledStartFn)(nil)).Elem())
	register.Iter1[stages.PooledModel]()
}

// PooledStart sets every block's items' round-0 states from the pooled
// class-level transition (mixture.Params.PooledIters > 0), as exact mode's
// stages.PooledStart does for its batches: one combine gathers the fit's
// compact inputs from the blocks (pooledGatherFn), stages.PooledFit fits
// them, and the fitted transition (not the candidates' labels) is joined
// to every block by its key (pooledStartFn), so a worker holds one block
// and one small model. blocks: PCollection<Block> from Neighbours, searched
// with the same Mixture (whose PooledIters makes the search keep the
// external neighbours' labels). Returns the started PCollection<Block>, for
// JoinRounds, and the fit's outcome (PCollection<stages.PooledModel>, one
// element, the transition only: stages.WritePooled's calibration reads
// it). With PooledIters 0 it returns blocks as they are and an invalid
// PCollection.
func PooledStart(s beam.Scope, blocks beam.PCollection, p mixture.Params, sp Spill, rows int64) (beam.PCollection, beam.PCollection) {
	if p.PooledIters <= 0 {
		return blocks, beam.PCollection{}
	}
	s = s.Scope("relabel.ivf.PooledStart")
	g := beam.Combine(s, &pooledGatherFn{Seed: p.Seed, Rows: rows}, blocks)
	fit := beam.ParDo(s, stages.PooledTransitionOnly, stages.PooledFit(s, g, p))
	models := beam.ParDo(s, &pooledToBlocksFn{}, beam.CoGroupByKey(s, beam.ParDo(s, blockKeyAtZero, blocks), beam.ParDo(s, modelAtZero, fit)))
	in := beam.CoGroupByKey(s, beam.ParDo(s, keyBlock, blocks), models)
	return beam.ParDo(s, &pooledStartFn{Mixture: p, Spill: sp}, in), fit
}
