package ivfstages

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/internal/budget"
	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// LocalRoundsBytes is the default bound (relabel's --local-rounds-mib) on
// the estimated size (budget.LocalRounds) of the blocks' data for which the
// embedded runner runs every round in one stage (JoinRoundsParams.Local).
// 1 GiB is about 1.25 million rows with relabel's defaults: the fashion
// run's 70,000 rows hold about 60 MiB there and a million rows about 800
// MiB, whose rounds in one stage stay under 2 GiB RSS with the collector's
// tighter target (localRoundsGCPercent) and take about 0.6 of the time a
// join per round through spill files does (docs/PERFORMANCE.md). Beyond the
// bound the join per round keeps memory flat in the rows.
const LocalRoundsBytes = 1024 << 20

// localRounds runs every round of JoinRounds in one DoFn (localRoundsFn)
// over all blocks grouped under one key, and sends the items back towards
// their input batches.
func localRounds(s beam.Scope, blocks beam.PCollection, conf RoundConf) beam.PCollection {
	s = s.Scope("local")
	all := beam.GroupByKey(s, beam.ParDo(s, oneKey, blocks))
	return rebatch(s, beam.ParDo(s, &localRoundsFn{RoundConf: conf}, all), conf.Spill)
}

func oneKey(b Block) (int64, Block) { return 0, b }

// localRoundsFn runs all the rounds of every block in one stage: each
// round reads its neighbours' states of the previous round straight from
// the other blocks in memory. A join per round (joinRoundFn) is what lets
// Flink and Dataflow spread the blocks over workers, but on the embedded
// runner, which runs a round's blocks one after another in one bundle
// anyway, each round also paid for building, encoding, writing, reading
// and decoding every block and message, Prism's shuffle of their
// references, and the wait at the round's boundary: a third of the rounds'
// wall time in the fashion run, most of it with a core idle
// (docs/PERFORMANCE.md). The items' rounds are engine.RunRound's, on the
// same states, so the results are the same bit for bit (TestLocalRounds).
// On the CPU each block is one batch; a device's Rounder gets every block
// of a round as one batch (wholeRound), the same output for any split of
// the items into batches (transforms/engine/roundstest).
// It holds every block at once (budget.LocalRounds), so JoinRounds uses it
// only when JoinRoundsParams.Local says they fit.
type localRoundsFn struct {
	RoundConf

	scratch pool.Scratch[engine.RoundScratch]
	// rounder runs the rounds (nil: engine.CPU, block by block).
	rounder engine.Rounder
}

// Setup resolves the rounds' kernels once per worker process (one CUDA
// context per process, shared by every DoFn instance).
func (f *localRoundsFn) Setup() error {
	var err error
	if f.rounder, err = gpu.RoundsOn(f.Device, 1, &f.scratch); err != nil {
		return fmt.Errorf("ivfstages: rounds: %w", err)
	}
	return nil
}

