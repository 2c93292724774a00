package ivfstages

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/engine/roundstest"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// headReference is engine.Run's rounds with the linear head (its
// NewComponent, head.Head.Component) over the searched blocks' graph: the
// items in key order, every one a candidate, the head over their features
// as the blocks keep them, the component one more neighbour slot
// (engine.ExtraSlot), stopping after a round where no item ran. It returns
// the final states by key and each round's head weight.
func headReference(t *testing.T, f *fixture, blocks map[int64]Block, hp head.Params) (map[int64]mixture.State, []float64) {
	t.Helper()
	at, keys, index := blockItems(blocks)
	n, k, d := len(keys), at[keys[0]].b.K, at[keys[0]].b.D
	mp := f.nb.Mixture
	var states, init mixture.States
	states.Reset()
	init.Reset()
	feats := make([]float32, 0, n*d)
	labels, labelOff := []int32{}, []int32{0}
	nbr, weight := make([]int32, 0, n*k), make([]float64, 0, n*k)
	for _, key := range keys {
		it := at[key]
		b := it.b
		feats = append(feats, b.X[it.i*d:(it.i+1)*d]...)
		labels = append(labels, b.Labels[b.LabelOff[it.i]:b.LabelOff[it.i+1]]...)
		labelOff = append(labelOff, int32(len(labels)))
		states.AppendFrom(&b.State, it.i)
		if mp.UsesInit() {
			init.AppendFrom(&b.Init, it.i)
		}
		for j, c := range b.Nbr[it.i*k : (it.i+1)*k] {
			switch {
			case c >= 0:
				nbr = append(nbr, index[b.Keys[c]])
			case c == -1:
				nbr = append(nbr, -1)
			default:
				nbr = append(nbr, index[b.ExtKeys[-2-c]])
			}
			weight = append(weight, b.Weight[it.i*k+j])
		}
	}
	var weights []float64
	h, err := head.New(feats, keys, d, mp.C, hp)
	if err != nil {
		t.Fatal(err)
	}
	h.OnWeight = func(_ int, w float64) { weights = append(weights, w) }
	comp := h.Component(mp.C0, mp.Smooth)
	for r := range f.rounds {
		extra, ew, err := comp(r, &states, k, func(c, j int) (int, float64) { return int(nbr[c*k+j]), weight[c*k+j] })
		if err != nil {
			t.Fatal(err)
		}
		slots := k
		if extra != nil {
			slots++
		}
		own := states
		b := engine.Batch{N: n, K: slots, Own: &own, Init: &init,
			Neighbour: func(i, j int) (*mixture.States, int, float64) {
				if j == k {
					return engine.ExtraSlot(extra, int32(i), ew, weight[i*k:(i+1)*k])
				}
				if c := nbr[i*k+j]; c >= 0 {
					return &own, int(c), weight[i*k+j]
				}
				return nil, 0, 0
			},
			Annotations: func(i int) int { return engine.Annotations(labels[labelOff[i]:labelOff[i+1]]) },
			Key:         func(i int) uint64 { return uint64(keys[i]) },
		}
		var ran int
		states, ran = engine.RunRound(b, r, 2, nil, &mp)
		if ran == 0 {
			break
		}
	}
	out := map[int64]mixture.State{}
	for x, key := range keys {
		var s mixture.State
		states.Get(&s, x)
		out[key] = s
	}
	return out, weights
}

// TestLocalRoundsHead: the local rounds with the linear head give, on the
// blocks' neighbour graph, engine.Run's states with the head bit for bit
// (headReference), at 1 and 3 workers, whatever order the blocks come in,
// with the head's share fitted (switching itself off as it does) and
// fixed, block by block and every block as one batch (a device's
// Rounder); and the head changes the result (it is not silently off).
func TestLocalRoundsHead(t *testing.T) {
	f := newFixture(t, 600, 70)
	f.features, f.rounds = true, 4
	blocks := f.search(t, f.parts(t, 1), nil)
	for _, b := range blocks {
		if b.D != 8 || len(b.X) != b.Len()*b.D {
			t.Fatalf("block %d: %d features of dimension %d for %d items", b.Key, len(b.X), b.D, b.Len())
		}
		if got, err := decodeBlock(encodeBlock(b)); err != nil || !slices.Equal(got.X, b.X) || got.D != b.D {
			t.Fatalf("block %d: the coder loses the features (%v)", b.Key, err)
		}
	}
	run := func(hp *head.Params, workers int, seed uint64, rounder engine.Rounder) map[int64]mixture.State {
		t.Helper()
		var in []Block
		for _, b := range blocks {
			b.X = slices.Clone(b.X) // the rounds drop the blocks' copies
			in = append(in, b)
		}
		rng := rand.New(rand.NewPCG(seed, 9))
		rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		byBatch := map[string][]BatchItems{}
		fn := &localRoundsFn{RoundConf: RoundConf{Rounds: f.rounds, Mixture: f.nb.Mixture, Workers: workers, Head: hp}, rounder: rounder}
		if err := fn.ProcessElement(context.Background(), 0, stages.IterOf(in),
			func(bk string, rs BatchItems) { byBatch[bk] = append(byBatch[bk], rs) }); err != nil {
			t.Fatal(err)
		}
		got := map[int64]mixture.State{}
		for _, in := range f.batches {
			var it stages.Items
			if err := (rebatchFn{}).ProcessElement("", stages.IterOf(byBatch[batchKey(in.Shard, in.Offset)]), func(x stages.Items) { it = x }); err != nil {
				t.Fatal(err)
			}
			for i, key := range it.IDs {
				var s mixture.State
				it.State.Get(&s, i)
				got[key] = s
			}
		}
		return got
	}
	same := func(a, b map[int64]mixture.State) bool {
		if len(a) != len(b) {
			return false
		}
		for key, s := range a {
			if o := b[key]; !slices.Equal(s.Class, o.Class) || !slices.Equal(s.Pi, o.Pi) {
				return false
			}
		}
		return true
	}
	off := run(nil, 1, 1, nil)
	for _, c := range []struct {
		name   string
		weight float64
	}{{"fitted share", 0}, {"fixed share .3", 0.3 / 0.7}} {
		t.Run(c.name, func(t *testing.T) {
			hp := head.Params{Folds: 5, Lambda: 1, Iters: 100, WarmIters: 10, Weight: c.weight, Seed: 1}
			want, weights := headReference(t, f, blocks, hp)
			t.Logf("head weights by round: %v", weights)
			if len(weights) == 0 || weights[0] <= 0 {
				t.Fatalf("reference: head weights %v; the head never runs, the case tests nothing", weights)
			}
			if same(want, off) {
				t.Fatal("reference: the head changes no state; the case tests nothing")
			}
			for _, w := range []int{1, 3} {
				if got := run(&hp, w, uint64(w), nil); !same(got, want) {
					t.Errorf("%d workers: the local rounds' states with the head differ from engine.Run's", w)
				}
			}
			c := &roundstest.Counter{}
			if got := run(&hp, 3, 5, c); !same(got, want) || c.Calls() != int64(f.rounds) {
				t.Errorf("every block as one batch: %d calls (want %d), states engine.Run's: %v", c.Calls(), f.rounds, same(got, want))
			}
		})
	}
}
