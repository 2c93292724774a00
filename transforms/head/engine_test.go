package head_test

import (
	"slices"
	"testing"

	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
)

// TestEngine runs relabel's rounds (engine.Run, the defaults) on linearSet
// with and without the head: the head halves the errors the neighbours
// leave, and its result does not depend on the worker count.
func TestEngine(t *testing.T) {
	const n, d, c = 600, 20, 3
	x, keys, truth, given := head.LinearSet(n, d, c, 5)
	off := make([]int32, n+1)
	for i := range off {
		off[i] = int32(i)
	}
	data := &engine.Data{Keys: keys, D: d, Features: x, Labels: given, LabelOff: off}
	// weight < 0: no head (--head off; the defaults fit one).
	run := func(weight float64, workers int) []int32 {
		o := options.Defaults()
		o.Head = options.Some(options.HeadOff)
		// The head's lift of the rounds' states, without the given-label
		// model's reading of them after the rounds.
		o.GivenLabel = options.Some(engine.GivenVote)
		eo, err := o.Engine(c)
		if err != nil {
			t.Fatal(err)
		}
		eo.Workers = workers
		if weight >= 0 {
			p := head.TestParams
			p.Weight = weight
			eo.NewComponent = head.Factory(p, c, eo.Mixture.C0, eo.Mixture.Smooth, nil)
		}
		res, err := engine.Run(data, eo, engine.Backends{})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int32, n)
		for i := range n {
			out[i], _ = res.States.Top(i)
		}
		return out
	}
	plain := run(-1, 1)
	a := head.Accuracy(plain, truth)
	t.Logf("noisy %.3f, relabel %.3f", head.Accuracy(given, truth), a)
	for _, w := range []float64{1, 0} {
		withHead := run(w, 1)
		b := head.Accuracy(withHead, truth)
		t.Logf("relabel with the head, weight %g (0: fitted): %.3f", w, b)
		if 1-b > (1-a)/2 {
			t.Errorf("weight %g: the head lifts relabel from %.3f to %.3f, want at least half of the errors gone", w, a, b)
		}
		if !slices.Equal(withHead, run(w, 2)) {
			t.Errorf("weight %g: 1 and 2 workers give other labels", w)
		}
	}
}