func (f *localRoundsFn) ProcessElement(ctx context.Context, _ int64, iter func(*Block) bool, emit func(string, BatchItems)) error {
	if f.Streamed {
		return f.streamed(ctx, iter, emit)
	}
	// The group waited for the whole search, the last reader of its input.
	if err := f.Spill.drop(genSearchIn); err != nil {
		return err
	}
	bs, err := unspillAll(iter, f.Workers)
	if err != nil {
		return err
	}
	// Nothing reads the search's blocks again.
	if err := f.Spill.drop(genSearched); err != nil {
		return err
	}
	slices.SortFunc(bs, func(x, y Block) int { return cmp.Compare(x.Key, y.Key) })
	for x := range bs { // read by the pooled start only
		bs[x].ExtLabels, bs[x].ExtLabelOff = nil, nil
	}
	ext, err := locate(bs, f.Workers)
	if err != nil {
		return err
	}
	var rows int64
	for x := range bs {
		rows += int64(bs[x].Len())
	}
	headD := 0
	if f.Head != nil && len(bs) > 0 {
		headD = bs[0].D
	}
	if len(bs) > 0 && budget.LocalRounds(rows, bs[0].K, f.Mixture, headD) >= tightGCBytes {
		defer tightenGC()()
	}
	var lh *localHead
	if f.Head != nil && rows > 0 {
		if lh, err = newLocalHead(bs, ext, *f.Head, f.Mixture.C); err != nil {
			return err
		}
	}
	cur := make([]mixture.States, len(bs))
	for x := range bs {
		cur[x], bs[x].State = bs[x].State, mixture.States{}
	}
	rounder := engine.WithWorkers(f.rounder, 1, &f.scratch)
	// whole is nil on the CPU, which runs block by block; on a device it
	// holds every block's states as one batch's, all, across the rounds.
	var whole *wholeRound
	var all mixture.States
	if _, cpu := rounder.(engine.CPU); !cpu && len(bs) > 0 {
		if whole, err = newWholeRound(bs, cur); err != nil {
			return err
		}
		all.Concat(cur)
		if len(all.Moved) != 0 && len(all.Moved) != all.Len() {
			return fmt.Errorf("ivfstages: local rounds: %d items' states with %d moves (some blocks' tracked, some not)", all.Len(), len(all.Moved))
		}
	}
	ranLast := int64(-1)
	for r := range f.Rounds {
		progress.RoundStarted(r, f.Rounds)
		var extra *mixture.States
		var ew float64
		// A round after one where no item ran runs none either
		// (engine.Run stops there): the head is not fitted for it.
		if lh != nil && !lh.h.Off() && ranLast != 0 {
			if whole != nil {
				whole.split(&all, cur, f.Workers)
			}
			if extra, ew, err = lh.round(r, bs, ext, cur, &f.Mixture); err != nil {
				return fmt.Errorf("ivfstages: round %d: %w", r, err)
			}
			if lh.h.Off() {
				progress.Notef("ivf: the linear head switched itself off in round %d of %d (its fitted share under %g)", r+1, f.Rounds, head.OffShare)
			}
		}
		if extra != nil {
			headRounds.Inc(ctx, 1)
			if r == f.Rounds-1 {
				headLast.Inc(ctx, 1)
			}
		}
		if whole != nil {
			var at [][]int32
			if lh != nil {
				at = lh.at
			}
			next, n, err := rounder.Round(whole.batch(bs, ext, &all, extra, ew, at), r, &f.Mixture)
			if err != nil {
				return fmt.Errorf("ivfstages: local rounds: round %d of %d blocks (%d items): %w", r, len(bs), all.Len(), err)
			}
			all = next
			itemRounds.Inc(ctx, int64(n))
			ranLast = int64(n)
			continue
		}
		next := make([]mixture.States, len(bs))
		var ran atomic.Int64
		// Blocks run on all cores, one block per goroutine at a time:
		// within a block of a few hundred items, RunRound's chunks of 64
		// would leave cores idle at every block's end.
		err := pool.EachIndexErr(len(bs), f.Workers, func(x int) error {
			if err := ctx.Err(); err != nil {
				return err // a stopped run: the rest of the blocks return here
			}
			var n int
			b := bs[x].batch(&cur[x], func(e int) (*mixture.States, int) {
				l := ext[x][e]
				return &cur[l.block], int(l.item)
			})
			if extra != nil {
				// The head's component is one more neighbour slot, as
				// engine.Run gives it (engine.ExtraSlot).
				k, inner, at, w := b.K, b.Neighbour, lh.at[x], bs[x].Weight
				b.K++
				b.Neighbour = func(i, j int) (*mixture.States, int, float64) {
					if j == k {
						return engine.ExtraSlot(extra, at[i], ew, w[i*k:(i+1)*k])
					}
					return inner(i, j)
				}
			}
			var err error
			if next[x], n, err = rounder.Round(b, r, &f.Mixture); err != nil {
				return fmt.Errorf("ivfstages: local rounds: block %d round %d (%d items): %w", bs[x].Key, r, b.N, err)
			}
			ran.Add(int64(n))
			return nil
		})
		if err != nil {
			return err
		}
		itemRounds.Inc(ctx, ran.Load())
		ranLast = ran.Load()
		cur = next
	}
	if whole != nil {
		whole.split(&all, cur, f.Workers)
		all = mixture.States{}
	}
	if f.Given {
		fit, err := givenLocal(len(bs), blockAt(bs), ext, cur, f.Mixture.C, f.Mixture.C0, f.Mixture.Seed, 0, f.Workers)
		if err != nil {
			return err
		}
		if f.Keep != "" {
			if err := stages.KeepGiven(ctx, f.Keep, fit); err != nil {
				return fmt.Errorf("ivfstages: %w", err)
			}
		}
	}
	if lh != nil && f.Keep != "" {
		if err := stages.KeepHead(ctx, f.Keep, lh.h); err != nil {
			return fmt.Errorf("ivfstages: %w", err)
		}
	}
	return f.unblockAll(len(bs), func(x int) (Block, error) {
		b := bs[x]
		bs[x] = Block{}
		return b, nil
	}, cur, nil, emit)
}

