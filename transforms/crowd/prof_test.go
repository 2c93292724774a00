package crowd

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

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

func TestProfFit(t *testing.T) {
	if os.Getenv("CROWD_PROF") == "" {
		t.Skip()
	}
	cr := benchCrowd(20000, 2000)
	for _, s := range []float64{0, 1, 2, 4, 8, 32} {
		t0 := time.Now()
		res, err := Fit(&cr.Items, nil, Params{C: 10, Strength: s})
		if err != nil {
			t.Fatal(err)
		}
		sp, ad := 0, 0
		for _, s := range res.Model.Summarise(Params{}) {
			if s.Spammer {
				sp++
			}
			if s.Adversary {
				ad++
			}
		}
		t.Logf("s=%g fit %v acc %.4f oracle %.4f strength %.1f spam %d adv %d", s, time.Since(t0), accuracy(res.Posterior, cr.Truth, 10), oracle(cr, 10), res.Model.Strength, sp, ad)
	}
}
