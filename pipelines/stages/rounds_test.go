package stages

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// itemStates spells every item's posterior as one string, "key: class=pi
// ...", so that two runs' states compare as sets of strings.
func itemStates(it Items, emit func(string)) {
	for i, key := range it.IDs {
		var b strings.Builder
		fmt.Fprintf(&b, "%d:", key)
		for e := it.State.ItemOff[i]; e < it.State.ItemOff[i+1]; e++ {
			fmt.Fprintf(&b, " %d=%x", it.State.Class[e], math.Float32bits(it.State.Pi[e]))
		}
		emit(b.String())
	}
}

// checkPosteriorsFn emits what is wrong with a batch's final states: every
// item has a posterior over at most C0 distinct classes in [0, C), with
// probabilities in [0, 1] summing to 1.
type checkPosteriorsFn struct {
	C, C0 int
}

func (f *checkPosteriorsFn) ProcessElement(it Items, emit func(string)) {
	if it.State.Len() != it.Len() {
		emit(fmt.Sprintf("%s@%d: %d states for %d items", it.Shard, it.Offset, it.State.Len(), it.Len()))
		return
	}
	for i, key := range it.IDs {
		lo, hi := it.State.ItemOff[i], it.State.ItemOff[i+1]
		if hi == lo || int(hi-lo) > f.C0 {
			emit(fmt.Sprintf("item %d: %d classes in its posterior, want 1..%d", key, hi-lo, f.C0))
			continue
		}
		sum := 0.0
		seen := map[int32]bool{}
		for e := lo; e < hi; e++ {
			c, p := it.State.Class[e], it.State.Pi[e]
			if c < 0 || int(c) >= f.C || seen[c] || !(p >= 0 && p <= 1) {
				emit(fmt.Sprintf("item %d: class %d with probability %g", key, c, p))
			}
			seen[c] = true
			sum += float64(p)
		}
		if math.Abs(sum-1) > 1e-5 {
			emit(fmt.Sprintf("item %d: posterior sums to %g", key, sum))
		}
	}
}

func init() {
	register.Function2x0(itemStates)
	register.Emitter1[string]()
	beam.RegisterDoFn(reflect.TypeOf((*checkPosteriorsFn)(nil)).Elem())
}

// TestRoundsDeterministic relabels 120 generated rows (4 classes, 20% noise)
// for 3 rounds twice in one pipeline: the two runs' states are identical
// (every draw is seeded from the seed, the item and the round); the
// posteriors are distributions over at most C0 classes; the batches come out
// whole; the same holds when settled items skip rounds (ActiveTol); and 0
// rounds without the pooled start leave the initial states as they were.
func TestRoundsDeterministic(t *testing.T) {
	const n, batch, d = 120, 25, 4
	np := testNeighbourParams(6)
	rp := RoundsParams{Rounds: 3, Workers: 2, Mixture: np.Mixture}
	p, s := beam.NewPipelineWithRoot()
	rows := beam.CreateList(s, statsBatches(t, n, batch, d))
	stats := ComputeStats(s, rows, StatsParams{Seed: 1, IDColumn: "id"})
	items := Neighbours(s, rows, stats, np)
	a := Rounds(s.Scope("a"), items, rp)
	b := Rounds(s.Scope("b"), items, rp)
	sa := beam.ParDo(s, itemStates, a)
	passert.Count(s, sa, "states", n)
	passert.Equals(s, sa, beam.ParDo(s, itemStates, b))
	passert.Empty(s, beam.ParDo(s, &checkPosteriorsFn{C: np.Mixture.C, C0: np.Mixture.C0}, a))
	passert.Sum(s, beam.ParDo(s, itemCount, a), "items", (n+batch-1)/batch, n)
	// Skipping settled items (Moved travels through the coders) is as
	// deterministic.
	sp := rp
	sp.Mixture.ActiveTol = 0.15
	sa2 := beam.ParDo(s, itemStates, Rounds(s.Scope("skip-a"), items, sp))
	passert.Equals(s, sa2, beam.ParDo(s, itemStates, Rounds(s.Scope("skip-b"), items, sp)))
	passert.Count(s, sa2, "skip states", n)
	// 0 rounds, and no pooled start, change nothing (with the pooled start,
	// 0 rounds leave the start: TestPooledStartPipeline).
	paper := np.Mixture
	paper.PooledIters = 0
	zero := Rounds(s.Scope("zero"), items, RoundsParams{Rounds: 0, Workers: 2, Mixture: paper})
	passert.Equals(s, beam.ParDo(s, itemStates, zero), beam.ParDo(s, itemStates, items))
	ptest.RunAndValidate(t, p)
}

// TestRoundsParams: invalid params fail while the pipeline is built, naming
// the field.
func TestRoundsParams(t *testing.T) {
	m := testNeighbourParams(3).Mixture
	for _, tc := range []struct {
		name string
		p    RoundsParams
		want string
	}{
		{"negative rounds", RoundsParams{Rounds: -1, Mixture: m}, "Rounds = -1"},
		{"negative workers", RoundsParams{Rounds: 1, Workers: -2, Mixture: m}, "Workers = -2"},
		{"zero mixture", RoundsParams{Rounds: 1}, "mixture"},
	} {
		func() {
			defer func() {
				r := recover()
				if err, ok := r.(error); !ok || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: recovered %v, want an error containing %q", tc.name, r, tc.want)
				}
			}()
			_, s := beam.NewPipelineWithRoot()
			Rounds(s, beam.Create(s, Items{}), tc.p)
		}()
	}
}
