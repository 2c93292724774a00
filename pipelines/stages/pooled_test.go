package stages

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// noisyBlobs generates n rows of c Gaussian blobs in d dimensions (blob y
// centred at spread * a random unit-ish vector), labelled by flip, in
// batches of batch rows over two shards; keys 3 i + 5 (ascending in input
// order, as the engine's candidate indices assume, but not the row
// index). It returns the batches, the same data for the engine, and the
// truth.
func noisyBlobs(n, c, d, batch int, spread float64, seed uint64, flip func(y int32, rng *rand.Rand) int32) ([]schemas.Rows, *engine.Data, []int32) {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := make([]float64, c*d)
	for x := range centres {
		centres[x] = spread * rng.NormFloat64()
	}
	data := &engine.Data{D: d, LabelOff: []int32{0}}
	truth := make([]int32, n)
	for i := range n {
		y := int32(i % c)
		truth[i] = y
		data.Keys = append(data.Keys, int64(3*i+5))
		for k := range d {
			data.Features = append(data.Features, float32(centres[int(y)*d+k]+rng.NormFloat64()))
		}
		data.Labels = append(data.Labels, flip(y, rng))
		data.LabelOff = append(data.LabelOff, int32(i+1))
	}
	var rows []schemas.Rows
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		shard := "a.parquet"
		if lo >= n/2 {
			shard = "b.parquet"
		}
		r := schemas.Rows{Shard: shard, Offset: int64(lo), IDs: data.Keys[lo:hi], D: d, Features: data.Features[lo*d : hi*d],
			Labels: data.Labels[lo:hi], LabelOff: make([]int32, hi-lo+1)}
		for i := range r.LabelOff {
			r.LabelOff[i] = int32(i)
		}
		rows = append(rows, r)
	}
	return rows, data, truth
}

// pooledTestParams are the method's defaults for c classes (the pooled
// start included) with fewer draws, for a fast test.
func pooledTestParams(c, k int) engine.NeighbourParams {
	m := mixture.DefaultParams(c)
	m.L, m.AnnotationWeight, m.Seed = 50, 0, 3
	return engine.NeighbourParams{K: k, Metric: knn.L2, Standardise: true, Weighting: engine.Blend,
		LLC: llc.DefaultParams(), Mixture: m, Device: "cpu"}
}

// engineStates runs the engine with np's options and spells its states as
// itemStates does.
func engineStates(t *testing.T, data *engine.Data, np engine.NeighbourParams, rounds int) ([]string, *engine.Result) {
	t.Helper()
	res, err := engine.Run(data, engine.Options{K: np.K, Metric: np.Metric, Standardise: np.Standardise, Weighting: np.Weighting,
		LLC: np.LLC, Rounds: rounds, Mixture: np.Mixture, Workers: 2}, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, data.Len())
	for i, key := range data.Keys {
		var b strings.Builder
		fmt.Fprintf(&b, "%d:", key)
		for e := res.States.ItemOff[i]; e < res.States.ItemOff[i+1]; e++ {
			fmt.Fprintf(&b, " %d=%x", res.States.Class[e], math.Float32bits(res.States.Pi[e]))
		}
		out[i] = b.String()
	}
	return out, res
}

// voteAccuracy is the accuracy of the K-nearest-neighbour majority vote of
// the given labels (the item's own excluded; z-scored features, squared
// L2; ties to the smaller class), the baseline a relabeller must beat.
func voteAccuracy(data *engine.Data, truth []int32, c, k int) float64 {
	n, d := data.Len(), data.D
	x := append([]float32(nil), data.Features...)
	mean, std := engine.Moments(x, n, d)
	engine.Standardise(x, d, mean, std)
	right := 0
	dist := make([]float64, n)
	order := make([]int, n)
	for i := range n {
		for j := range n {
			s := 0.0
			for f := range d {
				v := float64(x[i*d+f] - x[j*d+f])
				s += v * v
			}
			dist[j], order[j] = s, j
		}
		dist[i] = math.Inf(1)
		sort.Slice(order, func(a, b int) bool { return dist[order[a]] < dist[order[b]] })
		votes := make([]int, c)
		for _, j := range order[:k] {
			votes[data.Labels[j]]++
		}
		best := 0
		for y, v := range votes {
			if v > votes[best] {
				best = y
			}
		}
		if int32(best) == truth[i] {
			right++
		}
	}
	return float64(right) / float64(n)
}

