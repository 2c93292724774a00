package engine_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// digits loads the committed example (testdata/digits: 1797 rows, idn-0.4
// noise) and its truth.
func digits(t testing.TB) (*engine.Data, []int32) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "digits")
	ctx := context.Background()
	ro := shardio.ReadOptions{Classes: 10}
	shards, err := shardio.Scan(ctx, filepath.Join(dir, "noisy-idn-0.4-part-*.parquet"), ro)
	if err != nil {
		t.Fatal(err)
	}
	d := &engine.Data{LabelOff: []int32{0}}
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := shardio.ReadUnit(ctx, u, ro)
			if err != nil {
				t.Fatal(err)
			}
			d.D = r.D
			d.Keys = append(d.Keys, r.IDs...)
			d.Features = append(d.Features, r.Features...)
			for i := 0; i < r.Len(); i++ {
				d.Labels = append(d.Labels, r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]...)
				d.LabelOff = append(d.LabelOff, int32(len(d.Labels)))
			}
		}
	}
	truth, err := resultio.ReadI32(ctx, filepath.Join(dir, "truth.i32"))
	if err != nil {
		t.Fatal(err)
	}
	return d, truth
}

func accuracy(res *engine.Result, truth []int32) float64 {
	ok := 0
	for i := range truth {
		if c, _ := res.States.Top(i); c == truth[i] {
			ok++
		}
	}
	return float64(ok) / float64(len(truth))
}

// options are the defaults with the paper's weighting and annotation weight,
// fewer samples (L) and seed 1.
func options() engine.Options {
	m := mixture.DefaultParams(10)
	m.L, m.AnnotationWeight, m.Seed = 100, 0, 1
	return engine.Options{K: 10, Metric: knn.L2, Standardise: true, Weighting: engine.LLC, LLC: llc.DefaultParams(),
		Rounds: 10, Workers: runtime.GOMAXPROCS(0), Mixture: m}
}

// TestRelabelDigits: the engine cleans the example well above its noisy
// accuracy (.601), and its output depends only on the seed, not on workers.
func TestRelabelDigits(t *testing.T) {
	d, truth := digits(t)
	o := options()
	res, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if acc := accuracy(res, truth); acc < 0.92 {
		t.Errorf("cleaned accuracy %.4f, want >= 0.92 (noisy .601)", acc)
	}
	o.Workers = 1
	res1, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if !equalStates(&res.States, &res1.States) {
		t.Error("1 worker and GOMAXPROCS workers gave different states")
	}
	o.Mixture.Seed = 2
	res2, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if equalStates(&res.States, &res2.States) {
		t.Error("a different seed gave identical states")
	}
}

// TestCandidates: a bounded candidate set is a pure function of (seed, keys).
func TestCandidates(t *testing.T) {
	keys := []int64{50, 3, 7, 19, 4, 100, 8, 1}
	a := engine.SelectCandidates(keys, 3, 9)
	rev := make([]int64, len(keys))
	for i, k := range keys {
		rev[len(keys)-1-i] = k
	}
	b := engine.SelectCandidates(rev, 3, 9)
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("got %d and %d candidates, want 3", len(a), len(b))
	}
	for i := range a {
		if keys[a[i]] != rev[b[len(b)-1-i]] {
			t.Errorf("candidate keys depend on input order: %v vs %v", a, b)
		}
	}
	if all := engine.SelectCandidates(keys, 0, 9); len(all) != len(keys) {
		t.Errorf("limit 0: %d candidates, want all %d", len(all), len(keys))
	}
}

func equalStates(a, b *mixture.States) bool {
	if a.Len() != b.Len() || len(a.Pi) != len(b.Pi) {
		return false
	}
	for i := range a.Pi {
		if a.Pi[i] != b.Pi[i] || a.Class[i] != b.Class[i] {
			return false
		}
	}
	return true
}

