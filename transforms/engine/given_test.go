package engine_test

import (
	"math/rand/v2"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// TestGivenDoesNoHarm: on clean labels of overlapping classes the
// given-label model changes at most 1% of them, and half as many as the
// rounds alone; at 5% noise it fixes most wrong labels and breaks
// few right ones; and the default output (the final states) is what it
// was without the model.
func TestGivenDoesNoHarm(t *testing.T) {
	const n, d, c = 1200, 2, 6
	for _, tc := range []struct {
		name       string
		rate       float64
		maxChanged float64
		minAcc     float64
	}{
		{"clean", 0, 0.01, 0.99},
		{"5% noise", 0.05, 0.07, 0.98},
	} {
		rate := tc.rate
		data, truth := blobs(n, c, d, 3, func(y int32, u float64, rng *rand.Rand) int32 {
			if u < rate {
				return (y + 1 + int32(rng.IntN(c-1))) % c
			}
			return y
		})
		eo := options()
		eo.Mixture = mixture.DefaultParams(c)
		eo.Mixture.Seed = 1
		eo.Weighting = engine.Blend
		eo.Given = true
		res, err := engine.Run(data, eo, engine.Backends{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Given == nil || res.Given.Items != n {
			t.Fatalf("%s: fit %+v, want one over %d items", tc.name, res.Given, n)
		}
		var changed, right int
		for i := range n {
			top, _ := res.States.Top(i)
			if top != data.Labels[i] {
				changed++
			}
			if top == truth[i] {
				right++
			}
		}
		ch, acc := float64(changed)/n, float64(right)/n
		t.Logf("%s: %.4f changed, %.4f right, neighbour temperature %v", tc.name, ch, acc, res.Given.T)
		if ch > tc.maxChanged || acc < tc.minAcc {
			t.Errorf("%s: %.4f of the labels changed (want <= %.3f), %.4f right (want >= %.3f)", tc.name, ch, tc.maxChanged, acc, tc.minAcc)
		}
		// Off, Run returns the final states as before.
		eo.Given = false
		plain, err := engine.Run(data, eo, engine.Backends{})
		if err != nil {
			t.Fatal(err)
		}
		if plain.Given != nil || plain.States.Len() != n || len(plain.States.Rem) == 0 {
			t.Errorf("%s: without the model: fit %v, %d states", tc.name, plain.Given, plain.States.Len())
		}
		var plainChanged int
		for i := range n {
			if top, _ := plain.States.Top(i); top != data.Labels[i] {
				plainChanged++
			}
		}
		t.Logf("%s: without the model %.4f changed", tc.name, float64(plainChanged)/n)
		// The overlapping classes make the rounds alone overwrite right
		// labels at the boundaries; the model keeps most of them.
		if tc.rate == 0 && 2*changed > plainChanged {
			t.Errorf("%s: %d labels changed with the model, %d without: want at most half", tc.name, changed, plainChanged)
		}
	}
}

func TestParseGivenModel(t *testing.T) {
	for _, s := range []string{"vote", "bayes"} {
		m, err := engine.ParseGivenModel(s)
		if err != nil || m.String() != s {
			t.Errorf("%q: %v, %v", s, m, err)
		}
	}
	if _, err := engine.ParseGivenModel("Bayes"); err == nil {
		t.Error(`"Bayes": no error`)
	}
}