// pairFlip is pair-flip noise over c classes: a label y becomes y + 1
// (mod c) with probability rate.
func pairFlip(c int32, rate float64) func(y int32, rng *rand.Rand) int32 {
	return func(y int32, rng *rand.Rand) int32 {
		if rng.Float64() < rate {
			return (y + 1) % c
		}
		return y
	}
}

// TestPooledStartPipeline: on generated blobs with 45% pair-flip noise
// (each class's labels flip to the next class; truth known exactly) the
// stages, pooled start (the default) and rounds, give every item the
// states the in-process engine gives it, bit for bit, at 1 and at 3
// workers (and so do their starts, 0 rounds); that result is far above the K = 10 vote (which follows the
// labels' majority). With symmetric noise the gate stays shut and the
// stages' states are those of the paper's start (PooledIters 0), bit for
// bit.
func TestPooledStartPipeline(t *testing.T) {
	const n, c, d, k, batch, rounds = 900, 5, 6, 10, 128, 10
	pair := pairFlip(c, 0.45)
	sym := func(y int32, rng *rand.Rand) int32 {
		if rng.Float64() < 0.4 {
			return (y + 1 + int32(rng.IntN(c-1))) % c
		}
		return y
	}
	np := pooledTestParams(c, k)
	run := func(s beam.Scope, rows []schemas.Rows, np engine.NeighbourParams, workers int, rounds int) beam.PCollection {
		in := beam.CreateList(s, rows)
		stats := ComputeStats(s, in, StatsParams{Seed: np.Mixture.Seed, IDColumn: "id"})
		items := Neighbours(s, in, stats, np)
		return beam.ParDo(s, itemStates, Rounds(s, items, RoundsParams{Rounds: rounds, Workers: workers, Mixture: np.Mixture}))
	}

	rows, data, truth := noisyBlobs(n, c, d, batch, 5, 11, pair)
	want, res := engineStates(t, data, np, rounds)
	var structure float64
	var fitted bool
	eo := engine.Options{K: k, Metric: np.Metric, Standardise: true, Weighting: np.Weighting, LLC: np.LLC, Rounds: 0, Mixture: np.Mixture, Workers: 1,
		OnPooled: func(m *mixture.Pooled) { structure, fitted = m.Structure(), true }}
	if _, err := engine.Run(data, eo, engine.Backends{}); err != nil {
		t.Fatal(err)
	}
	acc, vote := 0, voteAccuracy(data, truth, c, k)
	for i := range n {
		if y, _ := res.States.Top(i); y == truth[i] {
			acc++
		}
	}
	t.Logf("pair-0.45: structure %.3f, engine %.4f, K = %d vote %.4f", structure, float64(acc)/n, k, vote)
	if !fitted || structure < np.Mixture.PooledGate {
		t.Fatalf("pair-0.45: structure %.3f (fitted %v): the gate must open", structure, fitted)
	}
	if a := float64(acc) / n; a < 0.95 || a < vote+0.15 {
		t.Errorf("pair-0.45: pooled start accuracy %.4f, want >= .95 and 15 points above the vote's %.4f", a, vote)
	}
	p, s := beam.NewPipelineWithRoot()
	one := run(s.Scope("w1"), rows, np, 1, rounds)
	three := run(s.Scope("w3"), rows, np, 3, rounds)
	passert.Equals(s, one, beam.CreateList(s, want))
	passert.Equals(s, three, beam.CreateList(s, want))
	// The start alone (0 rounds) is the engine's start too.
	start, _ := engineStates(t, data, np, 0)
	passert.Equals(s, run(s.Scope("start"), rows, np, 2, 0), beam.CreateList(s, start))

	// Symmetric noise: the gate stays shut; the same bytes as the paper's start.
	rows, _, _ = noisyBlobs(n, c, d, batch, 5, 12, sym)
	paper := np
	paper.Mixture.PooledIters = 0
	passert.Equals(s, run(s.Scope("sym"), rows, np, 2, rounds), run(s.Scope("sym-paper"), rows, paper, 2, rounds))
	ptest.RunAndValidate(t, p)
}