// TestActiveTol: with a tolerance, settled items skip their rounds the same
// way on any worker count, the run stops when nothing moves, and 0 runs
// every item every round (the paper's method) without tracking anything.
func TestActiveTol(t *testing.T) {
	d, _ := digits(t)
	o := options()
	o.Rounds = 4
	n := int64(d.Len())
	full, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if full.ItemRounds != 4*n || full.States.Moved != nil {
		t.Errorf("tolerance 0: %d item-rounds, Moved tracked = %v; want %d, false", full.ItemRounds, full.States.Moved != nil, 4*n)
	}
	// Moves are about 0.05-0.25 a round over these rounds (sampling noise
	// and labels spreading): 0.15 skips some items, not all.
	o.Mixture.ActiveTol = 0.15
	o.Workers = 1
	a, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if a.ItemRounds <= n || a.ItemRounds >= 4*n {
		t.Errorf("tolerance 0.15: %d item-rounds, want some skipped after the first round's %d", a.ItemRounds, n)
	}
	if len(a.States.Moved) != d.Len() {
		t.Errorf("tolerance 0.15: %d Moved for %d items", len(a.States.Moved), d.Len())
	}
	o.Workers = 3
	b, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if !equalStates(&a.States, &b.States) || a.ItemRounds != b.ItemRounds {
		t.Errorf("1 and 3 workers differ with skipping: %d and %d item-rounds", a.ItemRounds, b.ItemRounds)
	}
	// Nothing moves more than 1 (a distance is at most 1): one round, then stop.
	o.Mixture.ActiveTol = 1
	one, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	o.Rounds, o.Mixture.ActiveTol = 1, 0
	ref, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if one.ItemRounds != n {
		t.Errorf("tolerance 1: %d item-rounds, want %d (the first round only)", one.ItemRounds, n)
	}
	one.States.Moved = nil
	if !equalStates(&one.States, &ref.States) {
		t.Error("tolerance 1 over 4 rounds differs from 1 round")
	}
}

// blobs is n items of c well separated Gaussian classes in d dimensions
// (item i's class is i mod c), with labels flipped by flip (given the true
// class and a uniform draw); it returns the data and the truth.
func blobs(n, c, d int, seed uint64, flip func(y int32, u float64, rng *rand.Rand) int32) (*engine.Data, []int32) {
	rng := rand.New(rand.NewPCG(seed, 3))
	centres := make([]float64, c*d)
	for x := range centres {
		centres[x] = 4 * rng.NormFloat64()
	}
	data := &engine.Data{D: d, LabelOff: []int32{0}}
	truth := make([]int32, n)
	for i := range n {
		y := int32(i % c)
		truth[i] = y
		data.Keys = append(data.Keys, int64(i))
		for k := range d {
			data.Features = append(data.Features, float32(centres[int(y)*d+k]+rng.NormFloat64()))
		}
		data.Labels = append(data.Labels, flip(y, rng.Float64(), rng))
		data.LabelOff = append(data.LabelOff, int32(i+1))
	}
	return data, truth
}

// TestPooledGate: at 45% pair-flip noise the K = 10 rounds alone follow
// the labels' majority, which is barely right; the split pooled start
// (gated on the fitted noise being structured) recovers nearly every
// class. At symmetric noise the gate turns the pooled start down, and the
// result is the paper's start's (PooledIters 0) bit for bit. The pooled
// start is the default (mixture.DefaultParams).
func TestPooledGate(t *testing.T) {
	const n, c, d = 1500, 5, 6
	pair := func(y int32, u float64, _ *rand.Rand) int32 {
		if u < 0.45 {
			return (y + 1) % c
		}
		return y
	}
	sym := func(y int32, u float64, rng *rand.Rand) int32 {
		if u < 0.4 {
			return (y + 1 + int32(rng.IntN(c-1))) % c
		}
		return y
	}
	pooled := func(o engine.Options, structure *float64) engine.Options {
		o.OnPooled = func(m *mixture.Pooled) { *structure = m.Structure() }
		return o
	}
	o := options()
	o.Mixture = mixture.DefaultParams(c)
	o.Mixture.L, o.Mixture.AnnotationWeight, o.Mixture.Seed = 100, 0, 1
	paper := o
	paper.Mixture.PooledIters = 0

	data, truth := blobs(n, c, d, 5, pair)
	base, err := engine.Run(data, paper, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	var s float64
	got, err := engine.Run(data, pooled(o, &s), engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	accBase, acc := accuracy(base, truth), accuracy(got, truth)
	t.Logf("pair-0.45: paper's start %.4f, gated pooled (the default) %.4f (structure %.3f)", accBase, acc, s)
	if s < 0.5 {
		t.Errorf("pair-0.45 structure %.3f, want >= .5 (the gate must open)", s)
	}
	if acc < 0.95 || acc < accBase+0.15 {
		t.Errorf("gated pooled accuracy %.4f (paper's start %.4f), want >= .95 and 15 points above", acc, accBase)
	}

	data, _ = blobs(n, c, d, 5, sym)
	base, err = engine.Run(data, paper, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	got, err = engine.Run(data, pooled(o, &s), engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if s >= 0.5 {
		t.Errorf("sym-0.4 structure %.3f, want < .5 (the gate must stay shut)", s)
	}
	for i := range n {
		c0, p0 := base.States.Top(i)
		c1, p1 := got.States.Top(i)
		if c0 != c1 || p0 != p1 {
			t.Fatalf("sym-0.4, gate shut: item %d top (%d, %g), paper's start (%d, %g)", i, c1, p1, c0, p0)
		}
	}
}
