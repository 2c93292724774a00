package ivfstages

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// The given-label model (mixture.GivenFit, engine.FitGivenBatch) in ivf
// mode. It reads, for every item, its neighbours' final states, and fits
// one class-level transition over all items, in three steps that each
// read every item once:
//
//  1. the temperature: each block's per-temperature scores
//     (engine.GivenScores over the block's items, in item order), summed
//     over the blocks in block-key order (sumScores);
//  2. the transition: mixture.FitGiven over the evidence at that
//     temperature of the labelled items among the mixture.PooledSampleCap
//     first of all items by engine.PooledBefore, in ascending key order,
//     as engine.GivenSample picks them (givenGatherFn);
//  3. every item's posterior under the fit (engine.GivenStates per block).
//
// The local rounds (localRoundsFn) run the three steps in memory; the
// joined rounds run them as stages (givenModel), with one more exchange of
// states after the last round so that each block holds its external
// neighbours' final states (GivenBlock). Both run the same functions over
// the same blocks in the same orders, so they give the same bits on any
// worker count. Against engine.Run on the same neighbour graph and final
// states the fit and the posteriors are the same bits too, but for the
// temperature's score, summed per block here and over all items there: its
// sums round differently, and only a tie within rounding between two
// temperatures could choose another (TestGivenLocal).

// givenBatch is the given-label model's view of block b with its items'
// states own and external neighbour e's state at ext(e).
func (b *Block) givenBatch(own *mixture.States, ext func(e int) (*mixture.States, int)) engine.GivenBatch {
	return engine.GivenBatch{N: b.Len(), K: b.K, Own: own,
		Neighbour: b.neighbour(own, ext),
		Key:       func(i int) int64 { return b.Keys[i] },
		Given:     func(i int) int32 { return schemas.GivenLabel(b.Labels[b.LabelOff[i]:b.LabelOff[i+1]]) },
	}
}

// blockScores are a block's per-temperature scores (engine.GivenScores).
func blockScores(b engine.GivenBatch, workers int) []float64 {
	score := make([]float64, len(mixture.GivenTemperatures))
	own := make([]int32, b.N)
	for i := range own {
		own[i], _ = b.Own.Top(i)
	}
	engine.GivenScores(b, own, workers, score)
	return score
}

