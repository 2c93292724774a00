package ivfstages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/engine/roundstest"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
	"github.com/relabel/relabel/transforms/synth"
)

// fixtureParams are the fixture's partitioning for n rows: 8 partitions,
// each item in 3, blocks of at most 40 items.
func fixtureParams(n int) ivf.Params {
	p := ivf.DefaultParams(int64(n)).WithPartitions(int64(n), 8).WithNProbe(3)
	p.BlockRows, p.Seed = 40, 1
	return p
}

// fixture is a small synthetic dataset in input batches, with its moments
// and a fitted partitioning small enough to have several blocks and
// external neighbours.
type fixture struct {
	batches []schemas.Rows
	stats   stages.Stats
	model   ivf.Model
	nb      engine.NeighbourParams
	rounds  int
	// features keeps the items' features in the searched blocks (the
	// linear head's).
	features bool
}

func newFixture(t *testing.T, n, batch int) *fixture {
	t.Helper()
	const d, c = 8, 5
	g, err := synth.New(synth.DefaultParams(int64(n), d, c, 0.3, 7))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{}
	var all []float32
	sf := &sampleFn{Cap: 200, Seed: 1}
	sacc := sf.CreateAccumulator()
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		shard := "s0"
		if lo >= n/2 {
			shard = "s1"
		}
		r := schemas.Rows{Shard: shard, Offset: int64(lo), IDs: make([]int64, hi-lo), D: d, Features: make([]float32, (hi-lo)*d),
			Labels: make([]int32, hi-lo), LabelOff: make([]int32, hi-lo+1)}
		for i := range r.LabelOff {
			r.LabelOff[i] = int32(i)
		}
		g.Rows(int64(lo), int64(hi), r.IDs, r.Features, make([]int32, hi-lo), r.Labels)
		f.batches = append(f.batches, r)
		all = append(all, r.Features...)
		sacc = sf.AddInput(sacc, r)
	}
	// The global moments, as stages.ComputeMoments gives them (up to the
	// order of the float sums, which the fixture does not depend on).
	mean, std := engine.Moments(all, n, d)
	f.stats = stages.Stats{N: int64(n), D: d, Mean: mean, M2: std}
	sample := sf.ExtractOutput(sacc)
	fit := &fitFn{P: fixtureParams(n), Standardise: true}
	var models []ivf.Model
	if err := fit.ProcessElement(context.Background(), sample, f.stats, func(m ivf.Model) { models = append(models, m) }); err != nil {
		t.Fatal(err)
	}
	f.model = models[0]
	m := mixture.DefaultParams(c)
	m.L, m.EMIters, m.AnnotationWeight, m.Seed = 40, 3, 0, 1
	f.nb = engine.NeighbourParams{K: 5, Metric: knn.L2, Standardise: true, Weighting: engine.LLC, LLC: llc.DefaultParams(), Mixture: m, Device: "cpu"}
	f.rounds = 3
	return f
}

