package ivfstages

import (
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/engine/roundstest"
	"github.com/relabel/relabel/transforms/mixture"
)

// givenReference is engine.Run's given-label model over the blocks'
// neighbour graph and the reference's final states (referenceRounds): the
// items in key order, as engine.Run holds them, fitted by
// engine.FitGivenBatch; it returns the fit and each item's posterior.
func givenReference(t *testing.T, f *fixture, blocks map[int64]Block, states map[int64]mixture.State) (*mixture.GivenFit, map[int64]mixture.State) {
	t.Helper()
	at, keys, index := blockItems(blocks)
	k := at[keys[0]].b.K
	var own mixture.States
	own.Reset()
	for _, key := range keys {
		s := states[key]
		own.Append(&s)
	}
	b := engine.GivenBatch{N: len(keys), K: k, Own: &own,
		Neighbour: func(i, j int) (*mixture.States, int, float64) {
			it := at[keys[i]]
			switch c := it.b.Nbr[it.i*k+j]; {
			case c >= 0:
				return &own, int(index[it.b.Keys[c]]), it.b.Weight[it.i*k+j]
			case c != -1:
				return &own, int(index[it.b.ExtKeys[-2-c]]), it.b.Weight[it.i*k+j]
			}
			return nil, 0, 0
		},
		Key: func(i int) int64 { return keys[i] },
		Given: func(i int) int32 {
			it := at[keys[i]]
			return schemas.GivenLabel(it.b.Labels[it.b.LabelOff[it.i]:it.b.LabelOff[it.i+1]])
		},
	}
	mp := f.nb.Mixture
	fit, err := engine.FitGivenBatch(b, mp.C, mp.Seed, 2)
	if err != nil {
		t.Fatal(err)
	}
	post := engine.GivenStates(b, fit, mp.C0, 2)
	want := map[int64]mixture.State{}
	for x, key := range keys {
		var s mixture.State
		post.Get(&s, x)
		want[key] = s
	}
	return fit, want
}

// sortedBlocks returns the blocks in key order with their items' states
// from states and where their external neighbours are (locate).
func sortedBlocks(t *testing.T, blocks map[int64]Block, states map[int64]mixture.State) ([]Block, [][]extLoc, []mixture.States) {
	t.Helper()
	var bs []Block
	for _, key := range slices.Sorted(maps.Keys(blocks)) {
		bs = append(bs, blocks[key])
	}
	cur := make([]mixture.States, len(bs))
	for x := range bs {
		cur[x].Reset()
		for _, key := range bs[x].Keys {
			s := states[key]
			cur[x].Append(&s)
		}
	}
	ext, err := locate(bs, 2)
	if err != nil {
		t.Fatal(err)
	}
	return bs, ext, cur
}

