package ivfstages

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// ownItem is an item of a searched block: the block and its index there.
type ownItem struct {
	b *Block
	i int
}

// blockItems maps every own item of the blocks to its block (at), and
// returns their keys ascending (every item a candidate, in engine.Run's
// order) and each key's index in that order: what the references to
// engine.Run's view of the blocks (pooledReference, headReference) start
// from.
func blockItems(blocks map[int64]Block) (map[int64]ownItem, []int64, map[int64]int32) {
	at := map[int64]ownItem{}
	for _, key := range slices.Sorted(maps.Keys(blocks)) {
		b := blocks[key]
		for i, k := range b.Keys {
			at[k] = ownItem{&b, i}
		}
	}
	keys := slices.Sorted(maps.Keys(at))
	index := make(map[int64]int32, len(keys))
	for x, k := range keys {
		index[k] = int32(x)
	}
	return at, keys, index
}

// pooledReference is the in-process engine's view of searched blocks: the
// items in key order (engine.Data, labels only) and their neighbourhoods
// as the blocks found them (item indices; every item is a candidate).
func pooledReference(t *testing.T, blocks map[int64]Block) (*engine.Data, *engine.Neighbourhoods, []int) {
	t.Helper()
	at, keys, index := blockItems(blocks)
	k := at[keys[0]].b.K
	d := &engine.Data{Keys: keys, LabelOff: []int32{0}}
	nb := &engine.Neighbourhoods{K: k, Index: make([]int32, 0, len(keys)*k)}
	ext := 0
	for _, key := range keys {
		it := at[key]
		b := it.b
		d.Labels = append(d.Labels, b.Labels[b.LabelOff[it.i]:b.LabelOff[it.i+1]]...)
		d.LabelOff = append(d.LabelOff, int32(len(d.Labels)))
		for _, c := range b.Nbr[it.i*k : (it.i+1)*k] {
			switch {
			case c >= 0:
				nb.Index = append(nb.Index, index[b.Keys[c]])
			case c == -1:
				nb.Index = append(nb.Index, -1)
			default:
				nb.Index = append(nb.Index, index[b.ExtKeys[-2-c]])
				ext++
			}
		}
	}
	if ext == 0 {
		t.Fatal("fixture: no external neighbour, the exchange of labels is not exercised")
	}
	cands := make([]int, len(keys))
	for x := range cands {
		cands[x] = x
	}
	return d, nb, cands
}