// parts probes every batch and emits it in the given number of waves: the
// shuffle's input, by key. Every batch is emitted a second time spilled to
// files, which must give references to the same parts.
func (f *fixture) parts(t *testing.T, waves int) map[int64][]Part {
	t.Helper()
	out := map[int64][]Part{}
	pf := &probeFn{NProbe: 3, Standardise: true}
	for _, r := range f.batches {
		var pr Probed
		if err := pf.ProcessElement(context.Background(), r, f.stats, f.model, func(p Probed) { pr = p }); err != nil {
			t.Fatal(err)
		}
		if got, err := decodeProbed(encodeProbed(pr)); err != nil || !reflect.DeepEqual(got, pr) {
			t.Fatalf("Probed coder: err %v", err)
		}
		for w := 0; w < waves; w++ {
			ef := &emitFn{Wave: w, Waves: waves}
			if err := ef.ProcessElement(pr, f.model, "", stages.IterOf([]int64{1}), func(k int64, p Part) {
				if int(k>>24)%waves != w {
					t.Fatalf("wave %d of %d emitted to partition %d", w, waves, k>>24)
				}
				out[k] = append(out[k], p)
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// search runs the search DoFn on every key, the parts in the given order.
func (f *fixture) search(t *testing.T, parts map[int64][]Part, shuffle *rand.Rand) map[int64]Block {
	t.Helper()
	s := &searchFn{P: f.nb, Features: f.features}
	if err := s.Setup(); err != nil {
		t.Fatal(err)
	}
	out := map[int64]Block{}
	for k, ps := range parts {
		ps = slices.Clone(ps)
		if shuffle != nil {
			shuffle.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		}
		if err := s.ProcessElement(context.Background(), k, stages.IterOf(ps), func(b Block) { out[b.Key] = b }, func(int64) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishBundle(context.Background(), func(b Block) { out[b.Key] = b }, func(int64) {}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSearchRefs: with the parts spilled, the search's shuffle carries one
// PartRefs per batch and group of blocks, fewer elements than blocks and a
// few bytes a block, that survive their coder; searchRefsFn, given each
// group's references in any order, emits every block with the bytes
// searchFn gives it.
func TestSearchRefs(t *testing.T) {
	f := newFixture(t, 600, 70)
	want := f.search(t, f.parts(t, 1), nil)
	sp := Spill{Dir: t.TempDir()}
	pf := &probeFn{NProbe: 3, Standardise: true}
	groups := map[int64][]PartRefs{}
	elems, perBlock := 0, 0
	for _, r := range f.batches {
		var pr Probed
		if err := pf.ProcessElement(context.Background(), r, f.stats, f.model, func(p Probed) { pr = p }); err != nil {
			t.Fatal(err)
		}
		ef := &emitRefsFn{Waves: 1, Spill: sp, Group: 2}
		if err := ef.ProcessElement(pr, f.model, "", stages.IterOf([]int64{1}), func(g int64, refs PartRefs) {
			enc := encodePartRefs(refs)
			if got, err := decodePartRefs(enc); err != nil || !reflect.DeepEqual(got, refs) {
				t.Fatalf("PartRefs coder: err %v", err)
			}
			if len(enc) > len(refs.Path)+4+8*len(refs.Blocks) {
				t.Errorf("%d blocks' references take %d bytes", len(refs.Blocks), len(enc))
			}
			for _, bk := range refs.Blocks {
				if searchGroup(bk, 2) != g {
					t.Errorf("block %d sent to group %d", bk, g)
				}
			}
			groups[g] = append(groups[g], refs)
			elems++
			perBlock += len(refs.Blocks)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(groups) < 2 || elems >= perBlock {
		t.Fatalf("%d groups, %d elements for %d blocks' parts: the fixture does not group", len(groups), elems, perBlock)
	}
	s := &searchRefsFn{P: f.nb, Features: f.features}
	if err := s.Setup(); err != nil {
		t.Fatal(err)
	}
	got := map[int64]Block{}
	emit := func(b Block) { got[b.Key] = b }
	rng := rand.New(rand.NewPCG(5, 6))
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		refs := groups[g]
		rng.Shuffle(len(refs), func(i, j int) { refs[i], refs[j] = refs[j], refs[i] })
		if err := s.ProcessElement(context.Background(), g, stages.IterOf(refs), emit, func(int64) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishBundle(context.Background(), emit, func(int64) {}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d blocks searched from references, %d from parts", len(got), len(want))
	}
	for k, b := range want {
		if !bytes.Equal(encodeBlock(b), encodeBlock(got[k])) {
			t.Errorf("block %d differs searched from references", k)
		}
	}
	// A part whose bytes are damaged fails the search naming its file.
	g := slices.Sorted(maps.Keys(groups))[0]
	bad := slices.Clone(groups[g])
	bad[0].Len = slices.Clone(bad[0].Len)
	bad[0].Len[0]--
	err := s.ProcessElement(context.Background(), g, stages.IterOf(bad), emit, func(int64) {})
	if err == nil || !strings.Contains(err.Error(), bad[0].Path) {
		t.Errorf("a truncated part: err %v, want one naming %s", err, bad[0].Path)
	}
}

// TestSearchOrder: a block does not depend on the number of waves nor on
// the order the shuffle delivers its parts in; every item is searched in exactly one block; the
// partitioning has several blocks per partition and external neighbours.
func TestSearchOrder(t *testing.T) {
	f := newFixture(t, 600, 70)
	a := f.search(t, f.parts(t, 1), nil)
	b := f.search(t, f.parts(t, 3), rand.New(rand.NewPCG(1, 2)))
	if len(a) != len(b) {
		t.Fatalf("%d blocks in one wave, %d in three", len(a), len(b))
	}
	seen := map[int64]int{}
	ext := 0
	for k, ba := range a {
		if !bytes.Equal(encodeBlock(ba), encodeBlock(b[k])) {
			t.Errorf("block %d differs when searched in another wave or its parts arrive in another order", k)
		}
		for _, key := range ba.Keys {
			seen[key]++
		}
		ext += len(ba.ExtKeys)
		for i := range ba.Keys {
			for j, c := range ba.Nbr[i*ba.K : (i+1)*ba.K] {
				if c == -1 {
					t.Errorf("block %d item %d: neighbour %d missing among 600 items", k, i, j)
				}
			}
		}
	}
	if len(seen) != 600 {
		t.Errorf("%d items searched, want 600", len(seen))
	}
	for key, c := range seen {
		if c != 1 {
			t.Errorf("item %d searched in %d blocks", key, c)
		}
	}
	if sum32(f.model.Blocks) <= int64(f.model.P()) || ext == 0 {
		t.Errorf("fixture too easy: %d blocks for %d partitions, %d external neighbours", sum32(f.model.Blocks), f.model.P(), ext)
	}
}

// TestJoinRounds: rounds joined by key across blocks, with messages delivered
// in scrambled orders, give exactly the states of the same rounds run over
// all items in one place (the neighbourhoods the search found); the same
// when blocks and states are spilled to files, where the joins carry only
// small references and each round removes the generation it made obsolete.
func TestJoinRounds(t *testing.T) {
	t.Run("shuffled", func(t *testing.T) { testJoinRounds(t, Spill{}, 0, false) })
	t.Run("spilled", func(t *testing.T) { testJoinRounds(t, Spill{Dir: t.TempDir()}, 0, false) })
	// Settled items skip rounds: which ones depends on the neighbours'
	// moves, which travel with their states through the joins (and spills).
	t.Run("skipping", func(t *testing.T) { testJoinRounds(t, Spill{}, 0.2, false) })
	t.Run("skipping spilled", func(t *testing.T) { testJoinRounds(t, Spill{Dir: t.TempDir()}, 0.2, false) })
	// Through the Rounder Setup resolves (one that counts its calls):
	// every block's round runs there, and its failure fails the round.
	t.Run("through a Rounder", func(t *testing.T) { testJoinRounds(t, Spill{}, 0.2, true) })
}

// testJoinRounds runs the join per round against the reference; counted,
// its rounds run through a roundstest.Counter, as a resolved device's would.
func testJoinRounds(t *testing.T, sp Spill, tol float64, counted bool) {
	f := newFixture(t, 500, 64)
	f.nb.Mixture.ActiveTol = tol
	blocks := f.search(t, f.parts(t, 2), nil)
	rng := rand.New(rand.NewPCG(3, 4))

	where, states, before, skipped := referenceRounds(f, blocks, tol)
	p := f.nb.Mixture

	// Joined: request/route, then rounds, each CoGroupByKey simulated.
	type kv[T any] struct {
		k int64
		v T
	}
	cogroup := func(own []kv[Block], msgs []kv[JoinMsg], fn func(int64, func(*Block) bool, func(*JoinMsg) bool) error) {
		byKey := map[int64][]JoinMsg{}
		for _, m := range msgs {
			byKey[m.k] = append(byKey[m.k], m.v)
		}
		for _, o := range own {
			ms := byKey[o.k]
			rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
			if err := fn(o.k, stages.IterOf([]Block{o.v}), stages.IterOf(ms)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var own []kv[Block]
	var msgs []kv[JoinMsg]
	emitOwn := func(k int64, b Block) { own = append(own, kv[Block]{k, b}) }
	emitMsg := func(k int64, m JoinMsg) { msgs = append(msgs, kv[JoinMsg]{k, m}) }
	for _, b := range blocks {
		if sp.On() { // as the search emits them
			if err := sp.put(genSearched, &b, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := (requestFn{}).ProcessElement(b, emitOwn, emitMsg); err != nil {
			t.Fatal(err)
		}
	}
	// Spilled, the shuffle carries references of a few dozen bytes.
	checkSpilled := func(r int) {
		if !sp.On() {
			return
		}
		for _, o := range own {
			if o.v.Keys != nil || o.v.Spilled.Path == "" || len(encodeBlock(o.v)) > 128 {
				t.Fatalf("round %d: block %d not spilled (%d bytes encoded)", r, blockOf(o.k), len(encodeBlock(o.v)))
			}
		}
		for _, m := range msgs {
			if m.v.Keys != nil || m.v.Spilled.Path == "" || len(encodeJoinMsg(m.v)) > 128 {
				t.Fatalf("round %d: message from %d not spilled (%d bytes encoded)", r, m.v.From, len(encodeJoinMsg(m.v)))
			}
		}
	}
	const waves = 3
	// Every producer keys its blocks and messages for the next round's wave.
	checkWaves := func(r int) {
		for _, o := range own {
			if int(o.k>>56) != int(blockOf(o.k)>>24)%waves {
				t.Fatalf("round %d: block %d keyed for wave %d", r, blockOf(o.k), o.k>>56)
			}
		}
	}
	in, inMsgs := own, msgs
	own, msgs = nil, nil
	cogroup(in, inMsgs, func(k int64, b func(*Block) bool, m func(*JoinMsg) bool) error {
		return (&routeFn{Waves: waves, Spill: sp}).ProcessElement(k, b, m, emitOwn, emitMsg, func(int64) {})
	})
	var counter *roundstest.Counter
	var rounder engine.Rounder // nil: the CPU's, as without Setup
	if counted {
		counter = &roundstest.Counter{Inner: engine.CPU{Workers: 2}}
		rounder = counter
	}
	cur := map[int64]Block{}
	byBatch := map[string][]BatchItems{}
	doneItems := 0
	countDone := func(n int64) { doneItems += int(n) }
	for r := 0; r < f.rounds; r++ {
		checkWaves(r)
		checkSpilled(r)
		in, inMsgs := own, msgs
		own, msgs = nil, nil
		cur = map[int64]Block{}
		for _, o := range in {
			b := o.v
			if err := b.unspill(); err != nil {
				t.Fatal(err)
			}
			cur[blockOf(o.k)] = b
		}
		// Even rounds send in the background (overlapRoundFn, a join in
		// one wave), odd ones inline (joinRoundFn, as in waves): both must
		// give the reference's states.
		conf := RoundConf{Round: r, Rounds: f.rounds, Mixture: p, Workers: 2, Waves: waves, Spill: sp}
		jf := joinRoundFn{RoundConf: conf, rounder: rounder}
		of := overlapRoundFn{joinRoundFn: joinRoundFn{RoundConf: conf, rounder: rounder}}
		if counted && r == 0 {
			lost := errors.New("device lost")
			fail := joinRoundFn{RoundConf: conf, rounder: &roundstest.Counter{Err: lost}}
			var ms []JoinMsg
			for _, m := range inMsgs {
				if m.k == in[0].k {
					ms = append(ms, m.v)
				}
			}
			err := fail.ProcessElement(context.Background(), in[0].k, stages.IterOf([]Block{in[0].v}), stages.IterOf(ms), emitOwn, emitMsg, countDone)
			if !errors.Is(err, lost) || !strings.Contains(err.Error(), fmt.Sprintf("block %d round 0", blockOf(in[0].k))) {
				t.Fatalf("a failing Rounder: error %v, want the block, the round and %v", err, lost)
			}
		}
		cogroup(in, inMsgs, func(k int64, b func(*Block) bool, m func(*JoinMsg) bool) error {
			if r == f.rounds-1 {
				// The last round sends the items back to their batches.
				last := &lastRoundFn{joinRoundFn{RoundConf: RoundConf{Round: r, Rounds: f.rounds, Mixture: p, Workers: 2, Spill: sp}, rounder: rounder}}
				return last.ProcessElement(context.Background(), k, b, m,
					func(bk string, rs BatchItems) { byBatch[bk] = append(byBatch[bk], rs) }, func(int64) {})
			}
			if r%2 == 0 {
				return of.ProcessElement(context.Background(), k, b, m, emitOwn, emitMsg, countDone)
			}
			return jf.ProcessElement(context.Background(), k, b, m, emitOwn, emitMsg, countDone)
		})
		if r%2 == 0 && r < f.rounds-1 {
			// The bundle's last block is emitted when it finishes.
			if of.pending == nil {
				t.Fatalf("round %d: no send pending before FinishBundle", r)
			}
			if err := of.FinishBundle(context.Background(), emitOwn, emitMsg, countDone); err != nil {
				t.Fatal(err)
			}
		}
		if r < f.rounds-1 && doneItems != len(where) {
			t.Fatalf("round %d: done counted %d items, want %d", r, doneItems, len(where))
		}
		doneItems = 0
		if sp.On() {
			// Round r read its input generation and removed the one before.
			if _, err := os.Stat(sp.genDir(genRouted + r - 1)); !os.IsNotExist(err) {
				t.Errorf("round %d: generation %d still there (%v)", r, genRouted+r-1, err)
			}
			out := genRouted + r + 1 // the last round sends items to their batches instead
			if r == f.rounds-1 {
				out = genRouted + r
			}
			if _, err := os.Stat(sp.genDir(out)); err != nil {
				t.Errorf("round %d: generation %d is missing: %v", r, out, err)
			}
			if r == f.rounds-1 {
				// The posteriors went to the next generation's files; only
				// references pass the shuffle.
				if _, err := os.Stat(sp.genDir(genRouted + r + 1)); err != nil {
					t.Errorf("last round: posteriors' generation %d is missing: %v", genRouted+r+1, err)
				}
				for bk, rs := range byBatch {
					for _, x := range rs {
						if x.Row != nil || x.Spilled.Path == "" || len(encodeBatchItems(x)) > 128 {
							t.Fatalf("batch %q: posteriors not spilled (%d bytes encoded)", bk, len(encodeBatchItems(x)))
						}
					}
				}
			}
		}
	}
	// cur holds the blocks the last round started from: after all rounds
	// but the last.
	for k, b := range cur {
		if got, err := decodeBlock(encodeBlock(b)); err != nil || !reflect.DeepEqual(got, b) {
			t.Fatalf("block %d after a round: coder round trip differs (err %v)", k, err)
		}
	}
	for key, w := range where {
		b := cur[w.block]
		var got mixture.State
		b.State.Get(&got, w.i)
		if want := before[key]; !reflect.DeepEqual(got, want) {
			t.Fatalf("item %d: joined rounds give %+v, one-place rounds %+v", key, got, want)
		}
	}
	if tol > 0 && skipped == 0 {
		t.Errorf("tolerance %g: no item skipped a round; the case tests nothing", tol)
	}
	if counted && (counter.Calls() != int64(f.rounds*len(blocks)) || counter.Items() != int64(f.rounds*len(where))) {
		t.Errorf("the Rounder ran %d blocks' rounds of %d items, want %d of %d", counter.Calls(), counter.Items(), f.rounds*len(blocks), f.rounds*len(where))
	}

	checkBatches(t, f, byBatch, states, rng)
}

// checkBatches checks the posteriors sent back to the input batches
// (byBatch, shuffled by rng): every batch whole, in row order, each item
// with states' posterior.
func checkBatches(t *testing.T, f *fixture, byBatch map[string][]BatchItems, states map[int64]mixture.State, rng *rand.Rand) {
	t.Helper()
	// Back to input batches after the last round: every batch whole, in row
	// order, with the posteriors (the transition rows are dropped: the
	// output has no use for them).
	//
	// Spilled, the elements are groups of batches (putBatchGroups), read
	// by rebatchSpillFn, which hands the writer each batch in a file.
	spilled := map[string]stages.Items{}
	for key, rs := range byBatch {
		if len(rs) == 0 || rs[0].Spilled.Path == "" {
			continue
		}
		sp := Spill{Dir: t.TempDir()}
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		if err := (&rebatchSpillFn{Spill: sp}).ProcessElement(key, stages.IterOf(rs), func(s stages.SpilledItems) {
			it, err := s.Load()
			if err != nil {
				t.Fatal(err)
			}
			spilled[batchKey(it.Shard, it.Offset)] = it
		}); err != nil {
			t.Fatal(err)
		}
		if len(key) < 2 || key[0] != 'g' {
			t.Errorf("spilled posteriors keyed %q, want a group's key", key)
		}
	}
	if len(spilled) == 0 && len(byBatch) != len(f.batches) {
		t.Fatalf("%d batches back, want %d", len(byBatch), len(f.batches))
	}
	if len(spilled) > 0 && (len(spilled) != len(f.batches) || len(byBatch) > batchGroups) {
		t.Fatalf("%d batches back in %d groups, want %d batches in at most %d groups", len(spilled), len(byBatch), len(f.batches), batchGroups)
	}
	for _, in := range f.batches {
		got, ok := spilled[batchKey(in.Shard, in.Offset)]
		if !ok {
			rs := byBatch[batchKey(in.Shard, in.Offset)]
			rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			if err := (rebatchFn{}).ProcessElement("", stages.IterOf(rs), func(it stages.Items) { got = it }); err != nil {
				t.Fatal(err)
			}
		}
		if got.Shard != in.Shard || got.Offset != in.Offset || !slices.Equal(got.IDs, in.IDs) || !slices.Equal(got.Labels, in.Labels) {
			t.Errorf("batch %s@%d: ids or labels not restored in row order", in.Shard, in.Offset)
		}
		for i, key := range got.IDs {
			var s mixture.State
			got.State.Get(&s, i)
			if want := states[key]; !slices.Equal(s.Class, want.Class) || !slices.Equal(s.Pi, want.Pi) {
				t.Errorf("batch %s@%d row %d: posterior differs after rebatching", in.Shard, in.Offset, i)
				break
			}
		}
	}
}

// blockItem is where an item is: item i of block block.
type blockItem struct {
	block int64
	i     int
}

// referenceRounds runs f's rounds item by item over blocks' neighbourhoods
// with mixture.Round, the states packed and unpacked between rounds as the
// stages ship them, skipping settled items with tolerance tol as
// mixture.Params.ActiveTol says. It returns where each item is, the final
// states, the states after all rounds but the last, and how many
// item-rounds were skipped.
func referenceRounds(f *fixture, blocks map[int64]Block, tol float64) (where map[int64]blockItem, states, before map[int64]mixture.State, skipped int) {
	where = map[int64]blockItem{}
	for k, b := range blocks {
		for i, key := range b.Keys {
			where[key] = blockItem{k, i}
		}
	}
	keyOf := func(b *Block, c int32) int64 {
		if c >= 0 {
			return b.Keys[c]
		}
		return b.ExtKeys[-2-c]
	}
	states = map[int64]mixture.State{}
	for _, b := range blocks {
		for i, key := range b.Keys {
			var s mixture.State
			b.State.Get(&s, i)
			states[key] = s
		}
	}
	p := f.nb.Mixture
	// With a tolerance, the reference applies the skipping rule of
	// mixture.Params.ActiveTol itself: an item runs when its own or a
	// weighted neighbour's accumulated move exceeds it (every item in the
	// first round).
	moved := map[int64]float32{}
	movedOf := func(key int64) float32 {
		if m, ok := moved[key]; ok {
			return m
		}
		return float32(math.Inf(1))
	}
	for r := 0; r < f.rounds; r++ {
		before = states
		next := map[int64]mixture.State{}
		nextMoved := map[int64]float32{}
		var ws mixture.Workspace
		for key, w := range where {
			b := blocks[w.block]
			var neigh []mixture.State
			var wt []float64
			active := tol == 0 || movedOf(key) > float32(tol)
			for j := 0; j < b.K; j++ {
				c := b.Nbr[w.i*b.K+j]
				if c == -1 {
					continue
				}
				neigh = append(neigh, states[keyOf(&b, c)])
				wt = append(wt, b.Weight[w.i*b.K+j])
				active = active || wt[len(wt)-1] > 0 && movedOf(keyOf(&b, c)) > float32(tol)
			}
			own := states[key]
			if !active {
				next[key], nextMoved[key] = own, moved[key]
				skipped++
				continue
			}
			var dst mixture.State
			ws.Round(&dst, &own, nil, 0, neigh, wt, uint64(key), r, &p)
			var q mixture.States
			q.Append(&dst)
			var back mixture.State
			q.Get(&back, 0)
			next[key] = back
			prev := movedOf(key)
			if prev > float32(tol) {
				prev = 0
			}
			nextMoved[key] = prev + float32(mixture.Distance(&own, &back, p.C))
		}
		states, moved = next, nextMoved
	}

	return where, states, before, skipped
}

// TestDupCheck: duplicates across batches are found (the smallest key's, the
// later occurrence named), whatever the bucket count; none gives "".
func TestDupCheck(t *testing.T) {
	mk := func(shard string, off int64, ids ...int64) schemas.Rows {
		return schemas.Rows{Shard: shard, Offset: off, IDs: ids}
	}
	for _, tc := range []struct {
		name    string
		batches []schemas.Rows
		want    string
	}{
		{"none", []schemas.Rows{mk("a", 0, 1, 2, 3), mk("b", 0, 4, 5)}, ""},
		{"across shards", []schemas.Rows{mk("a", 0, 1, 9, 3), mk("b", 10, 4, 9, 3)}, "duplicate id 3 (first at a row 2)"},
		{"within a batch", []schemas.Rows{mk("a", 0, 7, 8, 7)}, "duplicate id 7 (first at row 0)"},
	} {
		for _, buckets := range []int{1, 3, 64} {
			groups := map[int64][]DupFrag{}
			bf := &dupBucketFn{Buckets: buckets}
			for _, r := range tc.batches {
				bf.ProcessElement(r, func(k int64, f DupFrag) { groups[k] = append(groups[k], f) })
			}
			got := ""
			cf := &dupCheckFn{IDColumn: "id"}
			for k, fs := range groups {
				cf.ProcessElement(k, stages.IterOf(fs), func(s string) { got = firstDupFn{}.MergeAccumulators(got, s) })
			}
			got = dupMessage(got)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%s, %d buckets: got %q, want one containing %q", tc.name, buckets, got, tc.want)
			}
		}
	}
}

// TestCoders: every ivf element type survives its bulk coder exactly,
// nil and empty slices included.
func TestCoders(t *testing.T) {
	f := newFixture(t, 300, 64)
	parts := f.parts(t, 1)
	blocks := f.search(t, parts, nil)
	for k, ps := range parts {
		for _, p := range ps {
			got, err := decodePart(encodePart(p))
			if err != nil || !reflect.DeepEqual(got, p) {
				t.Fatalf("Part of block %d: err %v, differs %v", k, err, !reflect.DeepEqual(got, p))
			}
		}
	}
	for k, b := range blocks {
		got, err := decodeBlock(encodeBlock(b))
		if err != nil || !reflect.DeepEqual(got, b) {
			t.Fatalf("Block %d: err %v, differs %v", k, err, !reflect.DeepEqual(got, b))
		}
		// What a round reads, with every field it passes over filled.
		b.Shards, b.StrIDs = []string{"s1", "shard two"}, []string{"a", "", "ccc"}
		b.X, b.D = []float32{1, 2, 3, 4}, 2
		b.ExtLabels, b.ExtLabelOff = []int32{4, 5}, []int32{0, 2}
		b.DestKey, b.DestOff, b.DestItem = []int64{9}, []int32{0, 1}, []int32{3}
		b.Init = b.State
		enc := encodeBlock(b)
		got, err = decodeBlockRounds(enc)
		want := Block{Key: b.Key, Keys: b.Keys, IDKind: b.IDKind, Labels: b.Labels, LabelOff: b.LabelOff, Multi: b.Multi,
			K: b.K, Nbr: b.Nbr, Weight: b.Weight, D: b.D, Init: b.Init}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Block %d for a round: err %v, differs %v", k, err, !reflect.DeepEqual(got, want))
		}
		if _, err := decodeBlockRounds(enc[:len(enc)/2]); err == nil {
			t.Errorf("Block %d for a round: half its bytes decoded without an error", k)
		}
	}
	var st mixture.States
	st.Reset()
	for _, v := range []any{
		f.model,
		ivf.Model{D: 2, Centroids: []float32{1, 2}, Blocks: []int32{3}, Seed: 9, Metric: knn.Cosine},
		ivf.Sample{Cap: 3, D: 2, Hashes: []uint64{1}, Keys: []int64{-5}, Features: []float32{1, 2}},
		ivf.Sample{},
		JoinMsg{From: -3, Keys: []int64{1, 2}, States: st},
		JoinMsg{},
		DupFrag{Shard: "x", Offset: 5, Keys: []int64{1}, Row: []int32{0}, StrIDs: []string{"a"}},
		DupFrag{Keys: []int64{}},
		BatchItems{Row: []int32{2, 0}, Items: stages.Items{Shard: "s", IDs: []int64{1, 2}, State: st}},
		BatchItems{Spilled: spillRef{Path: "/spill/g0011/o7", Off: 40, Len: 96}},
	} {
		var got any
		var err error
		switch x := v.(type) {
		case ivf.Model:
			var b []byte
			if b, err = encodeModel(x); err == nil {
				got, err = decodeModel(b)
			}
		case ivf.Sample:
			got, err = decodeSample(encodeSample(x))
		case JoinMsg:
			got, err = decodeJoinMsg(encodeJoinMsg(x))
		case DupFrag:
			got, err = decodeDupFrag(encodeDupFrag(x))
		case BatchItems:
			got, err = decodeBatchItems(encodeBatchItems(x))
		}
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("%T: err %v; got %+v, want %+v", v, err, got, v)
		}
	}
}

// TestPackedStates: the packed state coder keeps every value at 1-, 2- and
// 4-byte widths, and rejects truncated input.
func TestPackedStates(t *testing.T) {
	for _, c := range []int32{5, 300, 70000} {
		var ss mixture.States
		ss.Reset()
		rng := rand.New(rand.NewPCG(uint64(c), 1))
		for i := 0; i < 20; i++ {
			var s mixture.State
			s.Init([]int32{rng.Int32N(c), rng.Int32N(c)}, int(c), 10, 0.1)
			ss.Append(&s)
		}
		ss.Append(&mixture.State{}) // an empty state
		var w wire.Writer
		putStatesPacked(&w, &ss)
		r := wire.Reader{B: w.B}
		got, err := getStatesPacked(&r)
		if err != nil || r.Err() != nil || !reflect.DeepEqual(got, ss) {
			t.Errorf("C=%d: round trip differs (err %v, %v)", c, err, r.Err())
		}
		r = wire.Reader{B: w.B[:len(w.B)/2]}
		if _, err := getStatesPacked(&r); err == nil && r.Err() == nil {
			t.Errorf("C=%d: truncated input accepted", c)
		}
	}
}

// TestSearchTile: the search's CPU kNN runs in query tiles of
// searchQueryBlock (two goroutines on a block of about 500 items), and the
// tile only spreads the work: blocks searched in tiles of 7 queries on
// three goroutines are byte for byte those of Setup's searcher.
func TestSearchTile(t *testing.T) {
	// The CPU searcher's tiling, whatever device a build would pick.
	s := &searchFn{P: engine.NeighbourParams{K: 3, Device: "cpu"}}
	if err := s.Setup(); err != nil {
		t.Fatal(err)
	}
	if cpu, ok := s.searcher.(knn.CPU); !ok || cpu.QueryBlock != searchQueryBlock {
		t.Fatalf("search backend %#v, want knn.CPU with QueryBlock %d", s.searcher, searchQueryBlock)
	}
	f := newFixture(t, 600, 70)
	parts := f.parts(t, 1)
	tiled := f.search(t, parts, nil)
	small := &searchFn{P: f.nb}
	small.searcher, small.coder = knn.CPU{QueryBlock: 7, Workers: 3}, llc.CPU{}
	multi := 0
	got := map[int64]Block{}
	for k, ps := range parts {
		if err := small.ProcessElement(context.Background(), k, stages.IterOf(slices.Clone(ps)), func(b Block) { got[b.Key] = b }, func(int64) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := small.FinishBundle(context.Background(), func(b Block) { got[b.Key] = b }, func(int64) {}); err != nil {
		t.Fatal(err)
	}
	for k := range parts {
		b := got[k]
		if b.Len() > 7 {
			multi++
		}
		if !bytes.Equal(encodeBlock(b), encodeBlock(tiled[k])) {
			t.Errorf("block %d: searched in tiles of 7, it differs", k)
		}
	}
	if multi == 0 {
		t.Fatal("no block spans two tiles of 7; the case tests nothing")
	}
}

// TestSearchInFlight: the search keeps several blocks of a bundle in flight
// and still emits them, with their progress counts, in the order
// they arrived, each byte for byte the block a search of one block at a time
// gives.
func TestSearchInFlight(t *testing.T) {
	f := newFixture(t, 600, 70)
	parts := f.parts(t, 1)
	keys := slices.Sorted(maps.Keys(parts))
	slices.Reverse(keys) // not the order the blocks would come in by themselves
	run := func(procs int) ([]int64, []int64, map[int64][]byte) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		s := &searchFn{P: f.nb}
		if err := s.Setup(); err != nil {
			t.Fatal(err)
		}
		if got := s.inFlight(); got != procs {
			t.Fatalf("GOMAXPROCS %d: %d searches in flight, want %d", procs, got, procs)
		}
		var order, counts []int64
		blocks := map[int64][]byte{}
		emit := func(b Block) {
			order = append(order, b.Key)
			blocks[b.Key] = encodeBlock(b)
		}
		done := func(n int64) { counts = append(counts, n) }
		for _, k := range keys {
			if err := s.ProcessElement(context.Background(), k, stages.IterOf(slices.Clone(parts[k])), emit, done); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.FinishBundle(context.Background(), emit, done); err != nil {
			t.Fatal(err)
		}
		if len(s.pending) != 0 {
			t.Fatalf("%d searches still pending after FinishBundle", len(s.pending))
		}
		return order, counts, blocks
	}
	order1, counts1, blocks1 := run(1)
	order4, counts4, blocks4 := run(4)
	if len(order1) < 4 {
		t.Fatalf("%d blocks: too few to keep four in flight", len(order1))
	}
	if !slices.Equal(order1, keys) || !slices.Equal(order4, keys) {
		t.Errorf("emitted in the order %v (one in flight) and %v (four), want the arrival order %v", order1, order4, keys)
	}
	if !slices.Equal(counts1, counts4) {
		t.Errorf("progress counts %v with four in flight, %v with one", counts4, counts1)
	}
	for k, b := range blocks1 {
		if !bytes.Equal(blocks4[k], b) {
			t.Errorf("block %d differs with four searches in flight", k)
		}
	}
}
