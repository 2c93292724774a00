package engine_test

import (
	"reflect"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// TestUpdateIsRun: an Update of every item, its neighbours the items
// themselves, computes Run's states bit for bit, with every item running
// each round and, at --active-tol 0.05, the same items skipped as Run skips
// (the lake's rounds once skipped none: issue 36).
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
		got, ran := up.Run(o.Rounds, 2, nil, &o.Mixture)
		if !reflect.DeepEqual(got, res.States) {
			t.Errorf("active-tol %g: the update's states differ from Run's", tol)
		}
		if ran != res.ItemRounds || (tol == 0) != (ran == int64(n*o.Rounds)) {
			t.Errorf("active-tol %g: %d item-rounds, Run %d, of %d", tol, ran, res.ItemRounds, n*o.Rounds)
		}
	}
}
