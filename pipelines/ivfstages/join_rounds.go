package ivfstages

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/internal/budget"
	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// requestFn keys a block by its own key and asks each block holding some of
// its external neighbours for them (one JoinMsg per asked block, keys only).
// A spilled block goes on as its reference.
type requestFn struct{}

func (requestFn) ProcessElement(b Block, emitBlock func(int64, Block), emitMsg func(int64, JoinMsg)) error {
	full := b
	if err := full.unspill(); err != nil {
		return err
	}
	ask := map[int64][]int64{}
	for e, h := range full.ExtHome {
		ask[h] = append(ask[h], full.ExtKeys[e])
	}
	for _, h := range slices.Sorted(maps.Keys(ask)) {
		emitMsg(h, JoinMsg{From: b.Key, Keys: ask[h]})
	}
	emitBlock(b.Key, b)
	return nil
}

// routeFn records in each block which of its items' states every other block
// asked for (Dest*), in the order of the asking blocks' keys.
type routeFn struct {
	Waves int
	Spill Spill

	once sync.Once
}

func (f *routeFn) ProcessElement(key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool, emitBlock func(int64, Block), emitMsg func(int64, JoinMsg), done func(int64)) error {
	// The join waited for every block of the search, the last reader of
	// the search's input.
	var dropErr error
	f.once.Do(func() { dropErr = f.Spill.drop(genSearchIn) })
	if dropErr != nil {
		return dropErr
	}
	b, err := oneBlock(key, blocks)
	if err != nil {
		return err
	}
	// The pooled start read the neighbours' labels (where its gate
	// shut, the block came on as it was searched): the rounds do not.
	b.ExtLabels, b.ExtLabelOff = nil, nil
	asks, err := unspillAll(msgs, 1) // a few small messages per block
	if err != nil {
		return err
	}
	slices.SortFunc(asks, func(x, y JoinMsg) int { return cmp.Compare(x.From, y.From) })
	b.DestKey, b.DestOff, b.DestItem = nil, []int32{0}, nil
	for _, a := range asks {
		b.DestKey = append(b.DestKey, a.From)
		for _, k := range a.Keys {
			b.DestItem = append(b.DestItem, int32(search64(b.Keys, k)))
		}
		b.DestOff = append(b.DestOff, int32(len(b.DestItem)))
	}
	return send(&b, f.Waves, f.Spill, genRouted, emitBlock, emitMsg, done)
}

// oneBlock reads the one block under key, unspilled.
func oneBlock(key int64, blocks func(*Block) bool) (Block, error) {
	var b, extra Block
	if !blocks(&b) {
		return b, fmt.Errorf("ivfstages: block %d: asked for states but absent", key)
	}
	if blocks(&extra) {
		return b, fmt.Errorf("ivfstages: block %d: two blocks under one key", key)
	}
	return b, b.unspill()
}

// send keys a block by its own key and sends the states other blocks need
// next round (one JoinMsg per receiving block). Keys carry the receiving
// block's wave in their top byte (waveKey). It runs in the stage that made
// the states (routeFn, joinRoundFn), one wave at a time, so no stage holds
// a whole round's output at once. With sp on, the block and its messages
// go to generation gen of the spill, and only their references are emitted.
// done gets the block's item count (the wave-ordering token).
func send(b *Block, waves int, sp Spill, gen int, emitBlock func(int64, Block), emitMsg func(int64, JoinMsg), done func(int64)) error {
	o, err := prepare(b, sp, gen)
	if err != nil {
		return err
	}
	o.emit(waves, emitBlock, emitMsg, done)
	return nil
}

// outbox is what send emits for one block: the messages, their receivers'
// block keys, and the block itself (spilled: references to them).
type outbox struct {
	b    Block
	msgs []JoinMsg
	to   []int64
	// n is the block's item count (before spilling empties b).
	n int
}

