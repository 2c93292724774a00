package crowd

import (
	"math"
	"testing"
)

// TestVoteAccuracy: the moment equation's solution, at its ends and inside.
func TestVoteAccuracy(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    float64
		C    int
		want float64
	}{
		{"all agree", 1, 5, 1},
		{"chance", 0.2, 5, 0.2},
		{"below chance", 0.1, 5, 0.2},
		{"q = .7, C = 4", .7*.7 + .3*.3/3, 4, .7},
		{"q = .6, C = 2", .6*.6 + .4*.4, 2, .6},
	} {
		if got := VoteAccuracy(tc.a, tc.C); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: VoteAccuracy(%g, %d) = %g, want %g", tc.name, tc.a, tc.C, got, tc.want)
		}
	}
}

// TestChoiceLadder: each richer model is taken only on a gain beyond one
// standard error over the one below, and nothing without scored items.
func TestChoiceLadder(t *testing.T) {
	add := func(e *Evidence, n int, ll [numChoices]float64, jitter float64) {
		for i := 0; i < n; i++ {
			d := jitter * float64(i%2*2-1)
			e.Add([numChoices]float64{ll[0] + d, ll[1] - d, ll[2] + d})
		}
	}
	for _, tc := range []struct {
		name   string
		n      int
		ll     [numChoices]float64
		jitter float64
		want   Choice
	}{
		{"no items", 0, [numChoices]float64{}, 0, Vote},
		{"annotators far ahead", 100, [numChoices]float64{-3, -2, -1}, 0.1, Annotators},
		{"pool ahead, annotators no better", 100, [numChoices]float64{-3, -2, -2}, 0.1, Pooled},
		{"pool ahead, annotators within noise", 100, [numChoices]float64{-3, -2, -1.99}, 1, Pooled},
		{"nothing beyond the vote", 100, [numChoices]float64{-2, -2.5, -1}, 0.1, Vote},
	} {
		var e Evidence
		add(&e, tc.n, tc.ll, tc.jitter)
		if got := e.Choice(); got != tc.want {
			g1, s1 := e.Gain(Pooled)
			g2, s2 := e.Gain(Annotators)
			t.Errorf("%s: chose %v, want %v (pool %.2f ± %.2f, annotators %.2f ± %.2f)", tc.name, got, tc.want, g1, s1, g2, s2)
		}
	}
}

// TestSingleLabel: with one label per item nothing is scored, the vote is
// chosen and every item keeps its label, whatever its annotator.
func TestSingleLabel(t *testing.T) {
	const C = 5
	cr := Simulate(2000, C, 3, testCrowd(), 21)
	var it Items
	it.Off = []int32{0}
	for i := 0; i < cr.Items.Len(); i++ {
		a, l := cr.Items.Item(i)
		it.Annotator = append(it.Annotator, a[i%3])
		it.Label = append(it.Label, l[i%3])
		it.Off = append(it.Off, int32(len(it.Label)))
	}
	res, err := Fit(&it, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choice != Vote || res.Evidence.Items != 0 {
		t.Fatalf("chose %v on %d scored items, want the vote on none", res.Choice, res.Evidence.Items)
	}
	for i := 0; i < it.Len(); i++ {
		if _, lab := it.Item(i); argmax(res.Posterior[i*C:(i+1)*C]) != int(lab[0]) {
			t.Fatalf("item %d: %d, its only label %d", i, argmax(res.Posterior[i*C:(i+1)*C]), lab[0])
		}
	}
}

// TestChoiceDenseCrowd: busy annotators with matrices of their own (the
// simulated crowd of TestRecover, 5 labels per item): the annotators'
// model predicts held-out labels far better than the pool and the vote.
func TestChoiceDenseCrowd(t *testing.T) {
	const C = 6
	cr := Simulate(3000, C, 5, testCrowd(), 22)
	res, err := Fit(&cr.Items, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choice != Annotators || res.Evidence.Items != 3000 {
		t.Errorf("chose %v on %d scored items, want the annotators' model on 3000", res.Choice, res.Evidence.Items)
	}
}