// sumScores sums the blocks' scores (len(keys) rows of
// len(mixture.GivenTemperatures)) in ascending block key order: the one
// order both paths sum in, whatever order the blocks came in.
func sumScores(keys []int64, scores []float64) []float64 {
	nt := len(mixture.GivenTemperatures)
	order := make([]int, len(keys))
	for x := range order {
		order[x] = x
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	sum := make([]float64, nt)
	for _, x := range order {
		for j := range nt {
			sum[j] += scores[x*nt+j]
		}
	}
	return sum
}

// GivenSample is the fit's items gathered from blocks: keys, given labels
// (negative: unlabelled, kept because they take their place in the
// sample's order) and, for the labelled ones, their neighbours' evidence
// at temperature T (item i's classes Class[Off[i]:Off[i+1]], masses P[...];
// empty for the unlabelled).
type GivenSample struct {
	T     float64
	Keys  []int64
	Given []int32
	Off   []int32
	Class []int32
	P     []float64
}

func (s *GivenSample) add(key int64, given int32, ev *mixture.Evidence) {
	if len(s.Off) == 0 {
		s.Off = []int32{0}
	}
	s.Keys = append(s.Keys, key)
	s.Given = append(s.Given, given)
	if ev != nil {
		s.Class = append(s.Class, ev.Class...)
		s.P = append(s.P, ev.P...)
	}
	s.Off = append(s.Off, int32(len(s.Class)))
}

// pick returns s's items at idx, in that order.
func (s *GivenSample) pick(idx []int) GivenSample {
	out := GivenSample{T: s.T}
	for _, i := range idx {
		lo, hi := s.Off[i], s.Off[i+1]
		out.add(s.Keys[i], s.Given[i], &mixture.Evidence{Class: s.Class[lo:hi], P: s.P[lo:hi]})
	}
	return out
}

// sampleOf returns the indices of the items the fit reads among keys: the
// cap first by engine.PooledBefore (every one below the cap), ascending by
// key; engine.PooledSample's choice at cap mixture.PooledSampleCap.
func sampleOf(keys []int64, seed uint64, cap int) []int {
	idx := engine.SelectCandidates(keys, cap, seed)
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	return idx
}

// blockSample is block b's share of the fit's sample at temperature t:
// its items among the cap first of its own by engine.PooledBefore (a
// superset of its items among the cap first of all: the first of a union
// are among the first of each part) whose hash is below below
// (sampleThreshold; math.MaxUint64: all), the labelled ones with their
// neighbours' evidence as engine.GivenSample computes it.
func blockSample(b engine.GivenBatch, t float64, seed uint64, size int, below uint64) GivenSample {
	keys := make([]int64, b.N)
	for i := range keys {
		keys[i] = b.Key(i)
	}
	out := GivenSample{T: t, Off: []int32{0}}
	idx := sampleOf(keys, seed, size)
	if below != math.MaxUint64 {
		idx = slices.DeleteFunc(idx, func(i int) bool { return !offered(seed, keys[i], below) })
	}
	// The sampled items' evidence as engine computes it for a batch (the
	// neighbours in slot order, those present), one worker: blocks run
	// side by side.
	ev, given := engine.GivenEvidence(engine.GivenBatch{N: len(idx), K: b.K,
		Neighbour: func(x, j int) (*mixture.States, int, float64) { return b.Neighbour(idx[x], j) },
		Key:       func(x int) int64 { return keys[idx[x]] },
		Given:     func(x int) int32 { return b.Given(idx[x]) },
	}, t, 1)
	for x, i := range idx {
		if given[x] < 0 {
			out.add(keys[i], given[x], nil)
			continue
		}
		out.add(keys[i], given[x], &ev[x])
	}
	return out
}

// sampleThreshold is the hash (engine.CandidateHash) below which an item
// is offered to a sample that takes the cap first of rows items by hash:
// the share of twice the cap, so that the cap first are all offered save
// where fewer than the cap of the rows fall below it, a binomial count of
// mean 2 cap (at the default cap of 200,000, 300 standard deviations
// away; givenFitFn checks it). Why offer fewer: every block offered all
// of its items (each block's own cap first), so the combine's inputs held
// every item's evidence, and the embedded runner handed them to its merge
// in one bundle, several copies at once: at 2M rows 330 MB a copy, the
// run's peak; offered at this threshold, about twice the cap whatever the
// rows. math.MaxUint64 (all) where rows are unknown (0) or at most twice
// the cap.
func sampleThreshold(rows int64, cap int) uint64 {
	if rows <= 2*int64(cap) {
		return math.MaxUint64
	}
	return uint64(float64(2*cap) / float64(rows) * (1 << 64))
}

// offered is whether key is offered to a sample at threshold below
// (sampleThreshold).
func offered(seed uint64, key int64, below uint64) bool {
	return below == math.MaxUint64 || engine.CandidateHash(seed, key) < below
}

// checkSample is the error of a fit's sample (what) of n items where it
// takes the cap first of rows (0: unknown, no check) and got fewer: too
// few fell below sampleThreshold.
func checkSample(what string, n int, rows int64, cap int) error {
	if want := min(rows, int64(cap)); rows > 0 && int64(n) < want {
		return fmt.Errorf("ivfstages: the %s fit's sample holds %d of the %d items it takes: fewer than expected passed the sampling threshold (sampleThreshold)", what, n, want)
	}
	return nil
}

// givenGatherFn gathers the blocks' samples (blockSample) into the fit's:
// the Cap first of all items by engine.PooledBefore, in ascending key
// order. Like pooledGatherFn it trims while it grows (past twice the cap,
// to the cap's first), a choice that does not depend on how the runner
// splits or merges it.
type givenGatherFn struct {
	Seed uint64
	// Cap is the sample's size; 0: mixture.PooledSampleCap (tests set a
	// small one to exercise the trimming).
	Cap int
}

func (f givenGatherFn) cap() int {
	if f.Cap > 0 {
		return f.Cap
	}
	return mixture.PooledSampleCap
}

func (givenGatherFn) CreateAccumulator() GivenSample { return GivenSample{} }

func (f givenGatherFn) AddInput(a, s GivenSample) GivenSample { return f.MergeAccumulators(a, s) }

func (f givenGatherFn) MergeAccumulators(a, b GivenSample) GivenSample {
	if len(b.Keys) == 0 {
		return a
	}
	if len(a.Keys) == 0 {
		return b
	}
	if a.T != b.T {
		// Every block samples at the one temperature chosen: two are a
		// programmer's error, and fitting on either would be silently wrong.
		panic(fmt.Sprintf("ivfstages: given-label sample at temperatures %g and %g", a.T, b.T))
	}
	base := int32(len(a.Class))
	a.Keys = append(a.Keys, b.Keys...)
	a.Given = append(a.Given, b.Given...)
	for _, o := range b.Off[1:] {
		a.Off = append(a.Off, base+o)
	}
	a.Class = append(a.Class, b.Class...)
	a.P = append(a.P, b.P...)
	if len(a.Keys) > 2*f.cap() {
		return a.pick(sampleOf(a.Keys, f.Seed, f.cap()))
	}
	return a
}

func (f givenGatherFn) ExtractOutput(a GivenSample) GivenSample {
	return a.pick(sampleOf(a.Keys, f.Seed, f.cap()))
}

// fitGiven fits the transition over a gathered sample (ExtractOutput's:
// in key order), its labelled items only, as engine.FitGivenBatch does
// over engine.GivenSample's.
func fitGiven(s GivenSample, c, workers int) (*mixture.GivenFit, error) {
	var ev []mixture.Evidence
	var given []int32
	for i, g := range s.Given {
		if g < 0 {
			continue
		}
		lo, hi := s.Off[i], s.Off[i+1]
		ev = append(ev, mixture.Evidence{Class: s.Class[lo:hi], P: s.P[lo:hi]})
		given = append(given, g)
	}
	fit, err := mixture.FitGiven(ev, given, c, s.T, workers)
	if err != nil {
		return nil, fmt.Errorf("ivfstages: given-label model: %w", err)
	}
	return fit, nil
}

// noteGiven tells the user what the model chose: a temperature at the
// end of mixture.GivenTemperatures' range says the neighbours' evidence is
// as sharp, or as flat, as the model allows; a power above 1 that the given
// labels are better predicted by evidence sharper than the neighbours' vote.
func noteGiven(fit *mixture.GivenFit) {
	progress.Notef("given-label model: neighbours' temperature %g, evidence power %g, transition fitted over %d labelled items", fit.T, fit.Power, fit.Items)
}

// givenLocal replaces the final states cur of n blocks (sorted by key;
// block x as load(x) gives it; external neighbour e of block x at
// ext[x][e]) by their posteriors under the given-label model fitted over
// all of them, and returns the fit. The blocks run on workers goroutines,
// one block each at a time, as the local rounds run them; load is called
// once per block in each of the fit's three passes (the streamed rounds
// read the block from its spill file each time).
func givenLocal(n int, load func(x int) (*Block, error), ext [][]extLoc, cur []mixture.States, c, c0 int, seed uint64, capN, workers int) (*mixture.GivenFit, error) {
	batch := func(x int) (engine.GivenBatch, *Block, error) {
		b, err := load(x)
		if err != nil {
			return engine.GivenBatch{}, nil, err
		}
		return b.givenBatch(&cur[x], func(e int) (*mixture.States, int) {
			l := ext[x][e]
			return &cur[l.block], int(l.item)
		}), b, nil
	}
	keys := make([]int64, n)
	nt := len(mixture.GivenTemperatures)
	scores := make([]float64, n*nt)
	var rows atomic.Int64
	err := pool.EachIndexErr(n, workers, func(x int) error {
		gb, b, err := batch(x)
		if err != nil {
			return err
		}
		keys[x] = b.Key
		rows.Add(int64(gb.N))
		copy(scores[x*nt:], blockScores(gb, 1))
		return nil
	})
	if err != nil {
		return nil, err
	}
	t := mixture.GivenTemperature(sumScores(keys, scores))
	samples := make([]GivenSample, n)
	g := givenGatherFn{Seed: seed, Cap: capN}
	// Only items below the threshold are offered, as the joined rounds'
	// blocks offer them: offering every item held every item's evidence
	// for a sample of the cap's first, at millions of rows the run's
	// largest memory.
	below := sampleThreshold(rows.Load(), g.cap())
	err = pool.EachIndexErr(n, workers, func(x int) error {
		gb, _, err := batch(x)
		if err != nil {
			return err
		}
		samples[x] = blockSample(gb, t, seed, g.cap(), below)
		return nil
	})
	if err != nil {
		return nil, err
	}
	acc := g.CreateAccumulator()
	for x := range samples {
		acc = g.AddInput(acc, samples[x])
		samples[x] = GivenSample{}
	}
	sample := g.ExtractOutput(acc)
	if err := checkSample("given-label", len(sample.Keys), rows.Load(), g.cap()); err != nil {
		return nil, err
	}
	fit, err := fitGiven(sample, c, workers)
	if err != nil {
		return nil, err
	}
	noteGiven(fit)
	post := make([]mixture.States, n)
	err = pool.EachIndexErr(n, workers, func(x int) error {
		gb, _, err := batch(x)
		if err != nil {
			return err
		}
		post[x] = engine.GivenStates(gb, fit, c0, 1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	copy(cur, post)
	return fit, nil
}

// GivenBlock is a block after the last round with its external
// neighbours' final states (Ext: ExtKeys[e]'s at e), both without their
// transition rows (appendPosterior: the model reads the posteriors only),
// and without what only the rounds read (Init, X, Dest*).
type GivenBlock struct {
	Block Block
	Ext   mixture.States
	// Spilled, when set, says Block (but its Key) and Ext are in a spill
	// file (Spill).
	Spilled spillRef
}

func (g *GivenBlock) batch() engine.GivenBatch {
	return g.Block.givenBatch(&g.Block.State, func(e int) (*mixture.States, int) { return &g.Ext, e })
}

func encodeGivenBlock(g GivenBlock) []byte {
	var w wire.Writer
	if g.Spilled.Path != "" {
		w.Uvarint(1)
		w.Varint(g.Block.Key)
		spillio.PutRef(&w, g.Spilled)
		return w.B
	}
	w.Uvarint(0)
	w.String(string(encodeBlock(g.Block)))
	putStatesPacked(&w, &g.Ext)
	return w.B
}

func decodeGivenBlock(b []byte) (GivenBlock, error) {
	r := wire.Reader{B: b}
	var g GivenBlock
	if r.Uvarint() == 1 {
		g.Block.Key = r.Varint()
		g.Spilled = spillio.GetRef(&r)
		return g, r.Err()
	}
	bb := r.String()
	var err error
	if g.Ext, err = getStatesPacked(&r); err != nil {
		return g, err
	}
	if err := r.Err(); err != nil {
		return g, err
	}
	g.Block, err = decodeBlock([]byte(bb))
	return g, err
}

// unspill replaces a spilled GivenBlock by its contents; an inline one
// stays.
func (g *GivenBlock) unspill() error {
	if g.Spilled.Path == "" {
		return nil
	}
	key := g.Block.Key
	ng, err := load(g.Spilled, decodeGivenBlock, fmt.Sprintf("block %d's final neighbourhood", key))
	if err != nil {
		return err
	}
	if ng.Block.Key != key {
		return fmt.Errorf("ivfstages: spill: %s holds block %d, want %d", g.Spilled.Path, ng.Block.Key, key)
	}
	*g = ng
	return nil
}

// GivenScore is blocks' per-temperature scores: block Keys[x]'s at
// Score[x*nt:(x+1)*nt], nt = len(mixture.GivenTemperatures). One block's
// as the join emits it; all blocks' in the combine (givenScoreFn).
type GivenScore struct {
	Keys  []int64
	Score []float64
}

// GivenModel is the given-label model on its way to the blocks: after the
// scores' sum the temperature alone (C 0), after the fit the whole of it
// (mixture.GivenFit's fields).
type GivenModel struct {
	C      int
	T      float64
	Power  float64
	A      []float64
	LogLik float64
	Items  int
}

func (m GivenModel) fit() *mixture.GivenFit {
	return &mixture.GivenFit{C: m.C, T: m.T, Power: m.Power, A: m.A, LogLik: m.LogLik, Items: m.Items}
}

func encodeGivenScore(s GivenScore) []byte {
	var w wire.Writer
	wire.Slice(&w, s.Keys)
	wire.Slice(&w, s.Score)
	return w.B
}

func decodeGivenScore(b []byte) (GivenScore, error) {
	r := wire.Reader{B: b}
	s := GivenScore{Keys: wire.ReadSlice[int64](&r), Score: wire.ReadSlice[float64](&r)}
	return s, r.Err()
}

func encodeGivenSample(s GivenSample) []byte {
	w := wire.Writer{B: make([]byte, 0, 32+12*len(s.Keys)+12*len(s.Class))}
	w.Float64(s.T)
	wire.Slice(&w, s.Keys)
	wire.Slice(&w, s.Given)
	wire.Slice(&w, s.Off)
	wire.Slice(&w, s.Class)
	wire.Slice(&w, s.P)
	return w.B
}

func decodeGivenSample(b []byte) (GivenSample, error) {
	r := wire.Reader{B: b}
	s := GivenSample{T: r.Float64()}
	s.Keys = wire.ReadSlice[int64](&r)
	s.Given = wire.ReadSlice[int32](&r)
	s.Off = wire.ReadSlice[int32](&r)
	s.Class = wire.ReadSlice[int32](&r)
	s.P = wire.ReadSlice[float64](&r)
	return s, r.Err()
}

func encodeGivenModel(m GivenModel) []byte {
	var w wire.Writer
	w.Uvarint(uint64(m.C))
	w.Float64(m.T)
	w.Float64(m.Power)
	wire.Slice(&w, m.A)
	w.Float64(m.LogLik)
	w.Uvarint(uint64(m.Items))
	return w.B
}

func decodeGivenModel(b []byte) (GivenModel, error) {
	r := wire.Reader{B: b}
	m := GivenModel{C: int(r.Uvarint()), T: r.Float64(), Power: r.Float64()}
	m.A = wire.ReadSlice[float64](&r)
	m.LogLik = r.Float64()
	m.Items = int(r.Uvarint())
	return m, r.Err()
}

// givenJoinFn joins to a block, after the last round, its external
// neighbours' final states (the messages the last round sent, as it would
// to a next round), and emits the block with them (GivenBlock, keyed by
// block) and its scores. Spilled, the GivenBlock goes to generation Gen.
type givenJoinFn struct {
	Workers int
	Spill   Spill
	Gen     int

	once sync.Once
}

func (f *givenJoinFn) ProcessElement(ctx context.Context, key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool, emit func(int64, GivenBlock), emitScore func(GivenScore), done func(int64)) error {
	key = blockOf(key)
	var dropErr error
	f.once.Do(func() {
		// The join waited for all of the last round, the last reader of
		// the generation before its input.
		dropErr = f.Spill.drop(f.Gen - 2)
	})
	if dropErr != nil {
		return dropErr
	}
	b, err := oneBlock(key, blocks)
	if err != nil {
		return err
	}
	got, ext, err := joinStates(&b, msgs, "after the last round")
	if err != nil {
		return err
	}
	g := GivenBlock{Block: b}
	g.Block.State = mixture.States{}
	g.Block.State.Reset()
	for i := range b.Len() {
		appendPosterior(&g.Block.State, &b.State, i)
	}
	g.Ext.Reset()
	for _, l := range ext {
		appendPosterior(&g.Ext, &got[l.m].States, int(l.i))
	}
	g.Block.Init, g.Block.X = mixture.States{}, nil
	g.Block.DestKey, g.Block.DestOff, g.Block.DestItem = nil, nil, nil
	score := blockScores(g.batch(), f.Workers)
	n := b.Len()
	if f.Spill.On() {
		refs, err := f.Spill.write(f.Gen, "g"+strconv.FormatInt(key, 16), encodeGivenBlock(g))
		if err != nil {
			return err
		}
		g = GivenBlock{Block: Block{Key: key}, Spilled: refs[0]}
	}
	emit(key, g)
	emitScore(GivenScore{Keys: []int64{key}, Score: score})
	done(int64(n))
	return nil
}

// orderedGivenJoinFn is givenJoinFn in a join in waves (orderedRoundFn
// says why the side input).
type orderedGivenJoinFn struct {
	givenJoinFn
}

func (f *orderedGivenJoinFn) ProcessElement(ctx context.Context, key int64, blocks func(*Block) bool, msgs func(*JoinMsg) bool, _ func(*int64) bool, emit func(int64, GivenBlock), emitScore func(GivenScore), done func(int64)) error {
	return f.givenJoinFn.ProcessElement(ctx, key, blocks, msgs, emit, emitScore, done)
}

// givenScoreFn sums the blocks' scores (sumScores: in block key order, so
// the sum does not depend on how the runner splits or merges it) and
// chooses the temperature (mixture.GivenTemperature).
type givenScoreFn struct{}

func (givenScoreFn) CreateAccumulator() GivenScore { return GivenScore{} }

func (givenScoreFn) AddInput(a, s GivenScore) GivenScore {
	return givenScoreFn{}.MergeAccumulators(a, s)
}

func (givenScoreFn) MergeAccumulators(a, b GivenScore) GivenScore {
	a.Keys = append(a.Keys, b.Keys...)
	a.Score = append(a.Score, b.Score...)
	return a
}

func (givenScoreFn) ExtractOutput(a GivenScore) GivenModel {
	return GivenModel{T: mixture.GivenTemperature(sumScores(a.Keys, a.Score))}
}

func givenKeyAtZero(key int64, _ GivenBlock) (int, int64) { return 0, key }

func givenModelAtZero(m GivenModel) (int, GivenModel) { return 0, m }

// givenToBlocksFn sends the model (the temperature, then the fit: one
// small value) to each block key; pooledToBlocksFn says why a join and not
// a side input.
type givenToBlocksFn struct{}

func (givenToBlocksFn) ProcessElement(_ int, keys func(*int64) bool, models func(*GivenModel) bool, emit func(int64, GivenModel)) error {
	var m GivenModel
	if !models(&m) {
		return fmt.Errorf("ivfstages: given-label model: nothing fitted")
	}
	var key int64
	for keys(&key) {
		emit(key, m)
	}
	return nil
}

// oneGivenBlock reads the one GivenBlock and the one model under key,
// unspilled.
func oneGivenBlock(key int64, gbs func(*GivenBlock) bool, models func(*GivenModel) bool) (GivenBlock, GivenModel, error) {
	var g, extra GivenBlock
	var m GivenModel
	if !models(&m) {
		return g, m, fmt.Errorf("ivfstages: given-label model: block %d: no model", key)
	}
	if !gbs(&g) {
		return g, m, fmt.Errorf("ivfstages: given-label model: block %d: absent", key)
	}
	if gbs(&extra) {
		return g, m, fmt.Errorf("ivfstages: given-label model: block %d: two blocks under one key", key)
	}
	return g, m, g.unspill()
}

// givenSampleFn emits a block's share of the fit's sample (blockSample) at
// the chosen temperature.
type givenSampleFn struct {
	Seed  uint64
	Cap   int
	Spill Spill
	// Gen is the generation the last round wrote, read by givenJoinFn only.
	Gen int
	// Rows is the run's item count (sampleThreshold); 0: unknown.
	Rows int64

	once sync.Once
}

func (f *givenSampleFn) ProcessElement(key int64, gbs func(*GivenBlock) bool, models func(*GivenModel) bool, emit func(GivenSample)) error {
	var dropErr error
	f.once.Do(func() {
		// The temperature waited for every block's join.
		dropErr = f.Spill.drop(f.Gen)
	})
	if dropErr != nil {
		return dropErr
	}
	g, m, err := oneGivenBlock(key, gbs, models)
	if err != nil {
		return err
	}
	capN := givenGatherFn{Cap: f.Cap}.cap()
	emit(blockSample(g.batch(), m.T, f.Seed, capN, sampleThreshold(f.Rows, capN)))
	return nil
}

// givenFitFn fits the transition over the gathered sample (fitGiven).
// With Keep set, the fit is kept there for an incremental run
// (stages.KeepGiven).
type givenFitFn struct {
	C    int
	Keep string
	// Rows and Cap: the sample's sizes (sampleThreshold), to check that
	// it got the cap's items.
	Rows int64
	Cap  int
	// Workers bounds the fit's goroutines (0: GOMAXPROCS).
	Workers int
}

func (f *givenFitFn) ProcessElement(ctx context.Context, s GivenSample, emit func(GivenModel)) error {
	if err := checkSample("given-label", len(s.Keys), f.Rows, givenGatherFn{Cap: f.Cap}.cap()); err != nil {
		return err
	}
	fit, err := fitGiven(s, f.C, f.Workers)
	if err != nil {
		return err
	}
	if f.Keep != "" {
		if err := stages.KeepGiven(ctx, f.Keep, fit); err != nil {
			return fmt.Errorf("ivfstages: %w", err)
		}
	}
	noteGiven(fit)
	emit(GivenModel{C: fit.C, T: fit.T, Power: fit.Power, A: fit.A, LogLik: fit.LogLik, Items: fit.Items})
	return nil
}

// givenPostFn replaces a block's final states by their posteriors under
// the fit (engine.GivenStates) and sends its items back towards their
// input batches (unblockFn).
type givenPostFn struct {
	C0      int
	Workers int
	Out     unblockFn
}

func (f *givenPostFn) ProcessElement(key int64, gbs func(*GivenBlock) bool, models func(*GivenModel) bool, emit func(string, BatchItems)) error {
	g, m, err := oneGivenBlock(key, gbs, models)
	if err != nil {
		return err
	}
	b := g.Block
	b.State = engine.GivenStates(g.batch(), m.fit(), f.C0, f.Workers)
	return f.Out.ProcessElement(b, emit)
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*givenJoinFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*orderedGivenJoinFn)(nil)).Elem())
	register.Emitter2[int64, GivenBlock]()
	register.Emitter1[GivenScore]()
	beam.RegisterDoFn(reflect.TypeOf((*givenScoreFn)(nil)).Elem())
	register.Function2x2(givenKeyAtZero)
	register.Function1x2(givenModelAtZero)
	beam.RegisterDoFn(reflect.TypeOf((*givenToBlocksFn)(nil)).Elem())
	register.Emitter2[int64, GivenModel]()
	beam.RegisterDoFn(reflect.TypeOf((*givenSampleFn)(nil)).Elem())
	register.Emitter1[GivenSample]()
	beam.RegisterDoFn(reflect.TypeOf((*givenGatherFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*givenFitFn)(nil)).Elem())
	register.Emitter1[GivenModel]()
	beam.RegisterDoFn(reflect.TypeOf((*givenPostFn)(nil)).Elem())
	register.Iter1[GivenBlock]()
	register.Iter1[GivenModel]()
	beam.RegisterCoder(reflect.TypeOf(GivenBlock{}), encodeGivenBlock, decodeGivenBlock)
	beam.RegisterCoder(reflect.TypeOf(GivenScore{}), encodeGivenScore, decodeGivenScore)
	beam.RegisterCoder(reflect.TypeOf(GivenSample{}), encodeGivenSample, decodeGivenSample)
	beam.RegisterCoder(reflect.TypeOf(GivenModel{}), encodeGivenModel, decodeGivenModel)
}

// givenStage is what the joined rounds' model stages are told.
type givenStage struct {
	// keep: JoinRoundsParams.Keep.
	keep    string
	c, c0   int
	seed    uint64
	cap     int
	workers int
	sp      Spill
	// gen is the generation the last round (or routeFn, with no rounds)
	// wrote its blocks and messages to.
	gen int
	// rows: JoinRoundsParams.Rows.
	rows int64
}

// givenModel fits the given-label model over the joined blocks (gbs:
// PCollection<KV<int64, GivenBlock>>, with their scores: PCollection<
// GivenScore>) and sends every item's posterior back towards its input
// batch: PCollection<KV<string, BatchItems>>, for rebatch. The
// temperature, then the fit, go to the blocks by a join under their keys.
func givenModel(s beam.Scope, gbs, scores beam.PCollection, st givenStage) beam.PCollection {
	s = s.Scope("given")
	keys := beam.ParDo(s, givenKeyAtZero, gbs)
	toBlocks := func(s beam.Scope, m beam.PCollection) beam.PCollection {
		return beam.ParDo(s, &givenToBlocksFn{}, beam.CoGroupByKey(s, keys, beam.ParDo(s, givenModelAtZero, m)))
	}
	t := toBlocks(s.Scope("temperature"), beam.Combine(s, &givenScoreFn{}, scores))
	sample := beam.ParDo(s, &givenSampleFn{Seed: st.seed, Cap: st.cap, Spill: st.sp, Gen: st.gen, Rows: st.rows}, beam.CoGroupByKey(s, gbs, t))
	gathered := beam.Combine(s, &givenGatherFn{Seed: st.seed, Cap: st.cap}, sample)
	fit := toBlocks(s.Scope("fit"), beam.ParDo(s, &givenFitFn{C: st.c, Keep: st.keep, Rows: st.rows, Cap: st.cap, Workers: st.workers}, gathered))
	out := unblockFn{Spill: st.sp, Gen: st.gen + 2}
	return beam.ParDo(s, &givenPostFn{C0: st.c0, Workers: st.workers, Out: out}, beam.CoGroupByKey(s, gbs, fit))
}