// prepare builds b's messages and, with sp on, writes them and b to
// generation gen of the spill: all of send but the emitting.
func prepare(b *Block, sp Spill, gen int) (outbox, error) {
	o := outbox{msgs: make([]JoinMsg, len(b.DestKey)), to: b.DestKey, n: b.Len()}
	for d := range b.DestKey {
		m := &o.msgs[d]
		m.From = b.Key
		m.States.Reset()
		for _, i := range b.DestItem[b.DestOff[d]:b.DestOff[d+1]] {
			m.Keys = append(m.Keys, b.Keys[i])
			m.States.AppendFrom(&b.State, int(i))
		}
	}
	if sp.On() {
		o.to = slices.Clone(o.to) // put empties b
		if err := sp.put(gen, b, o.msgs); err != nil {
			return o, err
		}
	}
	o.b = *b
	return o, nil
}

func (o *outbox) emit(waves int, emitBlock func(int64, Block), emitMsg func(int64, JoinMsg), done func(int64)) {
	for d := range o.msgs {
		emitMsg(waveKey(o.to[d], waves), o.msgs[d])
	}
	emitBlock(waveKey(o.b.Key, waves), o.b)
	done(int64(o.n))
}

// waveKey prefixes a block key with the wave its partition is joined in.
func waveKey(block int64, waves int) int64 {
	return int64((block>>24)%int64(max(waves, 1)))<<56 | block
}

// blockOf strips waveKey's prefix.
func blockOf(key int64) int64 { return key & (1<<56 - 1) }

func waveOfBlock(key int64, _ Block) int { return int(key >> 56) }
func waveOfMsg(key int64, _ JoinMsg) int { return int(key >> 56) }

// joinRoundFn runs one round (mixture.Round) for every item of a block, with
// its neighbours' states of the previous round: local ones from the block,
// external ones from the messages joined to it by key. Items run on all
// cores: Prism may hand a worker one bundle at a time.
type joinRoundFn struct {
	RoundConf

	scratch pool.Scratch[engine.RoundScratch]
	once    sync.Once
	// rounder runs the block's round (nil: engine.CPU on Workers and
	// scratch).
	rounder engine.Rounder
}

// Setup resolves the rounds' kernels once per worker process (one CUDA
// context per process, shared by every DoFn instance), as the search
// resolves its own.
func (f *joinRoundFn) Setup() error {
	var err error
	if f.rounder, err = gpu.RoundsOn(f.Device, f.Workers, &f.scratch); err != nil {
		return fmt.Errorf("ivfstages: rounds: %w", err)
	}
	return nil
}

func (f *joinRoundFn) ProcessElement(ctx context.Context, key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool, emitBlock func(int64, Block), emitMsg func(int64, JoinMsg), done func(int64)) error {
	b, err := f.round(ctx, key, blocks, msgs)
	if err != nil {
		return err
	}
	return send(&b, f.Waves, f.Spill, genRouted+f.Round+1, emitBlock, emitMsg, done)
}

// overlapRoundFn is joinRoundFn with each block's sending (building its
// messages, encoding them and the block, writing them to the spill: a
// quarter of a round's time in the fashion run) run in the background
// while the next block of the bundle is read and run; its outputs are
// emitted with that next element or, for the bundle's last block, in
// FinishBundle. Prism runs a round's blocks one after another in one
// bundle, so done inline this work was serial and left every core but one
// idle; the items' rounds keep all cores busy, and overlapping the two
// fills that gap. Outputs are the same elements, the spill the same bytes;
// a failed send fails the bundle like any error.
//
// A join in waves keeps joinRoundFn (orderedRoundFn): with its side input
// the SDK's checks of FinishBundle's parameters at construction and on the
// worker disagree for a CoGroupByKey's DoFn, so it can have none.
type overlapRoundFn struct {
	joinRoundFn
	// pending is the previous element's send, running (nil: none). The
	// SDK harness never reuses a DoFn instance whose bundle failed, so a
	// bundle starts with none.
	pending *pendingSend
}

// pendingSend is one block's prepare, running in the background; done is
// closed when out and err are set.
type pendingSend struct {
	done chan struct{}
	out  outbox
	err  error
}

