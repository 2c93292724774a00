package stages

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
)

// TestHeadPipeline: relabel run's rounds with the linear head (exact mode,
// and sample mode where only candidates get the head's component) give the
// states engine.Run gives with head.Factory, bit for bit, at 1 and at 3
// workers, also where the input is not in key order. The blobs overlap (spread 1.2), so the fitted share stays above
// head.OffShare for some rounds, and a fixed share keeps the head on in
// every round; the fitted head switching off (head.OffShare) is covered
// too, on well separated blobs of which each class has two, where a linear
// model cannot compete with the neighbours.
func TestHeadPipeline(t *testing.T) {
	const n, c, d, k, batch, rounds = 600, 4, 5, 10, 128, 10
	sym := func(y int32, rng *rand.Rand) int32 {
		if rng.Float64() < 0.5 {
			return (y + 1 + int32(rng.IntN(c-1))) % c
		}
		return y
	}
	np := pooledTestParams(c, k)
	hp := head.Params{Folds: 5, Lambda: 1, Iters: 100, WarmIters: 10, Seed: 7}
	fixed := hp
	fixed.Weight = 0.25
	// Two far apart blobs per class, each class's on opposite sides, and
	// 20% noise: the neighbours are right, a linear model cannot be.
	twoBlobs := func(y int32, rng *rand.Rand) int32 {
		y %= c
		if rng.Float64() < 0.1 {
			return (y + 1 + int32(rng.IntN(c-1))) % c
		}
		return y
	}
	type cse struct {
		name   string
		spread float64
		hp     head.Params
		cands  int // 0: exact mode
	}
	p, s := beam.NewPipelineWithRoot()
	for _, cs := range []cse{{"fitted", 1.2, hp, 0}, {"fixed", 1.2, fixed, 0}, {"sample", 1.2, hp, 400}, {"unsorted", 1.2, hp, 0}, {"off", 10, hp, 0}} {
		rows, data, _ := noisyBlobs(n, c, d, batch, cs.spread, 21, sym)
		switch cs.name {
		case "off":
			rows, data, _ = noisyBlobs(n, 2*c, d, batch, cs.spread, 21, twoBlobs)
		case "unsorted":
			// Keys descending in input order: the engine's candidates (item
			// order) and the pipeline's (key order) are in opposite orders.
			for i := range data.Keys {
				data.Keys[i] = int64(100000 - 3*i) // rows' IDs share the slice
			}
		}
		var shares []float64
		on := 0
		res, err := engine.Run(data, engine.Options{K: k, Metric: np.Metric, Standardise: np.Standardise, Weighting: np.Weighting,
			LLC: np.LLC, Rounds: rounds, Mixture: np.Mixture, Workers: 2, Candidates: cs.cands,
			NewComponent: head.Factory(cs.hp, c, np.Mixture.C0, np.Mixture.Smooth, func(_ int, w float64) {
				shares = append(shares, w/(1+w))
				if w > 0 {
					on++
				}
			})}, engine.Backends{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the head's share by round %.3f", cs.name, shares)
		switch {
		case cs.name == "off" && (on == 0 || on == rounds):
			t.Errorf("%s: the head was on in %d of %d rounds, want it to switch off after the first", cs.name, on, rounds)
		case cs.name != "off" && on < 2:
			t.Errorf("%s: the head was on in %d of %d rounds, want at least 2", cs.name, on, rounds)
		}
		var plain []string
		want := spell(res, data.Keys)
		if plain, _ = engineStates(t, data, np, rounds); cs.cands == 0 && cs.name != "off" && slices.Equal(plain, want) {
			t.Errorf("%s: the head changed no state", cs.name)
		}
		for _, workers := range []int{1, 3} {
			sc := s.Scope(cs.name)
			in := beam.CreateList(sc, rows)
			stats := ComputeStats(sc, in, StatsParams{Candidates: cs.cands, Seed: np.Mixture.Seed, IDColumn: "id"})
			items := Neighbours(sc, in, stats, np)
			h := cs.hp
			out := Rounds(sc, items, RoundsParams{Rounds: rounds, Workers: workers, Mixture: np.Mixture, Head: &h, Features: CandidateFeatures(sc, in, stats)})
			passert.Equals(sc, beam.ParDo(sc, itemStates, out), beam.CreateList(sc, want))
		}
	}
	ptest.RunAndValidate(t, p)
}

// spell is engineStates' spelling of a result's states.
func spell(res *engine.Result, keys []int64) []string {
	out := make([]string, len(keys))
	for i, key := range keys {
		var b strings.Builder
		fmt.Fprintf(&b, "%d:", key)
		for e := res.States.ItemOff[i]; e < res.States.ItemOff[i+1]; e++ {
			fmt.Fprintf(&b, " %d=%x", res.States.Class[e], math.Float32bits(res.States.Pi[e]))
		}
		out[i] = b.String()
	}
	return out
}