// TestPooledGatherBound: the gather keeps the same items however the
// batches are added and merged, below the cap all of them, in key order,
// with the candidates in candidate order.
func TestPooledGatherBound(t *testing.T) {
	f := pooledGatherFn{Seed: 9}
	batch := func(lo, hi int) Items {
		it := Items{K: 2, LabelOff: []int32{0}}
		for i := lo; i < hi; i++ {
			it.IDs = append(it.IDs, int64(1000-i))
			it.Labels = append(it.Labels, int32(i%3))
			it.LabelOff = append(it.LabelOff, int32(len(it.Labels)))
			it.Cand = append(it.Cand, int32(99-i))
			it.Neigh = append(it.Neigh, int32((i+1)%100), -1)
		}
		return it
	}
	a := f.AddInput(f.AddInput(f.CreateAccumulator(), batch(0, 40)), batch(70, 100))
	b := f.AddInput(f.CreateAccumulator(), batch(40, 70))
	x := f.ExtractOutput(f.MergeAccumulators(b, a))
	y := f.ExtractOutput(f.AddInput(f.CreateAccumulator(), batch(0, 100)))
	if !slices.Equal(x.Keys, y.Keys) || !slices.Equal(x.Neigh, y.Neigh) || !slices.Equal(x.CandLabels, y.CandLabels) {
		t.Fatal("the gathered inputs depend on the merge order")
	}
	if len(x.Keys) != 100 || !slices.IsSorted(x.Keys) {
		t.Errorf("gathered %d items, sorted %v; want all 100, in key order", len(x.Keys), slices.IsSorted(x.Keys))
	}
	in, err := x.inputs()
	if err != nil {
		t.Fatal(err)
	}
	// Candidate j is item 99 - j, key 901 + j, label (99 - j) % 3.
	for j := range 100 {
		if got := in.CandLabels[in.CandOff[j]:in.CandOff[j+1]]; len(got) != 1 || got[0] != int32((99-j)%3) {
			t.Fatalf("candidate %d's labels %v, want [%d]", j, got, (99-j)%3)
		}
	}
	// Past a bound the first by PooledBefore stay, whatever the order.
	keep := f.bound(f.AddInput(f.CreateAccumulator(), batch(0, 100)), 10)
	keep2 := f.bound(f.MergeAccumulators(f.AddInput(f.CreateAccumulator(), batch(50, 100)), f.AddInput(f.CreateAccumulator(), batch(0, 50))), 10)
	if !slices.Equal(keep.Keys, keep2.Keys) || len(keep.Keys) != 10 {
		t.Errorf("bounded to 10: %v and %v", keep.Keys, keep2.Keys)
	}
	for _, key := range keep.Keys {
		for i := range 100 {
			other := int64(1000 - i)
			if !slices.Contains(keep.Keys, other) && engine.PooledBefore(9, other, key) {
				t.Fatalf("kept %d, but %d comes before it", key, other)
			}
		}
	}
	// A lost candidate is an error, not a shifted table.
	x.CandIdx = x.CandIdx[1:]
	if _, err := x.inputs(); err == nil {
		t.Error("candidates from 1: no error")
	}
}

