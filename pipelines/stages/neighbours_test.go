package stages

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// testNeighbourParams are the stage's parameters for the small generated
// datasets of these tests (statsBatches: 4 classes): the defaults, with k
// neighbours, fewer samples and the CPU kernels.
func testNeighbourParams(k int) engine.NeighbourParams {
	m := mixture.DefaultParams(4)
	m.L, m.EMIters, m.Seed = 40, 3, 7
	return engine.NeighbourParams{K: k, Metric: knn.L2, Standardise: true, Weighting: engine.Blend,
		LLC: llc.DefaultParams(), Mixture: m, Device: "cpu"}
}

// bruteNeighbours is the oracle: every item's distances to every other item
// (float64, on the features standardised as the stage does, with Stats of
// the same batches), and the candidate keys ascending (all items).
type bruteNeighbours struct {
	Keys []int64
	// Dist[key] lists key's squared L2 distances to the other items,
	// ascending.
	Dist map[int64][]float64
	// Pos[key] is key's features, standardised.
	Pos map[int64][]float64
}

func newBruteNeighbours(t *testing.T, n, batch, d int) bruteNeighbours {
	t.Helper()
	f := &statsFn{}
	a := f.CreateAccumulator()
	batches := statsBatches(t, n, batch, d)
	for _, b := range batches {
		a = f.AddInput(a, b)
	}
	st := f.ExtractOutput(a)
	o := bruteNeighbours{Dist: map[int64][]float64{}, Pos: map[int64][]float64{}}
	for _, b := range batches {
		x := Standardised(&b, &st, true)
		for i, key := range b.IDs {
			p := make([]float64, d)
			for j := range p {
				p[j] = float64(x[i*d+j])
			}
			o.Keys = append(o.Keys, key)
			o.Pos[key] = p
		}
	}
	slices.Sort(o.Keys)
	for _, a := range o.Keys {
		for _, b := range o.Keys {
			if a != b {
				o.Dist[a] = append(o.Dist[a], dist2(o.Pos[a], o.Pos[b]))
			}
		}
		sort.Float64s(o.Dist[a])
	}
	return o
}

func dist2(a, b []float64) float64 {
	s := 0.0
	for j := range a {
		s += (a[j] - b[j]) * (a[j] - b[j])
	}
	return s
}

// checkNeighboursFn emits what is wrong with a batch of Items against the
// brute-force oracle: each item has K distinct neighbours, itself not among
// them, no farther than its K-th nearest item (ties compared as sets, with a
// float32 tolerance); weights non-negative summing to 1; the candidate index
// of every item (all are candidates); and an initial state whose top class
// is the given label.
type checkNeighboursFn struct {
	K     int
	Brute bruteNeighbours
}

func (f *checkNeighboursFn) ProcessElement(it Items, emit func(string)) {
	bad := func(format string, args ...any) {
		emit(fmt.Sprintf("%s@%d: ", it.Shard, it.Offset) + fmt.Sprintf(format, args...))
	}
	k := f.K
	if it.K != k || len(it.Neigh) != it.Len()*k || len(it.Weight) != it.Len()*k || it.State.Len() != it.Len() {
		bad("K %d, %d neighbours and %d weights for %d items, want K %d", it.K, len(it.Neigh), len(it.Weight), it.Len(), k)
		return
	}
	for i, key := range it.IDs {
		if c := it.Cand[i]; c < 0 || f.Brute.Keys[c] != key {
			bad("item %d: candidate index %d", key, c)
		}
		kth := f.Brute.Dist[key][k-1]
		seen := map[int64]bool{}
		sum := 0.0
		for j := 0; j < k; j++ {
			c := it.Neigh[i*k+j]
			if c < 0 {
				bad("item %d: neighbour %d missing among %d items", key, j, len(f.Brute.Keys))
				continue
			}
			nk := f.Brute.Keys[c]
			if nk == key || seen[nk] {
				bad("item %d: neighbour %d is itself or repeated", key, nk)
			}
			seen[nk] = true
			if d := dist2(f.Brute.Pos[key], f.Brute.Pos[nk]); d > kth*(1+1e-4)+1e-6 {
				bad("item %d: neighbour %d at %g, the %d-th nearest is at %g", key, nk, d, k, kth)
			}
			w := it.Weight[i*k+j]
			if !(w >= 0) {
				bad("item %d: weight %g", key, w)
			}
			sum += w
		}
		if math.Abs(sum-1) > 1e-6 {
			bad("item %d: weights sum to %g", key, sum)
		}
		if top, p := it.State.Top(i); top != it.Labels[it.LabelOff[i]] || p != 1 {
			bad("item %d: initial top class %d (%g), given label %d", key, top, p, it.Labels[it.LabelOff[i]])
		}
	}
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*checkNeighboursFn)(nil)).Elem())
	register.Function1x1(itemCount)
}

