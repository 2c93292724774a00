package engine_test

import (
	"cmp"
	"reflect"
	"slices"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// TestUpdateIsRun: an Update of every item, its neighbours the items
// themselves, computes Run's states bit for bit, with every item running
// each round and, at --active-tol 0.05, the same items skipped as Run skips
// (the lake's rounds once skipped none).
func TestUpdateIsRun(t *testing.T) {
	d, _ := digits(t)
	for _, tol := range []float64{0, 0.05} {
		o := options()
		o.Rounds, o.Mixture.L, o.Mixture.ActiveTol = 4, 40, tol
		res, err := engine.Run(d, o, engine.Backends{})
		if err != nil {
			t.Fatal(err)
		}
		n := d.Len()
		feats := append([]float32(nil), d.Features...)
		mean, std := engine.Moments(feats, n, d.D)
		engine.Standardise(feats, d.D, mean, std)
		cands := engine.SelectCandidates(d.Keys, 0, o.Mixture.Seed)
		nb, err := engine.Neighbours(feats, d.Keys, d.D, cands, o, engine.Backends{Searcher: knn.CPU{}, Coder: llc.CPU{}})
		if err != nil {
			t.Fatal(err)
		}
		src := make([]int32, len(nb.Index))
		for e, c := range nb.Index {
			src[e] = engine.NoNeighbour
			if c >= 0 {
				src[e] = int32(cands[c])
			}
		}
		var none mixture.States
		none.Reset()
		up := engine.Update{N: n, K: nb.K, Src: src, Weight: nb.Weight, Fixed: &none,
			Labels: func(i int) []int32 { return d.Labels[d.LabelOff[i]:d.LabelOff[i+1]] },
			Key:    func(i int) uint64 { return uint64(d.Keys[i]) },
		}
		got, ran, err := up.Run(o.Rounds, 2, nil, &o.Mixture)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, res.States) {
			t.Errorf("active-tol %g: the update's states differ from Run's", tol)
		}
		if ran != res.ItemRounds || (tol == 0) != (ran == int64(n*o.Rounds)) {
			t.Errorf("active-tol %g: %d item-rounds, Run %d, of %d", tol, ran, res.ItemRounds, n*o.Rounds)
		}
	}
}

// TestUpdateStartAndExtra: an Update of every item that starts them from
// the pooled fit (Start, with its neighbours' labels) and gives each one
// more component (Extra) computes Run's states bit for bit, Run starting
// from the same fit (its gate held open) with a Component that gives the
// same states at the same weight every round.
func TestUpdateStartAndExtra(t *testing.T) {
	d, _ := digits(t)
	o := options()
	o.Rounds, o.Mixture.L, o.Mixture.PooledGate = 3, 40, 0
	n, c := d.Len(), o.Mixture.C
	// The component: a fixed state per item, in key order as Run hands
	// the candidates to it, and in item order for the update.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(d.Keys[a], d.Keys[b]) })
	var byKey, byItem mixture.States
	byKey.Reset()
	byItem.Reset()
	var st mixture.State
	stateOf := func(i int) {
		q := make([]float64, c)
		for j := range q {
			q[j] = 0.3 / float64(c-1)
		}
		q[(d.Keys[i]*7)%int64(c)] = 0.7
		st.InitPosterior(q, nil, 1, o.Mixture.C0, o.Mixture.Smooth)
	}
	for _, i := range order {
		stateOf(i)
		byKey.Append(&st)
	}
	for i := range n {
		stateOf(i)
		byItem.Append(&st)
	}
	const ew = 0.25
	o.NewComponent = func(_ []float32, _ []int64, _ int) (engine.Component, error) {
		return func(int, *mixture.States, int, func(c, j int) (int, float64)) (*mixture.States, float64, error) {
			return &byKey, ew, nil
		}, nil
	}
	var pooled *mixture.Pooled
	o.OnPooled = func(m *mixture.Pooled) { pooled = m }
	res, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if pooled == nil {
		t.Fatal("Run fitted no pooled transition")
	}
	feats := append([]float32(nil), d.Features...)
	mean, std := engine.Moments(feats, n, d.D)
	engine.Standardise(feats, d.D, mean, std)
	cands := engine.SelectCandidates(d.Keys, 0, o.Mixture.Seed)
	nb, err := engine.Neighbours(feats, d.Keys, d.D, cands, o, engine.Backends{Searcher: knn.CPU{}, Coder: llc.CPU{}})
	if err != nil {
		t.Fatal(err)
	}
	src := make([]int32, len(nb.Index))
	for e, c := range nb.Index {
		src[e] = engine.NoNeighbour
		if c >= 0 {
			src[e] = int32(cands[c])
		}
	}
	labels := func(i int) []int32 { return d.Labels[d.LabelOff[i]:d.LabelOff[i+1]] }
	var none mixture.States
	none.Reset()
	up := engine.Update{N: n, K: nb.K, Src: src, Weight: nb.Weight, Fixed: &none,
		Labels: labels,
		Key:    func(i int) uint64 { return uint64(d.Keys[i]) },
		Start:  engine.NewPooledStarter(pooled, &o.Mixture),
		NeighbourLabels: func(i, j int) ([]int32, bool) {
			if s := src[i*nb.K+j]; s >= 0 {
				return labels(int(s)), true
			}
			return nil, false
		},
		Extra: &byItem, ExtraWeight: ew,
	}
	got, _, err := up.Run(o.Rounds, 2, nil, &o.Mixture)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, res.States) {
		t.Error("the update's states differ from Run's")
	}
	// Without the start or without the component the states differ: both
	// are applied.
	for name, u := range map[string]engine.Update{"no start": {N: up.N, K: up.K, Src: src, Weight: nb.Weight, Fixed: &none, Labels: labels, Key: up.Key, Extra: &byItem, ExtraWeight: ew},
		"no component": {N: up.N, K: up.K, Src: src, Weight: nb.Weight, Fixed: &none, Labels: labels, Key: up.Key, Start: up.Start, NeighbourLabels: up.NeighbourLabels}} {
		if other, _, _ := u.Run(o.Rounds, 2, nil, &o.Mixture); reflect.DeepEqual(other, res.States) {
			t.Errorf("%s: the same states as with it", name)
		}
	}
}