// unblockAll sends the items of n blocks (block x as at(x) gives it, with
// its final states cur[x]) back towards their input batches: packed (and
// spilled) on all cores, then, once before (if set) has run, emitted in
// block order, as one goroutine did them: packing and writing a million
// rows' posteriors took 7 s on one core of two.
func (f *localRoundsFn) unblockAll(n int, at func(x int) (Block, error), cur []mixture.States, before func() error, emit func(string, BatchItems)) error {
	out := unblockFn{Spill: f.Spill, Gen: genRouted + f.Rounds}
	type unblocked struct {
		batches []string
		items   []BatchItems
	}
	res := make([]unblocked, n)
	err := pool.EachIndexErr(n, f.Workers, func(x int) error {
		b, err := at(x)
		if err != nil {
			return err
		}
		b.State = cur[x]
		r := &res[x]
		r.batches, r.items, err = out.unblock(b)
		cur[x] = mixture.States{}
		return err
	})
	if err != nil {
		return err
	}
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	for x := range res {
		for i := range res[x].items {
			emit(res[x].batches[i], res[x].items[i])
		}
		res[x] = unblocked{}
	}
	return nil
}

// wholeRound is the local rounds' input with every block as one batch, for
// a device: the blocks' items in block order, block x's items from
// start[x]. Block by block, each call would hand the device every state
// its block's external neighbours live in, most of the dataset, once per
// block.
type wholeRound struct {
	start []int32
	// block is each item's block.
	block []int32
	k     int
	// init is the blocks' initial states (the anchors), packed as the
	// items.
	init mixture.States
}

// newWholeRound lays out bs (sorted, every block with K neighbour slots)
// and their states cur as one batch.
func newWholeRound(bs []Block, cur []mixture.States) (*wholeRound, error) {
	w := &wholeRound{start: make([]int32, len(bs)+1), k: bs[0].K}
	inits := make([]mixture.States, len(bs))
	var withInit int
	for x := range bs {
		b := &bs[x]
		if b.K != w.k {
			return nil, fmt.Errorf("ivfstages: local rounds: block %d has %d neighbour slots, block %d %d", b.Key, b.K, bs[0].Key, w.k)
		}
		if cur[x].Len() != b.Len() {
			return nil, fmt.Errorf("ivfstages: local rounds: block %d: %d states for %d items", b.Key, cur[x].Len(), b.Len())
		}
		w.start[x+1] = w.start[x] + int32(b.Len())
		for range b.Len() {
			w.block = append(w.block, int32(x))
		}
		inits[x] = b.Init
		withInit += b.Init.Len()
	}
	if withInit != 0 && withInit != int(w.start[len(bs)]) {
		return nil, fmt.Errorf("ivfstages: local rounds: %d initial states for %d items (some blocks keep theirs, some not)", withInit, w.start[len(bs)])
	}
	w.init.Concat(inits)
	return w, nil
}

// batch is one round's input: every block's items, their states (and
// their neighbours') in all, with the head's states extra (weight ew, item
// i of block x at at[x][i]) as one more slot per item, as Block.batch
// gives each block alone.
func (w *wholeRound) batch(bs []Block, ext [][]extLoc, all, extra *mixture.States, ew float64, at [][]int32) engine.Batch {
	k := w.k
	slots := k
	if extra != nil {
		slots++
	}
	item := func(g int) (*Block, int, int) {
		x := int(w.block[g])
		return &bs[x], x, g - int(w.start[x])
	}
	return engine.Batch{N: int(w.start[len(bs)]), K: slots, Own: all, Init: &w.init,
		Neighbour: func(g, j int) (*mixture.States, int, float64) {
			b, x, i := item(g)
			if j == k {
				return engine.ExtraSlot(extra, at[x][i], ew, b.Weight[i*k:(i+1)*k])
			}
			switch c := b.Nbr[i*k+j]; {
			case c >= 0:
				return all, int(w.start[x] + c), b.Weight[i*k+j]
			case c != -1:
				l := ext[x][-2-c]
				return all, int(w.start[l.block] + l.item), b.Weight[i*k+j]
			}
			return nil, 0, 0
		},
		Annotations: func(g int) int {
			b, _, i := item(g)
			return engine.Annotations(b.Labels[b.LabelOff[i]:b.LabelOff[i+1]])
		},
		Key: func(g int) uint64 {
			b, _, i := item(g)
			return uint64(b.Keys[i])
		},
	}
}