func (f *overlapRoundFn) ProcessElement(ctx context.Context, key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool, emitBlock func(int64, Block), emitMsg func(int64, JoinMsg), done func(int64)) error {
	b, err := f.round(ctx, key, blocks, msgs)
	if err != nil {
		return err
	}
	if err := f.flush(emitBlock, emitMsg, done); err != nil {
		return err
	}
	p := &pendingSend{done: make(chan struct{})}
	f.pending = p
	gen := genRouted + f.Round + 1
	go func() {
		defer close(p.done)
		p.out, p.err = prepare(&b, f.Spill, gen)
	}()
	return nil
}

// FinishBundle emits the bundle's last block's outputs.
func (f *overlapRoundFn) FinishBundle(_ context.Context, emitBlock func(int64, Block), emitMsg func(int64, JoinMsg), done func(int64)) error {
	return f.flush(emitBlock, emitMsg, done)
}

// flush waits for the pending send, if any, and emits its outputs.
func (f *overlapRoundFn) flush(emitBlock func(int64, Block), emitMsg func(int64, JoinMsg), done func(int64)) error {
	p := f.pending
	if p == nil {
		return nil
	}
	<-p.done
	f.pending = nil
	if p.err != nil {
		return p.err
	}
	p.out.emit(f.Waves, emitBlock, emitMsg, done)
	return nil
}

// lastRoundFn is joinRoundFn for the last round: it sends the items straight
// back towards their input batches (unblockFn), so the last round's blocks,
// neighbourhoods and transition rows are never materialised.
type lastRoundFn struct {
	joinRoundFn
}

func (f *lastRoundFn) ProcessElement(ctx context.Context, key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool, emit func(string, BatchItems), done func(int64)) error {
	b, err := f.round(ctx, key, blocks, msgs)
	if err != nil {
		return err
	}
	if err := (unblockFn{Spill: f.Spill, Gen: genRouted + f.Round + 1}).ProcessElement(b, emit); err != nil {
		return err
	}
	done(int64(b.Len()))
	return nil
}

// RoundConf is what a round DoFn is told (exported for the runner's
// serialisation of the DoFn).
type RoundConf struct {
	Round   int
	Rounds  int
	Mixture mixture.Params
	Workers int
	// Waves is the next round's wave count, for send.
	Waves int
	// Spill: see Spill and genRouted.
	Spill Spill
	// Head is the linear head of the local rounds (JoinRoundsParams.Head);
	// nil: none. Keep: JoinRoundsParams.Keep.
	Head *head.Params
	Keep string
	// Given: JoinRoundsParams.Given, for the local rounds.
	Given bool
	// Streamed: JoinRoundsParams.Streamed, for the local rounds.
	Streamed bool
	// Device: JoinRoundsParams.Device, resolved in Setup.
	Device string
}

// orderedRoundFn and orderedLastRoundFn are the rounds of a join in waves:
// their side input (the previous wave's done token) only holds a wave back
// until the one before it has run, so that Prism holds one wave's join at a
// time. A join in one wave (the default: spill files) runs the plain DoFns
// with no side input, because Prism (v2.77) spins its scheduler for as long as
// a bundle of a stage with side inputs runs (see searchFn).
type orderedRoundFn struct {
	joinRoundFn
}

func (f *orderedRoundFn) ProcessElement(ctx context.Context, key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool, _ func(*int64) bool, emitBlock func(int64, Block), emitMsg func(int64, JoinMsg), done func(int64)) error {
	return f.joinRoundFn.ProcessElement(ctx, key, blocks, msgs, emitBlock, emitMsg, done)
}

type orderedLastRoundFn struct {
	lastRoundFn
}

func (f *orderedLastRoundFn) ProcessElement(ctx context.Context, key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool, _ func(*int64) bool, emit func(string, BatchItems), done func(int64)) error {
	return f.lastRoundFn.ProcessElement(ctx, key, blocks, msgs, emit, done)
}

