package mixture

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFitGivenRecovers draws labels through a known transition from items
// whose evidence is sharp on their clean class, and checks that the fit
// recovers the transition.
func TestFitGivenRecovers(t *testing.T) {
	const c, n = 4, 20000
	truthA := []float64{
		.9, .1, 0, 0,
		0, .7, .3, 0,
		0, 0, .95, .05,
		.2, 0, 0, .8,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ev := make([]Evidence, n)
	given := make([]int32, n)
	for i := range n {
		y := int32(rng.IntN(c))
		for k := range int32(c) {
			p := 0.02
			if k == y {
				p = 1 - 0.02*float64(c-1)
			}
			ev[i].Class = append(ev[i].Class, k)
			ev[i].P = append(ev[i].P, p)
		}
		u := rng.Float64()
		for l := range c {
			u -= truthA[int(y)*c+l]
			if u < 0 {
				given[i] = int32(l)
				break
			}
		}
	}
	f, err := FitGiven(ev, given, c, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for x, want := range truthA {
		if got := f.A[x]; math.Abs(got-want) > 0.03 {
			t.Errorf("A[%d][%d] = %.3f, want %.3f", x/c, x%c, got, want)
		}
	}
	if f.Items != n || f.T != 0.5 || !(f.LogLik < 0) {
		t.Errorf("items %d, T %v, loglik %v", f.Items, f.T, f.LogLik)
	}
}

// TestGivenPosteriorTrust checks that the same evidence against a label
// overturns it under a noisy transition and keeps it under a clean one.
func TestGivenPosteriorTrust(t *testing.T) {
	ev := Evidence{Class: []int32{0, 1}, P: []float64{0.1, 0.9}}
	cases := []struct {
		name string
		a    []float64
		want int32
	}{
		{"labels 99% right keep the label", []float64{.99, .01, .01, .99}, 0},
		{"labels 70% right give way", []float64{.7, .3, .3, .7}, 1},
	}
	for _, tc := range cases {
		f := &GivenFit{C: 2, T: 1, A: tc.a}
		var st State
		f.Posterior(&st, &ev, 0, 2)
		if st.Class[0] != tc.want {
			t.Errorf("%s: clean %d (pi %v), want %d", tc.name, st.Class[0], st.Pi, tc.want)
		}
		if s := st.Pi[0] + st.Pi[1]; math.Abs(s-1) > 1e-12 || st.Pi[0] < st.Pi[1] {
			t.Errorf("%s: posterior %v not normalised most probable first", tc.name, st.Pi)
		}
	}
	// A label no neighbour holds is still a candidate.
	f := &GivenFit{C: 3, T: 1, A: []float64{.98, .01, .01, .01, .98, .01, 1e-9, 1e-9, 1}}
	var st State
	f.Posterior(&st, &Evidence{Class: []int32{0}, P: []float64{1}}, 2, 3)
	if st.Len() != 2 || st.ProbOf(2) <= 0 {
		t.Errorf("given label outside the evidence: classes %v pi %v, want it kept as a candidate", st.Class, st.Pi)
	}
}

func TestNeighbourEvidence(t *testing.T) {
	neigh := []State{
		{Class: []int32{2, 0}, Pi: []float64{0.75, 0.25}},
		{Class: []int32{1}, Pi: []float64{1}},
		{Class: []int32{0}, Pi: []float64{1}}, // weight 0: left out
		{},                                    // empty: left out
	}
	w := []float64{3, 1, 0, 5}
	var e Evidence
	var s GivenScratch
	NeighbourEvidence(&e, neigh, w, 1, &s)
	want := map[int32]float64{0: 0.75 * 0.25, 1: 0.25, 2: 0.75 * 0.75}
	if len(e.Class) != 3 || e.Class[0] != 0 || e.Class[1] != 1 || e.Class[2] != 2 {
		t.Fatalf("classes %v, want 0 1 2 ascending", e.Class)
	}
	for k, c := range e.Class {
		if math.Abs(e.P[k]-want[c]) > 1e-6 {
			t.Errorf("class %d: %v, want %v", c, e.P[k], want[c])
		}
	}
	// Tempering sharpens each neighbour before the mean.
	NeighbourEvidence(&e, neigh, w, 0.5, &s)
	if got, want := e.Mass(2), 0.75*0.9; math.Abs(got-want) > 1e-6 {
		t.Errorf("T 0.5: mass of class 2 %v, want %v", got, want)
	}
}

func TestGivenTemperature(t *testing.T) {
	score := make([]float64, len(GivenTemperatures))
	for j := range score {
		score[j] = -math.Abs(float64(j) - 3)
	}
	if got := GivenTemperature(score); got != GivenTemperatures[3] {
		t.Errorf("temperature %v, want %v", got, GivenTemperatures[3])
	}
	if _, err := FitGiven(nil, []int32{1}, 3, 1); err == nil {
		t.Error("FitGiven with mismatched lengths: no error")
	}
}