// TestGivenLocal: the local rounds' given-label model (givenLocal) fits
// engine.Run's model on the same neighbour graph and final states (the
// same temperature, the transition bit for bit) and gives every item
// engine.GivenStates' posterior bit for bit, at 1 and 3 workers; run
// inside the local rounds (localRoundsFn), the posteriors reach the input
// batches in place of the final states.
func TestGivenLocal(t *testing.T) {
	f := newFixture(t, 500, 64)
	blocks := f.search(t, f.parts(t, 2), nil)
	_, states, _, _ := referenceRounds(f, blocks, 0)
	wantFit, want := givenReference(t, f, blocks, states)
	mp := f.nb.Mixture
	changed := 0
	for key, s := range want {
		if fs := states[key]; s.Class[0] != fs.Class[0] {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("fixture: the model keeps every final state's top class; the comparison cannot tell it from no model")
	}
	for _, workers := range []int{1, 3} {
		bs, ext, cur := sortedBlocks(t, blocks, states)
		fit, err := givenLocal(len(bs), blockAt(bs), ext, cur, mp.C, mp.C0, mp.Seed, 0, workers)
		if err != nil {
			t.Fatal(err)
		}
		if fit.T != wantFit.T || !slices.Equal(fit.A, wantFit.A) || fit.Items != wantFit.Items || fit.LogLik != wantFit.LogLik {
			t.Fatalf("%d workers: fit T %g over %d items, engine's T %g over %d (or A differs)", workers, fit.T, fit.Items, wantFit.T, wantFit.Items)
		}
		for x := range bs {
			for i, key := range bs[x].Keys {
				var got mixture.State
				cur[x].Get(&got, i)
				if w := want[key]; !slices.Equal(got.Class, w.Class) || !slices.Equal(got.Pi, w.Pi) {
					t.Fatalf("%d workers: item %d: posterior %v %v, engine's %v %v", workers, key, got.Class, got.Pi, w.Class, w.Pi)
				}
			}
		}
	}
	t.Logf("fixture: T %g, %d of %d items' top class changed by the model", wantFit.T, changed, len(want))

	// With a cap below half the items, the blocks offer only those below
	// the sampling threshold: the fit is the one over every item's offer.
	const capN = 60
	bs, ext, cur := sortedBlocks(t, blocks, states)
	g := givenGatherFn{Seed: mp.Seed, Cap: capN}
	acc := g.CreateAccumulator()
	for x := range bs {
		gb := bs[x].givenBatch(&cur[x], func(e int) (*mixture.States, int) {
			l := ext[x][e]
			return &cur[l.block], int(l.item)
		})
		acc = g.AddInput(acc, blockSample(gb, wantFit.T, mp.Seed, capN, math.MaxUint64))
	}
	all, err := fitGiven(g.ExtractOutput(acc), mp.C, 2)
	if err != nil {
		t.Fatal(err)
	}
	if sampleThreshold(int64(len(want)), capN) == math.MaxUint64 {
		t.Fatal("fixture: no sampling threshold at this cap; the case tests nothing")
	}
	small, err := givenLocal(len(bs), blockAt(bs), ext, cur, mp.C, mp.C0, mp.Seed, capN, 2)
	if err != nil {
		t.Fatal(err)
	}
	if small.T != all.T || !slices.Equal(small.A, all.A) || small.Items != all.Items || small.Items != capN {
		t.Errorf("cap %d: the fit over the items offered below the threshold (T %g, %d items) differs from the one over every item's offer (T %g, %d items)", capN, small.T, small.Items, all.T, all.Items)
	}

	var in []Block
	for _, key := range slices.Sorted(maps.Keys(blocks)) {
		in = append(in, blocks[key])
	}
	rng := rand.New(rand.NewPCG(7, 8))
	rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	// Block by block (the CPU), every block as one batch (a device's
	// Rounder, here one that counts), and streamed from spill files.
	for _, c := range []struct {
		rounder  engine.Rounder
		streamed bool
	}{{nil, false}, {&roundstest.Counter{}, false}, {nil, true}} {
		byBatch := map[string][]BatchItems{}
		fn := &localRoundsFn{RoundConf: RoundConf{Rounds: f.rounds, Mixture: mp, Workers: 3, Given: true}, rounder: c.rounder}
		blocks := slices.Clone(in)
		if c.streamed {
			fn.Streamed, fn.Spill = true, Spill{Dir: t.TempDir()}
			for x := range blocks {
				if err := fn.Spill.put(genSearched, &blocks[x], nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := fn.ProcessElement(context.Background(), 0, stages.IterOf(blocks),
			func(bk string, rs BatchItems) { byBatch[bk] = append(byBatch[bk], rs) }); err != nil {
			t.Fatal(err)
		}
		checkBatches(t, f, byBatch, want, rng)
	}
}

// TestGivenGather: the fit's sample gathered from the blocks' shares
// (blockSample, givenGatherFn) is the one a single batch of every item in
// key order gives (the cap's first by engine.PooledBefore over all keys,
// unlabelled items taking their places and then left out), whatever the
// split and order of the combine, with a cap small enough that each
// block's share and the merges are trimmed.
func TestGivenGather(t *testing.T) {
	f := newFixture(t, 500, 64)
	blocks := f.search(t, f.parts(t, 1), nil)
	_, states, _, _ := referenceRounds(f, blocks, 0)
	bs, ext, cur := sortedBlocks(t, blocks, states)
	const capN, temp = 60, 0.3
	seed := f.nb.Mixture.Seed
	unlabelled := func(key int64) bool { return key%7 == 0 }
	var shares, offered []GivenSample
	var all []extLoc
	gb := make([]engine.GivenBatch, len(bs))
	for x := range bs {
		gb[x] = bs[x].givenBatch(&cur[x], func(e int) (*mixture.States, int) {
			l := ext[x][e]
			return &cur[l.block], int(l.item)
		})
		given := gb[x].Given
		gb[x].Given = func(i int) int32 {
			if unlabelled(bs[x].Keys[i]) {
				return -1
			}
			return given(i)
		}
		shares = append(shares, blockSample(gb[x], temp, seed, capN, math.MaxUint64))
		for i := range bs[x].Keys {
			all = append(all, extLoc{int32(x), int32(i)})
		}
	}
	slices.SortFunc(all, func(u, v extLoc) int { return int(bs[u.block].Keys[u.item] - bs[v.block].Keys[v.item]) })
	whole := engine.GivenBatch{N: len(all), K: bs[0].K,
		Neighbour: func(i, j int) (*mixture.States, int, float64) { return gb[all[i].block].Neighbour(int(all[i].item), j) },
		Key:       func(i int) int64 { return bs[all[i].block].Keys[all[i].item] },
		Given:     func(i int) int32 { return gb[all[i].block].Given(int(all[i].item)) },
	}
	want := blockSample(whole, temp, seed, capN, math.MaxUint64)
	// Offered only below the sampling threshold, the blocks' shares hold
	// fewer items and gather to the same sample.
	below := sampleThreshold(int64(len(all)), capN)
	nOffered, nShared := 0, 0
	for x := range bs {
		offered = append(offered, blockSample(gb[x], temp, seed, capN, below))
		nOffered += len(offered[x].Keys)
		nShared += len(shares[x].Keys)
	}
	if nOffered >= nShared || nOffered < capN {
		t.Fatalf("%d items offered below the threshold, %d without: want fewer, and at least the cap %d", nOffered, nShared, capN)
	}
	if len(want.Keys) != capN {
		t.Fatalf("%d items sampled of %d, want the cap %d", len(want.Keys), len(all), capN)
	}
	skipped := 0
	for _, g := range want.Given {
		if g < 0 {
			skipped++
		}
	}
	if skipped == 0 {
		t.Fatal("no unlabelled item in the sample; the case tests nothing")
	}
	g := givenGatherFn{Seed: seed, Cap: capN}
	gather := func(shares []GivenSample, order []int, split int) GivenSample {
		a, b := g.CreateAccumulator(), g.CreateAccumulator()
		for n, x := range order {
			if n < split {
				a = g.AddInput(a, shares[x])
			} else {
				b = g.AddInput(b, shares[x])
			}
		}
		return g.ExtractOutput(g.MergeAccumulators(b, a))
	}
	order := make([]int, len(shares))
	for x := range order {
		order[x] = x
	}
	rev := slices.Clone(order)
	slices.Reverse(rev)
	for name, got := range map[string]GivenSample{
		"in order":               gather(shares, order, len(order)/3),
		"reversed":               gather(shares, rev, 2*len(rev)/3),
		"one at a time":          gather(shares, order, len(order)),
		"offered, in order":      gather(offered, order, len(order)/3),
		"offered, one at a time": gather(offered, order, len(order)),
	} {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: gathered %d items (keys %v...), one batch of all %d (keys %v...)", name, len(got.Keys), got.Keys[:min(5, len(got.Keys))], len(want.Keys), want.Keys[:5])
		}
	}
	// A sample short of the cap (too few below the threshold) is refused.
	short := want.pick([]int{0, 1, 2})
	ff := &givenFitFn{C: f.nb.Mixture.C, Rows: int64(len(all)), Cap: capN}
	if err := ff.ProcessElement(context.Background(), short, func(GivenModel) {}); err == nil {
		t.Error("a sample of 3 items where the cap takes 60: no error")
	}
	if err := ff.ProcessElement(context.Background(), want, func(GivenModel) {}); err != nil {
		t.Errorf("the full sample: %v", err)
	}
	// The fit reads the labelled ones only, in key order.
	fit, err := fitGiven(want, f.nb.Mixture.C, 1)
	if err != nil {
		t.Fatal(err)
	}
	if fit.Items != capN-skipped || fit.T != temp {
		t.Errorf("fit over %d items at T %g, want %d at %g", fit.Items, fit.T, capN-skipped, temp)
	}
}

// TestGivenJoin: on the embedded runner, the joined rounds' given-label
// stages (one more exchange of the final states, the scores combined, the
// sample gathered, the fit joined to every block) write the local rounds'
// posteriors, coder-equal (every float bit for bit): in one join a round
// and in waves, and with blocks and states spilled to files.
func TestGivenJoin(t *testing.T) {
	f := newFixture(t, 500, 64)
	blocks := f.search(t, f.parts(t, 1), nil)
	var list []Block
	for _, key := range slices.Sorted(maps.Keys(blocks)) {
		list = append(list, blocks[key])
	}
	mp := f.nb.Mixture
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, list)
	local := JoinRounds(s.Scope("local"), in, JoinRoundsParams{Rounds: f.rounds, Workers: 2, Mixture: mp, Local: true, Given: true})
	for _, c := range []struct {
		name  string
		waves int
		spill bool
	}{{"one wave", 1, false}, {"three waves", 3, false}, {"spilled", 1, true}} {
		src := in
		var sp Spill
		if c.spill {
			sp.Dir = t.TempDir()
			var spilled []Block
			for _, b := range list { // as the search emits them
				if err := sp.put(genSearched, &b, nil); err != nil {
					t.Fatal(err)
				}
				spilled = append(spilled, b)
			}
			src = beam.CreateList(s.Scope(c.name), spilled)
		}
		joined := JoinRounds(s.Scope(c.name), src, JoinRoundsParams{Rounds: f.rounds, Workers: 2, Mixture: mp, Waves: c.waves, Spill: sp, Given: true})
		passert.Equals(s.Scope(c.name), stages.Unspilled(s.Scope(c.name), joined), local)
	}
	ptest.RunAndValidate(t, p)
}

// TestGivenCoders: the model's element types survive their coders
// exactly, a GivenBlock inline and spilled (a reference of a few dozen
// bytes that unspills to the same block).
func TestGivenCoders(t *testing.T) {
	f := newFixture(t, 300, 64)
	blocks := f.search(t, f.parts(t, 1), nil)
	var b Block
	for _, key := range slices.Sorted(maps.Keys(blocks)) {
		if b = blocks[key]; len(b.ExtKeys) > 0 {
			break
		}
	}
	g := GivenBlock{Block: b}
	g.Ext.Reset()
	for range b.ExtKeys {
		appendPosterior(&g.Ext, &b.State, 0)
	}
	if got, err := decodeGivenBlock(encodeGivenBlock(g)); err != nil || !reflect.DeepEqual(got, g) {
		t.Errorf("GivenBlock: coder round trip differs (err %v)", err)
	}
	sp := Spill{Dir: t.TempDir()}
	refs, err := sp.write(0, "g", encodeGivenBlock(g))
	if err != nil {
		t.Fatal(err)
	}
	ref := GivenBlock{Block: Block{Key: b.Key}, Spilled: refs[0]}
	enc := encodeGivenBlock(ref)
	got, err := decodeGivenBlock(enc)
	if err != nil || len(enc) > 128 || !reflect.DeepEqual(got, ref) {
		t.Fatalf("spilled GivenBlock: %d bytes, err %v", len(enc), err)
	}
	if err := got.unspill(); err != nil || !reflect.DeepEqual(got, g) {
		t.Errorf("spilled GivenBlock: unspilled differs (err %v)", err)
	}
	s := GivenSample{T: 0.25, Keys: []int64{3, 9}, Given: []int32{1, -1}, Off: []int32{0, 2, 2}, Class: []int32{0, 1}, P: []float64{0.25, 0.75}}
	if got, err := decodeGivenSample(encodeGivenSample(s)); err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("GivenSample: coder round trip differs (err %v)", err)
	}
	sc := GivenScore{Keys: []int64{4}, Score: []float64{-1.5, -2.25}}
	if got, err := decodeGivenScore(encodeGivenScore(sc)); err != nil || !reflect.DeepEqual(got, sc) {
		t.Errorf("GivenScore: coder round trip differs (err %v)", err)
	}
	m := GivenModel{C: 2, T: 0.3, Power: 5, A: []float64{0.9, 0.1, 0.2, 0.8}, LogLik: -3.5, Items: 7}
	if got, err := decodeGivenModel(encodeGivenModel(m)); err != nil || !reflect.DeepEqual(got, m) {
		t.Errorf("GivenModel: coder round trip differs (err %v)", err)
	}
}