// split packs all's items back into each block's states cur[x], on workers
// goroutines (0: GOMAXPROCS).
func (w *wholeRound) split(all *mixture.States, cur []mixture.States, workers int) {
	pool.EachIndex(len(cur), workers, func(x int) {
		lo, hi := int(w.start[x]), int(w.start[x+1])
		var s mixture.States
		cl, en := all.Sizes(lo, hi)
		s.Reserve(hi-lo, cl, en)
		for g := lo; g < hi; g++ {
			s.AppendFrom(all, g)
		}
		cur[x] = s
	})
}

// headRounds and headLast are the exact path's counters of the same names
// (pipelines/stages): the rounds the head gave its component in, and 1
// where it still did in the last round (summary.json's head section; an
// incremental lake run then needs the head's kept fit).
var (
	headRounds = beam.NewCounter("relabel", "head_rounds")
	headLast   = beam.NewCounter("relabel", "head_last")
)

// localHead is the linear head of the local rounds (RoundConf.Head): one
// transforms/head.Head over every block's own items, each once, in
// ascending key order. The order is engine.Run's (its items, every one a
// candidate in ivf mode, in key order as the pipeline reads them) and
// fixes the head's sums (the moments, each fold's rows), so the fit does
// not depend on how the runner grouped the blocks, and on the same
// neighbour graph it is engine.Run's bit for bit (TestLocalRoundsHead).
type localHead struct {
	h *head.Head
	// order[g] is item g (in key order) as block and item; at[x][i] is
	// block x's item i's place in that order.
	order []extLoc
	at    [][]int32
	k     int
	st    mixture.States
}

func newLocalHead(bs []Block, ext [][]extLoc, p head.Params, c int) (*localHead, error) {
	lh := &localHead{at: make([][]int32, len(bs)), k: bs[0].K}
	d := bs[0].D
	for x := range bs {
		b := &bs[x]
		if b.D != d || len(b.X) != b.Len()*d || d < 1 {
			return nil, fmt.Errorf("ivfstages: block %d: %d features of dimension %d for %d items (the head needs every item's, dimension %d)", b.Key, len(b.X), b.D, b.Len(), d)
		}
		for i := range b.Keys {
			lh.order = append(lh.order, extLoc{int32(x), int32(i)})
		}
	}
	slices.SortFunc(lh.order, func(u, v extLoc) int {
		return cmp.Compare(bs[u.block].Keys[u.item], bs[v.block].Keys[v.item])
	})
	keys := make([]int64, len(lh.order))
	feats := make([]float32, 0, len(lh.order)*d)
	for x := range bs {
		lh.at[x] = make([]int32, bs[x].Len())
	}
	for g, l := range lh.order {
		b := &bs[l.block]
		keys[g] = b.Keys[l.item]
		feats = append(feats, b.X[int(l.item)*d:int(l.item+1)*d]...)
		lh.at[l.block][l.item] = int32(g)
	}
	for x := range bs { // in the head's own copy now
		bs[x].X = nil
	}
	h, err := head.New(feats, keys, d, c, p)
	if err != nil {
		return nil, err
	}
	lh.h = h
	return lh, nil
}

// round fits the head to the items' states cur (per block) and returns its
// component (states in key order) and weight, as head.Head.Round does.
func (lh *localHead) round(r int, bs []Block, ext [][]extLoc, cur []mixture.States, mp *mixture.Params) (*mixture.States, float64, error) {
	lh.st.Reset()
	for _, l := range lh.order {
		lh.st.AppendFrom(&cur[l.block], int(l.item))
	}
	k := lh.k
	return lh.h.Round(r, &lh.st, k, func(g, j int) (int, float64) {
		l := lh.order[g]
		b := &bs[l.block]
		e := int(l.item)*k + j
		switch c := b.Nbr[e]; {
		case c >= 0:
			return int(lh.at[l.block][c]), b.Weight[e]
		case c != -1:
			o := ext[l.block][-2-c]
			return int(lh.at[o.block][o.item]), b.Weight[e]
		}
		return -1, 0
	}, mp.C0, mp.Smooth)
}

