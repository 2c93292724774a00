package mixture

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkRound measures one item's round (sample + EM) at the sizes:
// K = 10 neighbours, C0 = 10 (N = 2 C0 - 1 = 19, rows of at most 20
// entries), the rest DefaultParams (L = 100 with systematic component draws,
// one EM step: DefaultEMIters). C0 is the 10, not
// DefaultC0 (5), so the figure stays comparable. Items/s
// at C = 1000 should stay within 3x of C = 10: nothing is O(C^2). items/cpu-s
// is the same rate per CPU-second of the process, the figure to read on a
// shared machine.
func BenchmarkRound(b *testing.B) {
	for _, c := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("C=%d", c), func(b *testing.B) {
			r := newBenchRound(c)
			b.ResetTimer()
			cpu0, cpuOK := cpuTime()
			for i := 0; i < b.N; i++ {
				r.run(i)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
			// Items per CPU-second: the per-core rate, not diluted by other
			// processes' turns on a shared machine (GC time included).
			if cpu1, ok := cpuTime(); ok && cpuOK && cpu1 > cpu0 {
				b.ReportMetric(float64(b.N)/(cpu1-cpu0).Seconds(), "items/cpu-s")
			}
		})
	}
}

// BenchmarkRoundScaling prints the scaling directly: the time of a
// round at C = 1000 over the time at C = 10 (same setups as BenchmarkRound),
// measured in one run, alternating blocks of 256 rounds of each, and taking
// each size's fastest block. On a shared machine whose speed drifts (this
// one's by a fifth over a day, and by more over seconds when neighbours
// run) two separate benchmarks can land in different phases; alternating
// blocks and keeping the fastest compares the two sizes under the same
// conditions. Each b.N iteration is one pair of blocks.
func BenchmarkRoundScaling(b *testing.B) {
	small, large := newBenchRound(10), newBenchRound(1000)
	const block = 256
	best := [2]time.Duration{math.MaxInt64, math.MaxInt64}
	item := 0
	for i := 0; i < b.N; i++ {
		for k, r := range []*benchRound{small, large} {
			t0 := time.Now()
			for j := 0; j < block; j++ {
				r.run(item + j)
			}
			best[k] = min(best[k], time.Since(t0))
		}
		item += block
	}
	b.ReportMetric(float64(block)/best[0].Seconds(), "C10-items/s")
	b.ReportMetric(float64(block)/best[1].Seconds(), "C1000-items/s")
	b.ReportMetric(float64(best[1])/float64(best[0]), "C1000/C10")
}

// benchRound is one item's round at the sizes (see BenchmarkRound).
type benchRound struct {
	ws    Workspace
	p     Params
	own   State
	neigh []State
	w     []float64
	dst   State
}

// run runs the item's round with key i (fresh draws per call).
func (r *benchRound) run(i int) {
	r.ws.Round(&r.dst, &r.own, nil, 0, r.neigh, r.w, uint64(i), 5, &r.p)
}

func newBenchRound(c int) *benchRound {
	rng := rand.New(rand.NewPCG(1, uint64(c)))
	const k = 10
	p := DefaultParams(c)
	p.AnnotationWeight, p.Seed = 0, 1
	p.C0 = 10
	p.N, p.MaxRowEntries = DefaultN(p.C0), DefaultMaxRowEntries(p.C0)
	// States after a few rounds: several classes with mass, rows with
	// off-diagonal entries, as in a real run (one-hots would be too easy).
	items := make([]State, 64)
	var ws Workspace
	// A neighbourhood mixes a handful of classes whatever C is (items
	// near each other share labels); what grows with C is where the
	// noise mass of rho can land.
	base := rng.IntN(c - 4)
	for i := range items {
		items[i].Init([]int32{int32(base + rng.IntN(5))}, c, p.C0, p.Smooth)
	}
	for r := 0; r < 3; r++ {
		for i := range items {
			neigh := make([]State, k)
			w := make([]float64, k)
			for j := range neigh {
				neigh[j].CopyFrom(&items[rng.IntN(len(items))])
				w[j] = 1.0 / k
			}
			var dst State
			ws.Round(&dst, &items[i], nil, 0, neigh, w, uint64(i), r, &p)
			items[i].CopyFrom(&dst)
		}
	}
	r := &benchRound{p: p, neigh: make([]State, k), w: make([]float64, k)}
	r.own.CopyFrom(&items[0])
	for j := range r.neigh {
		r.neigh[j].CopyFrom(&items[j+1])
		r.w[j] = 1.0 / k
	}
	return r
}
