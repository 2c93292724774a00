package crowd

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchCrowd is n items x 3 labels from m simulated annotators: 70% experts
// (accuracy .6-.95), 20% spammers, 10% adversaries; C = 10.
func benchCrowd(n, m int) *Crowd {
	rng := rand.New(rand.NewPCG(3, 3))
	ann := make([]SimAnnotator, m)
	for a := range ann {
		switch u := rng.Float64(); {
		case u < 0.7:
			ann[a] = SimAnnotator{Kind: Expert, Acc: 0.6 + 0.35*rng.Float64()}
		case u < 0.9:
			ann[a] = SimAnnotator{Kind: Spammer}
		default:
			ann[a] = SimAnnotator{Kind: Adversary, Acc: 0.7}
		}
	}
	return Simulate(n, 10, 3, ann, 5)
}

// BenchmarkFit is the in-memory fit (30 iterations, defaults) of n items x
// 3 annotations from 10,000 annotators, C = 10, reporting annotations x
// iterations per second: its cost is linear in annotations, plus per
// iteration a term in the annotators' nonzero counts (the prior strength's
// search).
func BenchmarkFit(b *testing.B) {
	for _, n := range []int{100_000, 300_000, 1_000_000} {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			cr := benchCrowd(n, 10000)
			b.ResetTimer()
			for range b.N {
				res, err := Fit(&cr.Items, nil, DefaultParams(10))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(accuracy(res.Posterior, cr.Truth, 10), "accuracy")
				b.ReportMetric(oracle(cr, 10), "oracle")
				b.StartTimer()
			}
			b.ReportMetric(float64(3*n*30*b.N)/b.Elapsed().Seconds(), "annotation-iterations/s")
		})
	}
}