// localRoundsGCPercent is the collector's target (GOGC) while the one-stage
// rounds run: every block and two rounds of states are live for the whole
// stage (about 1 GB at a million rows), and each round leaves the last
// round's states and its chunks behind as garbage. At the default GOGC of
// 100 the heap grew to twice the live data (2.1 GB heap, 2.35 GiB peak RSS
// at a million rows, GODEBUG=gctrace=1), while a collection there marks the
// live blocks in about 40 ms: collecting at a quarter over the live data
// costs a few collections per round, under 1% of a round's time
// (docs/PERFORMANCE.md).
const localRoundsGCPercent = 25

// tightGCBytes is the estimated size (budget.LocalRounds) from which the
// one-stage rounds tighten the collector's target: below it the heap's
// doubling is under half a GB, and the fashion run's 70,000 rows paid a
// quarter more collection CPU (1.4 against 1.1 s) for nothing.
const tightGCBytes = 256 << 20

var gcTight struct {
	sync.Mutex
	n   int // stages running with the tight target
	old int // the target before the first of them
}

// tightenGC sets the collector's target to localRoundsGCPercent until the
// returned function is called, unless the user set GOGC (theirs is kept).
// Nested and concurrent stages (tests run pipelines side by side) share one
// setting: the last to finish restores the target from before the first.
func tightenGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	gcTight.Lock()
	defer gcTight.Unlock()
	if gcTight.n == 0 {
		gcTight.old = debug.SetGCPercent(localRoundsGCPercent)
	}
	gcTight.n++
	return func() {
		gcTight.Lock()
		defer gcTight.Unlock()
		if gcTight.n--; gcTight.n == 0 {
			debug.SetGCPercent(gcTight.old)
		}
	}
}

// unspillAll reads every element iter gives, unspilled on workers
// goroutines (0: GOMAXPROCS): the elements are references, and reading and
// decoding a million rows' blocks took 3 s on one core of two. On error it
// returns the first failing element's, in iter's order.
func unspillAll[T any, P interface {
	*T
	unspill() error
}](iter func(*T) bool, workers int) ([]T, error) {
	var out []T
	var v T
	for iter(&v) {
		out = append(out, v)
		var zero T
		v = zero
	}
	if err := pool.EachIndexErr(len(out), workers, func(i int) error { return P(&out[i]).unspill() }); err != nil {
		return nil, err
	}
	return out, nil
}

// blockAt loads block x of bs (givenLocal's load), in memory.
func blockAt(bs []Block) func(x int) (*Block, error) {
	return func(x int) (*Block, error) { return &bs[x], nil }
}

// extLoc is where an external neighbour's state is: item item of block
// block (indices into the sorted blocks).
type extLoc struct{ block, item int32 }

// locate finds, for every block of bs (sorted by key), where each of its
// external neighbours lives, on workers goroutines (0: GOMAXPROCS): a
// million rows' blocks have millions of external neighbours, and looking
// them up on one goroutine, through the blocks themselves, took 2 s with a
// core idle. An error is the first block's in key order.
func locate(bs []Block, workers int) ([][]extLoc, error) {
	keys := make([]int64, len(bs))
	for x := range bs {
		keys[x] = bs[x].Key
		if x > 0 && keys[x-1] == keys[x] {
			return nil, fmt.Errorf("ivfstages: block %d: two blocks under one key", keys[x])
		}
	}
	ext := make([][]extLoc, len(bs))
	err := pool.EachIndexErr(len(bs), workers, func(x int) error {
		b := &bs[x]
		ext[x] = make([]extLoc, len(b.ExtKeys))
		for e, key := range b.ExtKeys {
			h, ok := slices.BinarySearch(keys, b.ExtHome[e])
			if !ok {
				return fmt.Errorf("ivfstages: block %d: neighbour %d's block %d absent", b.Key, key, b.ExtHome[e])
			}
			i, ok := slices.BinarySearch(bs[h].Keys, key)
			if !ok {
				return fmt.Errorf("ivfstages: block %d: neighbour %d absent from its block %d", b.Key, key, b.ExtHome[e])
			}
			ext[x][e] = extLoc{int32(h), int32(i)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ext, nil
}

func init() {
	register.Function1x2(oneKey)
	beam.RegisterDoFn(reflect.TypeOf((*localRoundsFn)(nil)).Elem())
}
