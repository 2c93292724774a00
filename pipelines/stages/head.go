package stages

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// CandidateFeatures is the candidate set's features as given (not
// standardised: transforms/head z-scores them itself, with the same sums in
// the same order as engine.Run's head, so that the pipeline's head is the
// engine's bit for bit), keys ascending: what the rounds fit the linear head
// on (RoundsParams.Features). rows: PCollection<schemas.Rows>; stats: the
// singleton PCollection<Stats>. Returns a singleton PCollection<Candidates>.
//
// Only candidates carry features into the rounds (in exact mode every item
// is one; in sample mode the --candidates items chosen by a hash of seed and
// id): the head is fitted on them and gives them its component, and the
// other items of a sample-mode run have none (engine.Component). Carrying
// every item's features would ship the whole input through every round's
// join, where the candidate set is bounded by design.
func CandidateFeatures(s beam.Scope, rows, stats beam.PCollection) beam.PCollection {
	s = s.Scope("relabel.CandidateFeatures")
	frags := beam.ParDo(s, &candRowsFn{Standardise: false}, rows, beam.SideInput{Input: stats})
	return beam.Combine(s, &candidatesFn{}, frags)
}

// HeadCarry is what a round with the head hands the next: the head's
// state between rounds (head.Carry: each fold's weights, and whether it is
// off).
type HeadCarry struct {
	Carry head.Carry
}

func encodeHeadCarry(c HeadCarry) []byte {
	var w wire.Writer
	w.Bool(c.Carry.Off)
	w.Bool(c.Carry.W != nil)
	w.Uvarint(uint64(len(c.Carry.W)))
	for _, f := range c.Carry.W {
		wire.Slice(&w, f)
	}
	return w.B
}

func decodeHeadCarry(b []byte) (HeadCarry, error) {
	r := wire.Reader{B: b}
	var c HeadCarry
	c.Carry.Off = r.Bool()
	some := r.Bool()
	n := r.Uvarint()
	if some {
		if n > uint64(len(b)) {
			return c, fmt.Errorf("stages: head carry of %d folds in %d bytes", n, len(b))
		}
		c.Carry.W = make([][]float64, n)
		for f := range c.Carry.W {
			c.Carry.W[f] = wire.ReadSlice[float64](&r)
		}
	}
	return c, r.Err()
}

// headRoundFn is roundFn with the linear head (transforms/head): before the
// round it fits the head to the candidates' states of the last round, out of
// fold, and weighs it against their neighbours' vote (head.Head.Round), as
// engine.Run does, then runs every batch with the head's component as one
// more neighbour slot of each candidate (engine.ExtraSlot). It joins, under
// roundFn's one key, the batches, the candidates' states, the candidates'
// features (CandidateFeatures) and the last round's HeadCarry (none before
// round 0), and emits the next round's HeadCarry beside the batches. The
// batches are held until the head is fitted: the vote needs every
// candidate's neighbourhood, and they are on this one worker anyway.
type headRoundFn struct {
	Round   int
	Rounds  int
	Mixture mixture.Params
	Workers int
	Head    head.Params
	// Keep, when set, is where the last round keeps the head's fit
	// (RoundsParams.Keep).
	Keep string

	scratch pool.Scratch[engine.RoundScratch]
	once    sync.Once
}