// round runs the round for the block under key (wave-prefixed, waveKey)
// and returns the block with its next states; it adds the items that ran
// to item_rounds.
func (f *joinRoundFn) round(ctx context.Context, key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool) (Block, error) {
	key = blockOf(key)
	b, err := oneBlock(key, blocks)
	if err != nil {
		return b, err
	}
	var dropErr error
	f.once.Do(func() {
		progress.RoundStarted(f.Round, f.Rounds)
		// This round's join waited for all of the previous round (or
		// routeFn), the last reader of the generation before its input.
		dropErr = f.Spill.drop(genRouted + f.Round - 1)
	})
	if dropErr != nil {
		return b, dropErr
	}
	got, ext, err := joinStates(&b, msgs, fmt.Sprintf("round %d", f.Round))
	if err != nil {
		return b, err
	}
	rounder := engine.WithWorkers(f.rounder, f.Workers, &f.scratch)
	next, ran, err := rounder.Round(b.batch(&b.State, func(e int) (*mixture.States, int) {
		l := ext[e]
		return &got[l.m].States, int(l.i)
	}), f.Round, &f.Mixture)
	if err != nil {
		return b, fmt.Errorf("ivfstages: block %d round %d (%d items): %w", b.Key, f.Round, b.Len(), err)
	}
	b.State = next
	itemRounds.Inc(ctx, int64(ran))
	return b, nil
}

// msgLoc is where an external neighbour's state is among the messages
// joined to its block: message m, item i.
type msgLoc struct{ m, i int32 }

// joinStates reads the messages joined to block b (unspilled) and locates
// in them every external neighbour's state (ext[e]: ExtKeys[e]'s); a state
// not asked for, or one missing, is an error naming the block and when
// (the round).
func joinStates(b *Block, msgs func(*JoinMsg) bool, when string) (got []JoinMsg, ext []msgLoc, err error) {
	ext = make([]msgLoc, len(b.ExtKeys))
	for e := range ext {
		ext[e] = msgLoc{-1, -1}
	}
	var m JoinMsg
	for msgs(&m) {
		if err := m.unspill(); err != nil {
			return nil, nil, err
		}
		for i, k := range m.Keys {
			e := sort.Search(len(b.ExtKeys), func(e int) bool { return b.ExtKeys[e] >= k })
			if e == len(b.ExtKeys) || b.ExtKeys[e] != k {
				return nil, nil, fmt.Errorf("ivfstages: block %d %s: state of %d not asked for", b.Key, when, k)
			}
			ext[e] = msgLoc{int32(len(got)), int32(i)}
		}
		got = append(got, m)
		m = JoinMsg{}
	}
	for e, l := range ext {
		if l.m < 0 {
			return nil, nil, fmt.Errorf("ivfstages: block %d %s: no state for neighbour %d (block %d)", b.Key, when, b.ExtKeys[e], b.ExtHome[e])
		}
	}
	return got, ext, nil
}

// neighbour resolves neighbour slot j of block b's item i: a local one's
// state in own, an external one's at ext(e), or none.
func (b *Block) neighbour(own *mixture.States, ext func(e int) (*mixture.States, int)) func(i, j int) (*mixture.States, int, float64) {
	k := b.K
	return func(i, j int) (*mixture.States, int, float64) {
		switch c := b.Nbr[i*k+j]; {
		case c >= 0:
			return own, int(c), b.Weight[i*k+j]
		case c != -1:
			ss, at := ext(int(-2 - c))
			return ss, at, b.Weight[i*k+j]
		}
		return nil, 0, 0
	}
}

// batch is the round's input for block b with its items' states own (local
// neighbours' too) and external neighbour e's state at ext(e).
func (b *Block) batch(own *mixture.States, ext func(e int) (*mixture.States, int)) engine.Batch {
	return engine.Batch{N: b.Len(), K: b.K, Own: own, Init: &b.Init,
		Neighbour:   b.neighbour(own, ext),
		Annotations: func(i int) int { return engine.Annotations(b.Labels[b.LabelOff[i]:b.LabelOff[i+1]]) },
		Key:         func(i int) uint64 { return uint64(b.Keys[i]) },
	}
}

