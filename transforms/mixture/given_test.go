package mixture

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
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
	f, err := FitGiven(ev, given, c, 0.5, 0)
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
		f.Posterior(&st, &ev, 0, 2, nil)
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
	f.Posterior(&st, &Evidence{Class: []int32{0}, P: []float64{1}}, 2, 3, nil)
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
	if _, err := FitGiven(nil, []int32{1}, 3, 1, 0); err == nil {
		t.Error("FitGiven with mismatched lengths: no error")
	}
}

func TestSharpen(t *testing.T) {
	src := Evidence{Class: []int32{1, 4, 7}, P: []float64{0.2, 0.7, 0.1}}
	var dst Evidence
	Sharpen(&dst, &src, 1)
	if !slices.Equal(dst.P, src.P) || !slices.Equal(dst.Class, src.Class) {
		t.Errorf("power 1: %v %v, want a copy of %v %v", dst.Class, dst.P, src.Class, src.P)
	}
	Sharpen(&dst, &src, 2)
	want := []float64{0.04 / 0.54, 0.49 / 0.54, 0.01 / 0.54}
	for k := range want {
		if math.Abs(dst.P[k]-want[k]) > 1e-12 {
			t.Errorf("power 2: %v, want %v", dst.P, want)
			break
		}
	}
	if src.P[1] != 0.7 {
		t.Errorf("Sharpen changed its source: %v", src.P)
	}
	// Evidence spread thin over many classes does not underflow.
	thin := Evidence{}
	for k := range int32(1000) {
		thin.Class = append(thin.Class, k)
		thin.P = append(thin.P, 1e-3*(1+1e-6*float64(k)))
	}
	Sharpen(&dst, &thin, 10)
	var s float64
	for _, v := range dst.P {
		if math.IsNaN(v) || v <= 0 {
			t.Fatalf("power 10 of 1000 near-equal masses: %v", v)
		}
		s += v
	}
	if math.Abs(s-1) > 1e-9 || dst.P[999] <= dst.P[0] {
		t.Errorf("power 10 of near-equal masses: sum %v, order %v <= %v", s, dst.P[999], dst.P[0])
	}
}

