package mixture

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkRound measures one item's round (sample + EM) at the sizes:
// K = 10 neighbours, C0 = 10 (N = 2 C0 - 1 = 19, rows of at most 20
// entries), the rest DefaultParams (L = 100 with systematic component draws,
// EM up to 10 iterations with its tolerance). C0 is the 10, not
// DefaultC0 (5 since issue 14), so the figure stays comparable. Items/s
// at C = 1000 should stay within 3x of C = 10: nothing is O(C^2). items/cpu-s
// is the same rate per CPU-second of the process, the figure to read on a
// shared machine.
func BenchmarkRound(b *testing.B) {
	for _, c := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("C=%d", c), func(b *testing.B) {
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
			neigh := make([]State, k)
			w := make([]float64, k)
			for j := range neigh {
				neigh[j].CopyFrom(&items[j+1])
				w[j] = 1.0 / k
			}
			var dst State
			b.ResetTimer()
			cpu0, cpuOK := cpuTime()
			for i := 0; i < b.N; i++ {
				ws.Round(&dst, &items[0], nil, 0, neigh, w, uint64(i), 5, &p)
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