// itemRounds adds this path's items times rounds to summary.json's
// item_rounds: a counter is one by its name, so it sums with stages.Rounds'.
var itemRounds = beam.NewCounter("relabel", "item_rounds")

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*requestFn)(nil)).Elem())
	register.Function2x1(waveOfBlock)
	register.Function2x1(waveOfMsg)
	register.Emitter2[int64, Block]()
	register.Emitter2[int64, JoinMsg]()
	beam.RegisterDoFn(reflect.TypeOf((*routeFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*joinRoundFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*overlapRoundFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*lastRoundFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*orderedRoundFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*orderedLastRoundFn)(nil)).Elem())
	register.Iter1[Block]()
	register.Iter1[JoinMsg]()
}

// JoinRoundsParams configures JoinRounds.
type JoinRoundsParams struct {
	// Rounds of sample + EM. Optional, default 0: items keep their initial
	// states.
	Rounds int
	// Workers bounds the goroutines one block's items run on. Optional,
	// default 0: GOMAXPROCS.
	Workers int
	// Waves splits each round's join into that many joins run one after the
	// other (RoundWaves sizes it). Optional, default 0: one join a round.
	Waves int
	// Spill, when on, keeps blocks and states in files between the joins
	// (see Spill); Waves is then ignored. Optional, default off.
	Spill Spill
	// Local runs every round in one stage that holds all blocks in memory
	// (localRoundsFn) instead of a join per round: for the embedded runner,
	// when the blocks fit (budget.LocalRounds, LocalRoundsBytes). The results
	// are the same. Optional, default false.
	Local bool
	// Streamed, with Local and Spill on, keeps only the items' states in
	// the one stage's memory and reads every block from its spill file
	// each round (localRoundsFn.streamed): for the embedded runner, when
	// every block does not fit but the states do
	// (budget.StreamedRounds). The results are the same. Not with Head.
	// Optional, default false.
	Streamed bool
	// Head, when set, fits the linear head (transforms/head) every round,
	// as engine.Run and the exact path's rounds do (localRoundsFn says
	// how): only with Local, over blocks searched with Params.Features (a
	// join per round has no place where every item's features and states
	// meet). Optional, default nil: none.
	Head *head.Params
	// Keep, when set, is a directory (a blobio path every worker can
	// write) where the local rounds keep the head's fit after the last
	// round, and either path the given-label model's fit (with Given), for
	// keptio.ReadFitDir (an incremental lake run gives them to the rows it
	// relabels). Optional, default "": nothing kept.
	Keep string
	// Mixture configures each round. Required: Mixture.C and a valid rest
	// (mixture.Params.Validate), defaults already applied.
	Mixture mixture.Params
	// Device selects the rounds' kernels (gpu.Resolve: cpu, cuda or
	// auto), resolved in each worker's Setup. On a device the local rounds
	// run every block of a round as one batch. Optional, default "": auto.
	Device string
	// Given, when set, reads each item's given label through the
	// given-label model fitted after the last round (mixture.GivenFit),
	// as engine.Run does with engine.Options.Given: the items' states out
	// are its posteriors (given.go says how each path fits it), which the
	// writer takes at temperature 1. Optional, default false: the final
	// states.
	Given bool
	// Rows is the number of items (the plan's rows), with which the
	// given-label fit's sample is offered only the items it can take
	// (sampleThreshold). Optional: 0 offers it every item.
	Rows int64
}

