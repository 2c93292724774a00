//go:build cuda || cudaemu

package gpu

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/engine/roundstest"
	"github.com/relabel/relabel/transforms/mixture"
)

// BenchmarkRounds times one round (sample + MAP-EM of every item) at
// relabel's defaults (C 20, K 10) on the device (Rounds) and on all the
// machine's cores (engine.CPU), reporting items/s. The items are
// RELABEL_ROUNDS_ITEMS (default 20,000; the device check runs 1,000,000,
// a million rows' worth). The device's run also reports the share of items
// whose next state is the CPU's bit for bit and the largest total
// variation from it (roundstest.Tol bounds it). Under cudaemu it measures
// the emulator.
func BenchmarkRounds(b *testing.B) {
	needDevice(b)
	n := 20000
	if s := os.Getenv("RELABEL_ROUNDS_ITEMS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("RELABEL_ROUNDS_ITEMS=%q: want a positive number of items", s)
		}
		n = v
	}
	const c, k = 20, 10
	p := mixture.DefaultParams(c)
	p.Seed = 42
	bt, r := roundstest.NewBatch(b, n, k, p, 1)
	want, _ := engine.RunRound(bt, r, runtime.GOMAXPROCS(0), nil, &p)
	for _, x := range []struct {
		name string
		r    engine.Rounder
	}{{"cuda", Rounds{}}, {"cpu", engine.CPU{}}} {
		b.Run(fmt.Sprintf("%s/items=%d,C=%d,K=%d", x.name, n, c, k), func(b *testing.B) {
			var got mixture.States
			for b.Loop() {
				var err error
				if got, _, err = x.r.Round(bt, r, &p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
			if x.name == "cuda" {
				same, worst := roundstest.Agreement(&got, &want, c)
				b.ReportMetric(same, "same-as-cpu")
				b.ReportMetric(worst, "max-tv")
			}
		})
	}
}
