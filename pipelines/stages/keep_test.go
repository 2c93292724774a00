package stages

import (
	"context"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// TestRoundsKeep: rounds with the head and the pooled start, told to keep
// what they fitted (RoundsParams.Keep, KeepPooled), keep exactly engine.Run's
// head after its last round and its pooled fit, which keptio.ReadFitDir reads back,
// and the kept bytes survive their encoding (keptio.Fit.AppendBinary); a run that
// keeps nothing leaves keptio.ReadFitDir nothing.
func TestRoundsKeep(t *testing.T) {
	const n, c, d, k, batch, rounds = 400, 4, 5, 10, 128, 4
	sym := func(y int32, rng *rand.Rand) int32 {
		if rng.Float64() < 0.4 {
			return (y + 1) % c // pair flips: the pooled fit is structured
		}
		return y
	}
	np := pooledTestParams(c, k)
	np.Mixture.PooledGate, np.Mixture.ActiveTol = 0, 0 // the start always taken; every item runs every round
	hp := head.Params{Folds: 5, Lambda: 1, Iters: 100, WarmIters: 10, Seed: 7, Weight: 0.25}
	rows, data, _ := noisyBlobs(n, c, d, batch, 1.2, 5, sym)

	var last *head.Head
	var pooled *mixture.Pooled
	if _, err := engine.Run(data, engine.Options{K: k, Metric: np.Metric, Standardise: np.Standardise, Weighting: np.Weighting,
		LLC: np.LLC, Rounds: rounds, Mixture: np.Mixture, Workers: 2,
		OnPooled: func(m *mixture.Pooled) { pooled = m },
		NewComponent: func(x []float32, keys []int64, dim int) (engine.Component, error) {
			h, err := head.New(x, keys, dim, c, hp)
			last = h
			return h.Component(np.Mixture.C0, np.Mixture.Smooth), err
		}}, engine.Backends{}); err != nil {
		t.Fatal(err)
	}

	dir, none := t.TempDir(), t.TempDir()
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, rows)
	stats := ComputeStats(s, in, StatsParams{Seed: np.Mixture.Seed, IDColumn: "id"})
	items := Neighbours(s, in, stats, np)
	h := hp
	_, fit := RoundsPooled(s, items, RoundsParams{Rounds: rounds, Workers: 2, Mixture: np.Mixture, Head: &h, Features: CandidateFeatures(s, in, stats), Keep: dir})
	KeepPooled(s, fit, dir)
	ptest.RunAndValidate(t, p)

	ctx := context.Background()
	got, err := keptio.ReadFitDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Head == nil || !reflect.DeepEqual(got.Head, last.Fit()) {
		t.Errorf("the kept head differs from engine.Run's after its last round")
	}
	if tr := got.Transition(); tr == nil || pooled == nil || tr.C != pooled.C || !reflect.DeepEqual(tr.T, pooled.T) || !reflect.DeepEqual(tr.TOwn, pooled.TOwn) || !reflect.DeepEqual(tr.Prior, pooled.Prior) {
		t.Errorf("the kept pooled fit %+v, engine.Run's %+v", tr, pooled)
	}
	b, _ := got.AppendBinary(nil)
	var back keptio.Fit
	if err := back.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(&back, got) {
		t.Errorf("the kept fits read back otherwise (%v)", err)
	}
	keptio.RemoveFitDir(ctx, dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("RemoveFitDir left %s (%v)", dir, err)
	}
	if k, err := keptio.ReadFitDir(ctx, none); err != nil || k.Head != nil || k.Pooled != nil {
		t.Errorf("nothing kept: %+v, %v; want nothing", k, err)
	}
}