// itemCount is the number of items of a batch.
func itemCount(it Items) int { return it.Len() }

// TestNeighboursBruteForce runs Neighbours on 90 generated rows in batches of
// 16 over two shards, at K = 1, 7 and 89 (every other item), against the
// brute-force oracle; the batches come out whole, every item once.
func TestNeighboursBruteForce(t *testing.T) {
	const n, batch, d = 90, 16, 5
	brute := newBruteNeighbours(t, n, batch, d)
	for _, k := range []int{1, 7, n - 1} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			rows := beam.CreateList(s, statsBatches(t, n, batch, d))
			stats := ComputeStats(s, rows, StatsParams{Seed: 1, IDColumn: "id"})
			items := Neighbours(s, rows, stats, testNeighbourParams(k))
			passert.Empty(s, beam.ParDo(s, &checkNeighboursFn{K: k, Brute: brute}, items))
			passert.Sum(s, beam.ParDo(s, itemCount, items), "items", (n+batch-1)/batch, n)
			ptest.RunAndValidate(t, p)
		})
	}
}

// TestNeighbourParams: what the stage refuses while the pipeline is built.
func TestNeighbourParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*engine.NeighbourParams)
		want string
	}{
		{"K 0", func(p *engine.NeighbourParams) { p.K = 0 }, "K = 0"},
		{"LLC zero", func(p *engine.NeighbourParams) { p.LLC = llc.Params{} }, "Sigma"},
		{"no classes", func(p *engine.NeighbourParams) { p.Mixture.C = 0 }, "C = 0"},
	} {
		p := testNeighbourParams(3)
		tc.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	// Uniform weights need no LLC parameters.
	p := testNeighbourParams(3)
	p.Weighting, p.LLC = engine.Uniform, llc.Params{}
	if err := p.Validate(); err != nil {
		t.Errorf("uniform weights without LLC parameters: %v", err)
	}
}

// TestNeighboursDupOneReporter: with a duplicate id in the stats, the
// candidate stage still emits (an empty fragment, so the candidates'
// singleton is whole) and only the neighbour stage fails, naming the
// duplicate: two failing stages raced, and the loser's side-input error
// ("got 0 values") was sometimes the run's message.
func TestNeighboursDupOneReporter(t *testing.T) {
	st := Stats{N: 2, D: 1, Mean: []float64{0}, M2: []float64{1}, Dup: "duplicate id 7 in b.parquet row 0 (first in a.parquet row 0)"}
	r := schemas.Rows{Shard: "b.parquet", IDs: []int64{7}, D: 1, Features: []float32{1}, Labels: []int32{0}, LabelOff: []int32{0, 1}}
	var frags []Candidates
	if err := (&candRowsFn{Standardise: true}).ProcessElement(r, st, func(c Candidates) { frags = append(frags, c) }); err != nil || len(frags) != 1 || len(frags[0].Keys) != 0 {
		t.Errorf("candidate rows: error %v, %d fragments; want no error and one empty fragment", err, len(frags))
	}
	err := (&neighboursFn{P: testNeighbourParams(1)}).ProcessElement(context.Background(), r, st, Candidates{D: 1}, func(Items) {})
	if err == nil || err.Error() != st.Dup {
		t.Errorf("neighbours: %v, want %q", err, st.Dup)
	}
}