// TestFitGivenPower: the likelihood of the given labels chooses the
// evidence's power. Where the neighbours' evidence is calibrated (each
// item's class drawn from it, its label right) it is kept as it is; where
// it understates a clean class it always points at (symmetric noise on
// the labels), it is sharpened, and the posteriors fix more labels than
// unsharpened evidence does.
func TestFitGivenPower(t *testing.T) {
	const c, n = 5, 6000
	rng := rand.New(rand.NewPCG(3, 4))
	spread := func(e *Evidence, top int32, p float64) {
		e.Class, e.P = e.Class[:0], e.P[:0]
		for k := range int32(c) {
			e.Class = append(e.Class, k)
			if k == top {
				e.P = append(e.P, p)
			} else {
				e.P = append(e.P, (1-p)/(c-1))
			}
		}
	}
	// Calibrated: the clean class is drawn from the evidence, whose
	// confidence varies from item to item; the labels are right.
	ev := make([]Evidence, n)
	given := make([]int32, n)
	for i := range n {
		top := int32(rng.IntN(c))
		spread(&ev[i], top, 0.3+0.69*rng.Float64())
		u := rng.Float64()
		for k, p := range ev[i].P {
			if u -= p; u < 0 || k == c-1 {
				given[i] = ev[i].Class[k]
				break
			}
		}
	}
	f, err := FitGiven(ev, given, c, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.Power != 1 {
		t.Errorf("calibrated evidence: power %v, want 1", f.Power)
	}
	// Understated: the evidence always points at the clean class with
	// .5 of its mass; 30% of the labels are flipped to another class.
	truth := make([]int32, n)
	for i := range n {
		truth[i] = int32(rng.IntN(c))
		spread(&ev[i], truth[i], 0.5)
		given[i] = truth[i]
		if rng.Float64() < 0.3 {
			given[i] = (truth[i] + 1 + int32(rng.IntN(c-1))) % c
		}
	}
	f, err = FitGiven(ev, given, c, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The powers' fits run on the workers: the same fit, bit for bit, on
	// one goroutine and on more than there are powers, as by
	// FitGivenPrior at the chosen power.
	for _, w := range []int{1, 3, len(GivenPowers) + 2} {
		g, err := FitGiven(ev, given, c, 1, w)
		if err != nil || !reflect.DeepEqual(g, f) {
			t.Errorf("%d workers: %+v (%v), want the fit on GOMAXPROCS %+v", w, g, err, f)
		}
	}
	if g, err := FitGivenPrior(ev, given, c, 1, f.Power, nil); err != nil || !reflect.DeepEqual(g, f) {
		t.Errorf("FitGivenPrior at power %v: %+v (%v), want %+v", f.Power, g, err, f)
	}
	if f.Power < 3 {
		t.Errorf("understated evidence: power %v, want >= 3", f.Power)
	}
	flat, err := FitGivenPrior(ev, given, c, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !(f.LogLik > flat.LogLik) {
		t.Errorf("chosen power's log-likelihood %v, power 1's %v: want larger", f.LogLik, flat.LogLik)
	}
	right := func(f *GivenFit) (r int) {
		var st State
		var ps PosteriorScratch // reused item after item, as GivenStates does
		for i := range n {
			f.Posterior(&st, &ev[i], given[i], c, &ps)
			if st.Class[0] == truth[i] {
				r++
			}
		}
		return r
	}
	if rs, rf := right(f), right(flat); rs != n || rf > n*9/10 {
		t.Errorf("understated evidence: %d of %d right at power %v, %d at power 1: want all, and power 1 to keep flipped labels", rs, n, f.Power, rf)
	}
	if _, err := FitGivenPrior(ev, given, c, 1, 0.5, nil); err == nil {
		t.Error("power 0.5: no error")
	}
}

// TestGivenFitWithoutPower: a fit kept before the evidence's power was
// chosen (Power 0) reads evidence as pooled, as a power of 1 does, and an
// incremental update of it refits at that power.
func TestGivenFitWithoutPower(t *testing.T) {
	ev := Evidence{Class: []int32{0, 1}, P: []float64{0.3, 0.7}}
	old := &GivenFit{C: 2, T: 0.5, A: []float64{.8, .2, .2, .8}, Items: 10, Mass: []float64{5, 5}}
	one := *old
	one.Power = 1
	var a, b State
	old.Posterior(&a, &ev, 0, 2, nil)
	one.Posterior(&b, &ev, 0, 2, nil)
	if !slices.Equal(a.Class, b.Class) || !slices.Equal(a.Pi, b.Pi) {
		t.Errorf("power 0: %v %v, power 1: %v %v", a.Class, a.Pi, b.Class, b.Pi)
	}
	f, err := FitGivenPrior([]Evidence{ev}, []int32{0}, 2, old.T, old.EvidencePower(), old)
	if err != nil || f.Power != 1 || f.Items != 11 {
		t.Errorf("update of a fit without a power: %+v, %v; want power 1 over 11 items", f, err)
	}
}

// TestFitGivenSharesSupports: the fits at every power share the items'
// supports and one buffer for their evidence, so choosing among all of
// GivenPowers allocates about what one fit does, not one copy of every
// item's evidence per power (which made the fit over a 200,000-item sample
// the largest thing a run held after its rounds).
func TestFitGivenSharesSupports(t *testing.T) {
	const c, n = 6, 20000
	rng := rand.New(rand.NewPCG(5, 6))
	ev := make([]Evidence, n)
	given := make([]int32, n)
	for i := range ev {
		for k := range int32(c) {
			if k%2 == int32(i%2) {
				ev[i].Class = append(ev[i].Class, k)
				ev[i].P = append(ev[i].P, 0.1+rng.Float64())
			}
		}
		ev[i].Normalise(sum(ev[i].P))
		given[i] = int32(rng.IntN(c))
	}
	allocated := func(fit func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		fit()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	one := allocated(func() {
		if _, err := FitGivenPrior(ev, given, c, 1, 2, nil); err != nil {
			t.Fatal(err)
		}
	})
	all := allocated(func() {
		if _, err := FitGiven(ev, given, c, 1, 0); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("FitGiven over %d powers: %d bytes; one power's fit: %d", len(GivenPowers), all, one)
	if all > 2*one {
		t.Errorf("FitGiven over %d powers allocated %d bytes, one power's fit %d: more than twice", len(GivenPowers), all, one)
	}
}