// TestPooledGatherCap: past mixture.PooledSampleCap items the gather keeps
// exactly the items engine.PooledSample picks, in key order, whether the
// batches come in one accumulator or in two merged ones.
func TestPooledGatherCap(t *testing.T) {
	n := 2*mixture.PooledSampleCap + 50_000
	const batch = 25_000
	f := pooledGatherFn{Seed: 4}
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = int64(7*i + 1)
	}
	items := func(lo, hi int) Items {
		it := Items{K: 1, IDs: keys[lo:hi], LabelOff: make([]int32, hi-lo+1), Labels: make([]int32, hi-lo), Cand: make([]int32, hi-lo), Neigh: make([]int32, hi-lo)}
		for i := range hi - lo {
			it.LabelOff[i+1] = int32(i + 1)
			it.Labels[i] = int32((lo + i) % 5)
			it.Cand[i] = -1
			it.Neigh[i] = -1
		}
		return it
	}
	one, a, b := f.CreateAccumulator(), f.CreateAccumulator(), f.CreateAccumulator()
	for lo := 0; lo < n; lo += batch {
		it := items(lo, min(lo+batch, n))
		one = f.AddInput(one, it)
		if lo/batch%2 == 0 {
			a = f.AddInput(a, it)
		} else {
			b = f.AddInput(b, it)
		}
	}
	x, y := f.ExtractOutput(one), f.ExtractOutput(f.MergeAccumulators(b, a))
	var want []int64
	for _, i := range engine.PooledSample(keys, 4) {
		want = append(want, keys[i])
	}
	if len(want) != mixture.PooledSampleCap || !slices.Equal(x.Keys, want) || !slices.Equal(y.Keys, want) {
		t.Errorf("gathered %d and %d items, want engine.PooledSample's %d (equal: %v, %v)",
			len(x.Keys), len(y.Keys), len(want), slices.Equal(x.Keys, want), slices.Equal(y.Keys, want))
	}
	for i, k := range x.Keys { // each item's labels travel with it
		if l := x.Labels[i]; l != int32((k-1)/7%5) {
			t.Fatalf("item %d: label %d, want %d", k, l, (k-1)/7%5)
		}
	}
}

// TestPooledCalibration: a run that started from the pooled posterior fits
// --temperature auto from the given labels' likelihood through the fit's
// own transition (WritePooled, StatsOf with TOwn): the temperature the
// writer records is the one the engine's states and fitted TOwn give, and
// not the one the formula for the labels' start gives (so the pooled fit
// reached the writer).
func TestPooledCalibration(t *testing.T) {
	const n, c, d, k, batch, rounds = 900, 5, 6, 10, 128, 10
	pair := pairFlip(c, 0.45)
	np := pooledTestParams(c, k)
	rows, data, _ := noisyBlobs(n, c, d, batch, 5, 11, pair)
	var tOwn []float64
	eo := engine.Options{K: k, Metric: np.Metric, Standardise: np.Standardise, Weighting: np.Weighting, LLC: np.LLC,
		Rounds: rounds, Mixture: np.Mixture, Workers: 2,
		OnPooled: func(m *mixture.Pooled) { tOwn = m.TOwn }}
	res, err := engine.Run(data, eo, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if tOwn == nil {
		t.Fatal("no split pooled fit")
	}
	label := func(i int) []int32 { return data.Labels[data.LabelOff[i]:data.LabelOff[i+1]] }
	var lik, formula mixture.CalibrationStats
	resultio.StatsOf(&lik, &res.States, label, tOwn, c)
	resultio.StatsOf(&formula, &res.States, label, nil, c)
	want, other := mixture.AutoTemperature(lik), mixture.AutoTemperature(formula)
	if want == other {
		t.Fatalf("likelihood and formula give the same temperature %g: the test cannot tell them apart", want)
	}

	dir := t.TempDir()
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, rows)
	stats := ComputeStats(s, in, StatsParams{Seed: np.Mixture.Seed, IDColumn: "id"})
	items, pooled := RoundsPooled(s, Neighbours(s, in, stats, np), RoundsParams{Rounds: rounds, Workers: 2, Mixture: np.Mixture})
	WritePooled(s, items, WriteParams{TmpDir: dir, Format: shardio.ArrowFile, Meta: map[string]string{}, LabelKind: schemas.LabelInt32,
		IDKind: schemas.IDInt64, C: c, Cal: resultio.Calibration{Auto: true}}, pooled)
	ptest.RunAndValidate(t, p)
	reports, err := filepath.Glob(filepath.Join(dir, "*"+resultio.ReportSuffix))
	if err != nil || len(reports) == 0 {
		t.Fatalf("no shard reports in %s: %v", dir, err)
	}
	for _, path := range reports {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r resultio.ShardReport
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Temperature != want {
			t.Errorf("%s: temperature %g, want the likelihood's %g (the formula's: %g)", filepath.Base(path), r.Temperature, want, other)
		}
	}
}