// TestPooledStart: the pooled start in ivf mode fits, from the blocks'
// neighbour graph (several blocks, external neighbours whose labels came
// with their stored copies), the model the in-process engine fits on the
// same graph (engine.PooledInputsOf, engine.FitPooledStart) bit for bit,
// and starts every item as the engine does (engine.PooledStarter over the
// engine's own label lookups); spilled blocks start the same; with the
// gate shut the blocks pass untouched; and the gather does not depend on
// how the runner splits and merges it.
func TestPooledStart(t *testing.T) {
	f := newFixture(t, 600, 70)
	mp := f.nb.Mixture
	if mp.PooledIters <= 0 {
		t.Fatal("fixture: pooled start off")
	}
	mp.PooledGate = 0 // always open: the start is exercised
	f.nb.Mixture = mp
	blocks := f.search(t, f.parts(t, 1), nil)
	d, nb, cands := pooledReference(t, blocks)
	in := engine.PooledInputsOf(d, nb, cands, mp.Seed)
	m, open, err := engine.FitPooledStart(&in, &mp)
	if err != nil || m == nil || !open {
		t.Fatalf("engine fit: %v, model %v, open %v", err, m != nil, open)
	}
	want := stages.PooledModel{Open: true, Fitted: in.Len(), Structure: m.Structure(), C: m.C, T: m.T, TOwn: m.TOwn, Prior: m.Prior}
	if len(want.TOwn) == 0 {
		t.Fatal("engine fit: no own-label transition (PooledSplit off?)")
	}

	// The expected starts, from the engine's graph and labels.
	index := map[int64]int{}
	for x, k := range d.Keys {
		index[k] = x
	}
	starter := engine.NewPooledStarter(m, &mp)
	var st mixture.State
	wantBlocks := map[int64]Block{}
	for key, b := range blocks {
		w := b
		w.State, w.Init = mixture.States{}, mixture.States{}
		w.State.Reset()
		if mp.UsesInit() {
			w.Init.Reset()
		}
		for _, k := range b.Keys {
			x := index[k]
			starter.Start(&st, d.Labels[d.LabelOff[x]:d.LabelOff[x+1]], nb.K, func(j int) ([]int32, bool) {
				c := nb.Index[x*nb.K+j]
				if c < 0 {
					return nil, false
				}
				return d.Labels[d.LabelOff[c]:d.LabelOff[c+1]], true
			})
			w.State.Append(&st)
			if mp.UsesInit() {
				w.Init.Append(&st)
			}
		}
		w.ExtLabels, w.ExtLabelOff = nil, nil
		wantBlocks[key] = w
	}

	// The gather, split and merged two ways.
	keys := slices.Sorted(maps.Keys(blocks))
	gatherOf := func(gf pooledGatherFn, order []int64, split int) (stages.PooledGather, error) {
		a, b := gf.CreateAccumulator(), gf.CreateAccumulator()
		for x, k := range order {
			var err error
			if x < split {
				a, err = gf.AddInput(a, blocks[k])
			} else {
				b, err = gf.AddInput(b, blocks[k])
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return gf.ExtractOutput(gf.MergeAccumulators(b, a))
	}
	gather := func(order []int64, split int) stages.PooledGather {
		g, err := gatherOf(pooledGatherFn{Seed: mp.Seed}, order, split)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	// Told the run has ten million rows, the blocks offer only the items
	// below the sampling threshold (a few of these hundreds), and the
	// gather refuses a sample short of what the cap takes.
	big := pooledGatherFn{Seed: mp.Seed, Rows: 10_000_000}
	acc, err := big.AddInput(big.CreateAccumulator(), blocks[keys[0]])
	if err != nil {
		t.Fatal(err)
	}
	if all, _ := (pooledGatherFn{Seed: mp.Seed}).AddInput(big.CreateAccumulator(), blocks[keys[0]]); len(acc.Keys) >= len(all.Keys) {
		t.Errorf("below the threshold a block offered %d of its %d items", len(acc.Keys), len(all.Keys))
	}
	if _, err := gatherOf(big, keys, len(keys)/2); err == nil {
		t.Error("a sample far short of the cap gathered without an error")
	}
	rev := slices.Clone(keys)
	slices.Reverse(rev)
	if g1, g2 := gather(keys, len(keys)/3), gather(rev, 2*len(keys)/3); !reflect.DeepEqual(g1, g2) {
		t.Error("gather: other splits and orders gathered other inputs")
	} else if !slices.Equal(g1.Keys, in.Keys) || !slices.Equal(g1.Labels, in.Labels) {
		t.Error("gather: items or their labels differ from engine.PooledInputsOf's")
	}

	// The stage on the embedded runner: the fitted model (the coder's
	// bytes, so every float bit for bit) and the started blocks.
	p, s := beam.NewPipelineWithRoot()
	var list []Block
	for _, k := range keys {
		list = append(list, blocks[k])
	}
	out, fit := PooledStart(s, beam.CreateList(s, list), mp, Spill{}, int64(len(in.Keys)))
	passert.Equals(s, fit, want)
	var wantList []any
	for _, k := range keys {
		wantList = append(wantList, wantBlocks[k])
	}
	passert.Equals(s, out, wantList...)
	ptest.RunAndValidate(t, p)

	// The start DoFn on spilled blocks gives the same blocks, spilled.
	sp := Spill{Dir: t.TempDir()}
	sf := &pooledStartFn{Mixture: mp, Spill: sp}
	pm := want
	for _, k := range keys[:3] {
		b := blocks[k]
		if err := sp.put(genSearched, &b, nil); err != nil {
			t.Fatal(err)
		}
		var got Block
		if err := sf.ProcessElement(k, stages.IterOf([]Block{b}), stages.IterOf([]stages.PooledModel{pm}), func(x Block) { got = x }); err != nil {
			t.Fatal(err)
		}
		if got.Spilled.Path == "" {
			t.Fatalf("block %d: started block not spilled", k)
		}
		if err := got.unspill(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, wantBlocks[k]) {
			t.Errorf("block %d: spilled start differs", k)
		}
	}

	// Gate shut: the block passes as it came.
	shut := pm
	shut.Open = false
	for _, k := range keys[:2] {
		var got Block
		if err := sf.ProcessElement(k, stages.IterOf([]Block{blocks[k]}), stages.IterOf([]stages.PooledModel{shut}), func(x Block) { got = x }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, blocks[k]) {
			t.Errorf("block %d: gate shut, but the block changed", k)
		}
	}

	// A block searched with the pooled start off has no neighbours'
	// labels: gathering it is an error, not a fit on missing labels.
	b := blocks[keys[0]]
	b.ExtLabels, b.ExtLabelOff = nil, nil
	if len(b.ExtKeys) > 0 {
		if _, err := (pooledGatherFn{Seed: mp.Seed}).AddInput(stages.PooledGather{}, b); err == nil {
			t.Error("block without its external neighbours' labels gathered")
		}
	}
}
