package llc_test

import (
	"fmt"
	"testing"

	"github.com/relabel/relabel/transforms/llc"
)

// BenchmarkCPU codes batches of 1024 neighbourhoods (lambda = 0, the paper's
// setting) at the paper's K = 10 and its ablation's K = 100, d = 128, on all
// of GOMAXPROCS and on one worker. It reports neighbourhoods/s and the mean
// support size (neighbours with non-zero weight), which drives the solver's
// share of the cost.
func BenchmarkCPU(b *testing.B) {
	const batch, d = 1024, 128
	for _, k := range []int{10, 100} {
		bt := randomBatch(42, batch, k, d)
		dst := make([]float64, batch*k)
		for _, workers := range []int{0, 1} {
			name := fmt.Sprintf("K=%d/d=%d/workers=%d", k, d, workers)
			if workers == 0 {
				name = fmt.Sprintf("K=%d/d=%d/workers=GOMAXPROCS", k, d)
			}
			b.Run(name, func(b *testing.B) {
				c := llc.CPU{Workers: workers}
				for b.Loop() {
					if err := c.Code(dst, bt, llc.DefaultParams()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "neighbourhoods/s")
				var support int
				for _, v := range dst {
					if v > 0 {
						support++
					}
				}
				b.ReportMetric(float64(support)/batch, "support")
			})
		}
	}
}