// Validate checks p, in the stage's terms.
func (p JoinRoundsParams) Validate() error {
	var errs []error
	if p.Rounds < 0 {
		errs = append(errs, fmt.Errorf("ivfstages: JoinRounds: Rounds = %d, want >= 0", p.Rounds))
	}
	if p.Workers < 0 {
		errs = append(errs, fmt.Errorf("ivfstages: JoinRounds: Workers = %d, want >= 0 (0: GOMAXPROCS)", p.Workers))
	}
	if p.Waves < 0 {
		errs = append(errs, fmt.Errorf("ivfstages: JoinRounds: Waves = %d, want >= 0", p.Waves))
	}
	if err := p.Mixture.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("ivfstages: JoinRounds: %w", err))
	}
	if p.Streamed && (!p.Local || !p.Spill.On() || p.Head != nil) {
		errs = append(errs, fmt.Errorf("ivfstages: JoinRounds: the streamed rounds need the local rounds (Local) with spill files (Spill) and no linear head (Head)"))
	}
	if p.Head != nil {
		if !p.Local && p.Rounds > 0 {
			errs = append(errs, fmt.Errorf("ivfstages: JoinRounds: the linear head runs in the local rounds only (Local)"))
		}
		if err := p.Head.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("ivfstages: JoinRounds: %w", err))
		}
	}
	return errors.Join(errs...)
}

// JoinRounds runs jp.Rounds rounds over blocks (PCollection<Block>, from
// Neighbours), joining to each block, every round, the previous round's
// states of its neighbours in other blocks by key (CoGroupByKey): a worker
// holds one block and the states sent to it, never the whole dataset. Which
// states go where is worked out once, before the first round. Each round's
// join runs in waves (blocks by partition modulo waves, one after the other):
// an embedded runner holds a join's whole input several times over while it
// runs, and a wave bounds that to its share (waves <= 1: one join a round).
// The final states go back to their input batches, in row order (with
// jp.Given, the given-label model's posteriors: one more join of the final
// states, then the model's stages, given.go). With
// Spill on, blocks and states wait in spill files and the joins carry only their
// references, so no waves are needed (Waves is ignored).
// Returns PCollection<stages.Items>, as Rounds does, for Write
// (PCollection<stages.SpilledItems> with Spill on: rebatch). It panics on
// invalid jp, while the pipeline is built.
func JoinRounds(s beam.Scope, blocks beam.PCollection, jp JoinRoundsParams) beam.PCollection {
	s = s.Scope("relabel.ivf.JoinRounds")
	if err := jp.Validate(); err != nil {
		panic(err)
	}
	rounds, workers, sp, p := jp.Rounds, jp.Workers, jp.Spill, jp.Mixture
	waves := max(jp.Waves, 1)
	if sp.On() {
		waves = 1
	}
	if rounds <= 0 && !jp.Given {
		return rebatch(s, beam.ParDo(s, &unblockFn{}, blocks), sp)
	}
	if jp.Local && rounds > 0 {
		return localRounds(s, blocks, RoundConf{Rounds: rounds, Mixture: p, Workers: workers, Spill: sp, Head: jp.Head, Keep: jp.Keep, Given: jp.Given, Streamed: jp.Streamed, Device: jp.Device})
	}
	own, asks := beam.ParDo2(s, &requestFn{}, blocks)
	// Every stage that makes states keys them for the next round and splits
	// them by wave; each wave's join gathers its piece from every producer.
	split := func(s beam.Scope, own, msgs beam.PCollection) ([]beam.PCollection, []beam.PCollection) {
		if waves == 1 {
			return []beam.PCollection{own}, []beam.PCollection{msgs}
		}
		return beam.Partition(s, waves, waveOfBlock, own), beam.Partition(s, waves, waveOfMsg, msgs)
	}
	routed, msgs, token := beam.ParDo3(s, &routeFn{Waves: waves, Spill: sp}, beam.CoGroupByKey(s, own, asks))
	o, m := split(s, routed, msgs)
	owns, msgss := [][]beam.PCollection{o}, [][]beam.PCollection{m} // [producer][wave]
	var rows []beam.PCollection
	for r := 0; r < rounds; r++ {
		rs := s.Scope(fmt.Sprintf("round%02d", r))
		var nextOwns, nextMsgss [][]beam.PCollection
		for w := range waves {
			ws := rs.Scope(fmt.Sprintf("wave%02d", w))
			var ow, mw []beam.PCollection
			for p := range owns {
				ow, mw = append(ow, owns[p][w]), append(mw, msgss[p][w])
			}
			in := beam.CoGroupByKey(ws, flatten(ws, ow), flatten(ws, mw))
			// With the given-label model the last round sends its
			// states on as any round does: the model's join reads them.
			last := r == rounds-1 && !jp.Given
			conf := RoundConf{Round: r, Rounds: rounds, Mixture: p, Workers: workers, Spill: sp, Device: jp.Device}
			if !last {
				conf.Waves = waves
			}
			fn, sides := roundDoFn(conf, last, waves, token)
			if last {
				var out beam.PCollection
				out, token = beam.ParDo2(ws, fn, in, sides...)
				rows = append(rows, out)
				continue
			}
			var ob, om beam.PCollection
			ob, om, token = beam.ParDo3(ws, fn, in, sides...)
			o, m := split(ws, ob, om)
			nextOwns, nextMsgss = append(nextOwns, o), append(nextMsgss, m)
		}
		owns, msgss = nextOwns, nextMsgss
	}
	if !jp.Given {
		return rebatch(s, flatten(s, rows), sp)
	}
	// One more join, of the final states, in the rounds' waves.
	gs := s.Scope("given")
	var gbs, scores []beam.PCollection
	for w := range waves {
		ws := gs.Scope(fmt.Sprintf("wave%02d", w))
		var ow, mw []beam.PCollection
		for p := range owns {
			ow, mw = append(ow, owns[p][w]), append(mw, msgss[p][w])
		}
		in := beam.CoGroupByKey(ws, flatten(ws, ow), flatten(ws, mw))
		var g, sc beam.PCollection
		if waves <= 1 {
			g, sc, token = beam.ParDo3(ws, &givenJoinFn{Workers: workers, Spill: sp, Gen: genRouted + rounds + 1}, in)
		} else {
			fn := &orderedGivenJoinFn{givenJoinFn{Workers: workers, Spill: sp, Gen: genRouted + rounds + 1}}
			g, sc, token = beam.ParDo3(ws, fn, in, beam.SideInput{Input: token})
		}
		gbs, scores = append(gbs, g), append(scores, sc)
	}
	return rebatch(s, givenModel(gs, flatten(gs, gbs), flatten(gs, scores), givenStage{
		keep: jp.Keep, c: p.C, c0: p.C0, seed: p.Seed, workers: workers, sp: sp, gen: genRouted + rounds, rows: jp.Rows,
	}), sp)
}