func (f *headRoundFn) ProcessElement(ctx context.Context, _ int, items func(*Items) bool, css func(*CandStates) bool,
	feats func(*Candidates) bool, carries func(*HeadCarry) bool, emit func(Items), emitCarry func(HeadCarry)) error {
	var cs CandStates
	if !css(&cs) {
		cs.States.Reset()
	}
	var cands Candidates
	feats(&cands)
	var carry HeadCarry
	carries(&carry)
	f.once.Do(func() { progress.RoundStarted(f.Round, f.Rounds) })
	var batches []Items
	var it Items
	for items(&it) {
		batches = append(batches, it)
		it = Items{}
	}
	nc := len(cands.Keys)
	if cs.States.Len() != nc {
		return fmt.Errorf("stages: round %d: %d candidates' states for %d candidates' features", f.Round, cs.States.Len(), nc)
	}
	var extra *mixture.States
	var ew float64
	if nc > 0 {
		k := batches[0].K
		neigh := make([]int32, nc*k)
		weight := make([]float64, nc*k)
		for b := range batches {
			bt := &batches[b]
			if bt.K != k {
				return fmt.Errorf("stages: round %d: batches of %d and %d neighbours", f.Round, k, bt.K)
			}
			for i, c := range bt.Cand {
				if c >= 0 {
					copy(neigh[int(c)*k:int(c+1)*k], bt.Neigh[i*k:(i+1)*k])
					copy(weight[int(c)*k:int(c+1)*k], bt.Weight[i*k:(i+1)*k])
				}
			}
		}
		h, err := head.New(cands.Features, cands.Keys, cands.D, f.Mixture.C, f.Head)
		if err != nil {
			return fmt.Errorf("stages: round %d: %w", f.Round, err)
		}
		if err := h.Restore(carry.Carry); err != nil {
			return fmt.Errorf("stages: round %d: %w", f.Round, err)
		}
		extra, ew, err = h.Round(f.Round, &cs.States, k, func(c, j int) (int, float64) {
			return int(neigh[c*k+j]), weight[c*k+j]
		}, f.Mixture.C0, f.Mixture.Smooth)
		if err != nil {
			return fmt.Errorf("stages: round %d: %w", f.Round, err)
		}
		carry.Carry = h.Carry()
		if f.Keep != "" && f.Round == f.Rounds-1 {
			if err := KeepHead(ctx, f.Keep, h); err != nil {
				return fmt.Errorf("stages: round %d: %w", f.Round, err)
			}
		}
	}
	if extra != nil {
		headRounds.Inc(ctx, 1)
		if f.Round == f.Rounds-1 {
			headLast.Inc(ctx, 1)
		}
	}
	for _, bt := range batches {
		n, k := bt.Len(), bt.K
		slots := k
		if extra != nil {
			slots++
		}
		next := bt
		var ran int
		next.State, ran = engine.RunRound(engine.Batch{N: n, K: slots, Own: &bt.State, Init: &bt.Init,
			Neighbour: func(i, j int) (*mixture.States, int, float64) {
				if j == k {
					return engine.ExtraSlot(extra, bt.Cand[i], ew, bt.Weight[i*k:(i+1)*k])
				}
				if c := bt.Neigh[i*k+j]; c >= 0 {
					return &cs.States, int(c), bt.Weight[i*k+j]
				}
				return nil, 0, 0
			},
			Annotations: func(i int) int { return engine.Annotations(bt.Labels[bt.LabelOff[i]:bt.LabelOff[i+1]]) },
			Key:         func(i int) uint64 { return uint64(bt.IDs[i]) },
		}, f.Round, f.Workers, &f.scratch, &f.Mixture)
		itemRounds.Inc(ctx, int64(ran))
		emit(next)
	}
	emitCarry(carry)
	return nil
}

// headRounds counts the rounds the head gave its component in
// (summary.json's head section); headLast is 1 where it still did in the
// last round: the head had not switched itself off (head.OffShare), so the
// run's posteriors depend on it, and an incremental lake run gives the rows
// it relabels the head's kept fit (RoundsParams.Keep; pipelines/lake).
var (
	headRounds = beam.NewCounter("relabel", "head_rounds")
	headLast   = beam.NewCounter("relabel", "head_last")
)

func keyCandidates(c Candidates) (int, Candidates) { return 0, c }
func keyHeadCarry(c HeadCarry) (int, HeadCarry)    { return 0, c }

func init() {
	beam.RegisterCoder(reflect.TypeOf(HeadCarry{}), encodeHeadCarry, decodeHeadCarry)
	register.DoFn8x1[context.Context, int, func(*Items) bool, func(*CandStates) bool, func(*Candidates) bool, func(*HeadCarry) bool, func(Items), func(HeadCarry), error](&headRoundFn{})
	register.Function1x2(keyCandidates)
	register.Function1x2(keyHeadCarry)
	register.Iter1[Candidates]()
	register.Iter1[HeadCarry]()
	register.Emitter1[HeadCarry]()
}
