package engine_test

import (
	"context"
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