// roundDoFn is the DoFn of a round with conf (the last round's when last)
// and its side inputs: the previous wave's token orders the waves of a join
// in several; one wave needs no order beyond its join's, and so no side
// input (orderedRoundFn).
func roundDoFn(conf RoundConf, last bool, waves int, token beam.PCollection) (any, []beam.Option) {
	if waves <= 1 {
		if last {
			return &lastRoundFn{joinRoundFn{RoundConf: conf}}, nil
		}
		return &overlapRoundFn{joinRoundFn: joinRoundFn{RoundConf: conf}}, nil
	}
	sides := []beam.Option{beam.SideInput{Input: token}}
	if last {
		return &orderedLastRoundFn{lastRoundFn{joinRoundFn{RoundConf: conf}}}, sides
	}
	return &orderedRoundFn{joinRoundFn{RoundConf: conf}}, sides
}

func flatten(s beam.Scope, cols []beam.PCollection) beam.PCollection {
	if len(cols) == 1 {
		return cols[0]
	}
	return beam.Flatten(s, cols...)
}

// RoundWaves is how many waves JoinRounds needs for rows items so that one
// wave's join input (blocks and the states sent to them) stays under about
// waveBytes (as Waves takes it), with states at their largest (c0 classes,
// rows of p.MaxRowEntries entries) and k neighbours.
func RoundWaves(rows int64, k int, p mixture.Params, waveBytes int64) int {
	perRow := 64 + 12*int64(k) + 2*budget.MaxPackedState(p)
	return Waves(max(rows, 1)*perRow, waveBytes)
}
