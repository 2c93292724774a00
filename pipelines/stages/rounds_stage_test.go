package stages

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/engine/roundstest"
	"github.com/relabel/relabel/transforms/mixture"
)

// roundBatches are n items in batches of size, every item a candidate
// (candidate index = item index) with k random neighbours and c classes,
// starting from its noisy label: the rounds stage's input without a
// search.
func roundBatches(n, size, k int, p *mixture.Params) []Items {
	rng := rand.New(rand.NewPCG(3, 4))
	var out []Items
	var st mixture.State
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		it := Items{K: k, LabelOff: []int32{0}}
		it.State.Reset()
		for i := lo; i < hi; i++ {
			it.IDs = append(it.IDs, int64(1000+7*i))
			y := int32(i % p.C)
			if rng.Float64() < 0.2 {
				y = int32(rng.IntN(p.C))
			}
			it.Labels = append(it.Labels, y)
			it.LabelOff = append(it.LabelOff, int32(len(it.Labels)))
			it.Cand = append(it.Cand, int32(i))
			for range k {
				it.Neigh = append(it.Neigh, int32(rng.IntN(n)))
				it.Weight = append(it.Weight, 1/float64(k))
			}
			st.Init([]int32{y}, p.C, p.C0, p.Smooth)
			it.State.Append(&st)
		}
		out = append(out, it)
	}
	return out
}

// TestRoundsRounder: the rounds stage runs every batch's round through the
// Rounder Setup resolved (one that counts its calls here) with the CPU's
// states, a failing one fails the stage naming the round, and Setup
// resolves the CPU with the stage's workers and scratch, or fails on a
// device it does not know.
func TestRoundsRounder(t *testing.T) {
	const n, size, k, rounds = 90, 25, 5, 3
	p := testNeighbourParams(k).Mixture
	batches := roundBatches(n, size, k, &p)
	run := func(rounder engine.Rounder) ([]Items, error) {
		f := &roundsFn{Rounds: rounds, Mixture: p, Workers: 2, rounder: rounder}
		var out []Items
		err := f.run(context.Background(), append([]Items(nil), batches...), nil, func(it Items) { out = append(out, it) })
		return out, err
	}
	want, err := run(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &roundstest.Counter{}
	got, err := run(c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Calls() != int64(rounds*len(batches)) || c.Items() != rounds*n {
		t.Errorf("the Rounder ran %d batches of %d items, want %d of %d", c.Calls(), c.Items(), rounds*len(batches), rounds*n)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the states through the Rounder differ from the CPU's")
	}
	lost := errors.New("device lost")
	if _, err := run(&roundstest.Counter{Err: lost}); !errors.Is(err, lost) || !strings.Contains(err.Error(), "round 0") {
		t.Errorf("a failing Rounder: error %v, want the round and %v", err, lost)
	}

	f := &roundsFn{Workers: 3, Device: "cpu"}
	if err := f.Setup(); err != nil {
		t.Fatal(err)
	}
	if f.rounder != engine.Rounder(engine.CPU{Workers: 3, Scratch: &f.scratch}) {
		t.Errorf("--device cpu: Setup resolved %#v, want engine.CPU on the stage's workers and scratch", f.rounder)
	}
	if !gpu.Available() { // the default build: auto is the CPU
		for _, device := range []string{"auto", ""} {
			f := &roundsFn{Workers: 3, Device: device}
			if err := f.Setup(); err != nil || f.rounder != engine.Rounder(engine.CPU{Workers: 3, Scratch: &f.scratch}) {
				t.Errorf("--device %q without a GPU: Setup resolved %#v (%v), want engine.CPU", device, f.rounder, err)
			}
		}
	}
	if err := (&roundsFn{Device: "tpu"}).Setup(); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("--device tpu: Setup: %v, want an error naming it", err)
	}
}
