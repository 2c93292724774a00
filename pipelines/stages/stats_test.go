package stages

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/synth"
)

// statsBatches is n generated rows (d features, 4 classes) in batches of
// batch rows over two shards.
func statsBatches(t *testing.T, n, batch, d int) []schemas.Rows {
	t.Helper()
	g, err := synth.New(synth.DefaultParams(int64(n), d, 4, 0.2, 3))
	if err != nil {
		t.Fatal(err)
	}
	var out []schemas.Rows
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		shard := "a.parquet"
		if lo >= n/2 {
			shard = "b.parquet"
		}
		r := schemas.Rows{Shard: shard, Offset: int64(lo), IDs: make([]int64, hi-lo), D: d, Features: make([]float32, (hi-lo)*d),
			Labels: make([]int32, hi-lo), LabelOff: make([]int32, hi-lo+1)}
		for i := range r.LabelOff {
			r.LabelOff[i] = int32(i)
		}
		g.Rows(int64(lo), int64(hi), r.IDs, r.Features, make([]int32, hi-lo), r.Labels)
		out = append(out, r)
	}
	return out
}

// TestStatsMoments: the combined moments equal the two-pass moments of all
// rows (engine.Moments, what the engine standardises with) whatever the
// order batches are added and merged in, bit for bit between orders.
func TestStatsMoments(t *testing.T) {
	const n, d = 500, 6
	batches := statsBatches(t, n, 64, d)
	var all []float32
	for _, b := range batches {
		all = append(all, b.Features...)
	}
	mean, std := engine.Moments(all, n, d)
	f := &statsFn{}
	combine := func(order []int) Stats {
		// Two accumulators merged, as a runner may do.
		a, b := f.CreateAccumulator(), f.CreateAccumulator()
		for j, i := range order {
			if j%2 == 0 {
				a = f.AddInput(a, batches[i])
			} else {
				b = f.AddInput(b, batches[i])
			}
		}
		return f.ExtractOutput(f.MergeAccumulators(b, a))
	}
	fwd := make([]int, len(batches))
	for i := range fwd {
		fwd[i] = i
	}
	rev := slices.Clone(fwd)
	slices.Reverse(rev)
	x, y := combine(fwd), combine(rev)
	if x.N != n || x.D != d || x.Dup != "" || len(x.Keys) != n {
		t.Fatalf("N %d D %d Dup %q keys %d; want %d, %d, none, %d", x.N, x.D, x.Dup, len(x.Keys), n, d, n)
	}
	for j := 0; j < d; j++ {
		if math.Abs(x.Mean[j]-mean[j]) > 1e-9 || math.Abs(x.M2[j]-std[j]) > 1e-9 {
			t.Errorf("feature %d: mean %g std %g, two-pass %g %g", j, x.Mean[j], x.M2[j], mean[j], std[j])
		}
		if x.Mean[j] != y.Mean[j] || x.M2[j] != y.M2[j] {
			t.Errorf("feature %d: moments depend on the order of batches", j)
		}
	}
}

// TestStatsCandidatesAndDup: a bounded candidate set is the engine's choice
// (engine.SelectCandidates), ascending, and CandIndex finds exactly its
// members; a duplicate id is reported with both places.
func TestStatsCandidatesAndDup(t *testing.T) {
	batches := statsBatches(t, 300, 50, 3)
	f := &statsFn{Candidates: 40, Seed: 11, IDColumn: "id"}
	a := f.CreateAccumulator()
	var keys []int64
	for _, b := range batches {
		a = f.AddInput(a, b)
		keys = append(keys, b.IDs...)
	}
	st := f.ExtractOutput(a)
	slices.Sort(keys)
	var want []int64
	for _, i := range engine.SelectCandidates(keys, 40, 11) {
		want = append(want, keys[i])
	}
	if !slices.Equal(st.Keys, want) {
		t.Fatalf("candidate keys %v, want the engine's %v", st.Keys, want)
	}
	for c, k := range want {
		if got := st.CandIndex(k); got != int32(c) {
			t.Errorf("CandIndex(%d) = %d, want %d", k, got, c)
		}
	}
	in := 0
	for _, k := range keys {
		if st.CandIndex(k) >= 0 {
			in++
		}
	}
	if in != 40 {
		t.Errorf("%d keys found in the candidate set, want 40", in)
	}

	dup := batches[3]
	dup.IDs = slices.Clone(dup.IDs)
	dup.IDs[7] = batches[0].IDs[2]
	a = f.CreateAccumulator()
	for i, b := range batches {
		if i == 3 {
			b = dup
		}
		a = f.AddInput(a, b)
	}
	got := f.ExtractOutput(a).Dup
	if !strings.Contains(got, "a.parquet") || !strings.Contains(got, "duplicate") {
		t.Errorf("duplicate id: Dup %q, want one naming the duplicate and a.parquet", got)
	}
}

// statsOK checks a pipeline's Stats of statsBatches(300, 50, 3) with 40
// candidates: every row counted, the candidate set bounded and ascending.
func statsOK(st Stats) bool {
	return st.N == 300 && st.D == 3 && st.Dup == "" && len(st.Keys) == 40 &&
		slices.IsSorted(st.Keys) && len(st.Mean) == 3 && len(st.M2) == 3 && st.Pos == nil
}

func init() { register.Function1x1(statsOK) }

// TestComputeStatsPipeline runs ComputeStats in a pipeline: one Stats, as
// statsOK describes; invalid params fail while the pipeline is built.
func TestComputeStatsPipeline(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	rows := beam.CreateList(s, statsBatches(t, 300, 50, 3))
	st := ComputeStats(s, rows, StatsParams{Candidates: 40, Seed: 11, IDColumn: "id"})
	passert.Count(s, st, "stats", 1)
	passert.True(s, st, statsOK)
	ptest.RunAndValidate(t, p)

	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "Candidates = -1") {
			t.Errorf("Candidates -1: recovered %v, want an error naming Candidates", r)
		}
	}()
	_, s = beam.NewPipelineWithRoot()
	ComputeStats(s, beam.CreateList(s, statsBatches(t, 10, 5, 3)), StatsParams{Candidates: -1})
}
