package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/engine/roundstest"
	"github.com/relabel/relabel/transforms/mixture"
)

// TestCPURounder runs the rounds' conformance suite on the CPU backend
// (RunRound itself, so it checks the suite as much as the backend), with
// one worker and with a shared scratch.
func TestCPURounder(t *testing.T) {
	roundstest.Run(t, engine.CPU{})
	t.Run("one-worker", func(t *testing.T) {
		roundstest.Run(t, engine.CPU{Workers: 1, Scratch: &pool.Scratch[engine.RoundScratch]{}})
	})
}

// flatRounder runs RunRound's items through Flatten and Collect: a
// device's path with the CPU's mixture.Round as its kernel, so that the
// suite shows the flattening is RunRound's input bit for bit.
type flatRounder struct{}

func (flatRounder) Round(b engine.Batch, r int, p *mixture.Params) (mixture.States, int, error) {
	run := b.Running(p)
	var f engine.Flat
	b.Flatten(&f, run, p)
	var ws mixture.Workspace
	var own mixture.State
	var comps []mixture.State
	out := b.Collect(run, p, 1, func(t int, dst *mixture.State) bool {
		f.Sources[0].Get(&own, int(f.Items[t]))
		lo, hi := int(f.CompOff[t]), int(f.CompOff[t+1])
		comps = append(comps[:0], make([]mixture.State, hi-lo)...)
		for j := lo; j < hi; j++ {
			f.Sources[f.CompSrc[j]].Get(&comps[j-lo], int(f.CompAt[j]))
		}
		return ws.RoundComponents(dst, &own, comps, f.CompW[lo:hi], f.Keys[t], r, p)
	})
	return out, len(run), nil
}

// TestFlatten runs the suite on flatRounder: Flatten's components,
// weights and keys, and Collect's packing, are RunRound's.
func TestFlatten(t *testing.T) { roundstest.Run(t, flatRounder{}) }

// TestFlattenOn checks that flattening on several goroutines makes what
// Flatten makes, sources in the same order included.
func TestFlattenOn(t *testing.T) {
	p := mixture.DefaultParams(20)
	p.Anchor = 0.1
	b, _ := roundstest.NewBatch(t, 1000, 10, p, 1)
	var extra mixture.States
	extra.Concat([]mixture.States{*b.Own})
	inner := b.Neighbour
	// A second source for some neighbours, so the merge of sources shows.
	b.Neighbour = func(i, j int) (*mixture.States, int, float64) {
		ss, at, w := inner(i, j)
		if ss != nil && i > 300 && j == 2 {
			ss = &extra
		}
		return ss, at, w
	}
	run := b.Running(&p)
	var a, c engine.Flat
	b.Flatten(&a, run, &p)
	b.FlattenOn(&c, run, &p, 3)
	if !slices.Equal(a.Items, c.Items) || !slices.Equal(a.Keys, c.Keys) || !slices.Equal(a.CompOff, c.CompOff) ||
		!slices.Equal(a.CompSrc, c.CompSrc) || !slices.Equal(a.CompAt, c.CompAt) || !slices.Equal(a.CompW, c.CompW) ||
		!slices.Equal(a.Sources, c.Sources) {
		t.Errorf("FlattenOn differs from Flatten (%d and %d sources, %d and %d components)", len(a.Sources), len(c.Sources), len(a.CompW), len(c.CompW))
	}
	if len(a.Sources) != 2 {
		t.Errorf("%d sources, want 2", len(a.Sources))
	}
}

// TestWithWorkers: the CPU as gpu.Resolve gives it (the zero CPU) or none
// takes the caller's goroutines and scratch; any other Rounder is kept.
func TestWithWorkers(t *testing.T) {
	var sc pool.Scratch[engine.RoundScratch]
	want := engine.CPU{Workers: 3, Scratch: &sc}
	for name, r := range map[string]engine.Rounder{"nil": nil, "zero CPU": engine.CPU{}} {
		if got := engine.WithWorkers(r, 3, &sc); got != engine.Rounder(want) {
			t.Errorf("%s: %#v, want %#v", name, got, want)
		}
	}
	set := engine.CPU{Workers: 1}
	if got := engine.WithWorkers(set, 3, &sc); got != engine.Rounder(set) {
		t.Errorf("a CPU with its own workers: %#v, want it kept", got)
	}
	c := &roundstest.Counter{}
	if got := engine.WithWorkers(c, 3, &sc); got != engine.Rounder(c) {
		t.Errorf("another Rounder: %#v, want it kept", got)
	}
}

// TestRunRounder: Run and Update run every round through the Rounder of
// their Backends (one call a round, the states it returns), with the same
// states as the CPU's, and a failing Rounder fails them with its error.
func TestRunRounder(t *testing.T) {
	d, _ := digits(t)
	o := options()
	o.Rounds = 3
	want, err := engine.Run(d, o, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	c := &roundstest.Counter{}
	got, err := engine.Run(d, o, engine.Backends{Rounder: c})
	if err != nil {
		t.Fatal(err)
	}
	if c.Calls() != int64(o.Rounds) || c.Items() != int64(o.Rounds*d.Len()) {
		t.Errorf("Run: %d calls of %d items, want %d of %d", c.Calls(), c.Items(), o.Rounds, o.Rounds*d.Len())
	}
	if !equalStates(&got.States, &want.States) {
		t.Error("Run: the states through the Rounder differ from the CPU's")
	}
	fail := errors.New("device lost")
	if _, err := engine.Run(d, o, engine.Backends{Rounder: &roundstest.Counter{Err: fail}}); !errors.Is(err, fail) || !strings.Contains(err.Error(), "round 0") {
		t.Errorf("Run with a failing Rounder: %v, want the round and %v", err, fail)
	}

	var none mixture.States
	none.Reset()
	src := make([]int32, d.Len()*o.K)
	for e := range src {
		src[e] = engine.NoNeighbour
	}
	up := engine.Update{N: d.Len(), K: o.K, Src: src, Weight: make([]float64, len(src)), Fixed: &none,
		Labels: func(i int) []int32 { return d.Labels[d.LabelOff[i]:d.LabelOff[i+1]] },
		Key:    func(i int) uint64 { return uint64(d.Keys[i]) },
	}
	plain, _, err := up.Run(o.Rounds, 2, nil, &o.Mixture)
	if err != nil {
		t.Fatal(err)
	}
	c = &roundstest.Counter{}
	up.Rounder = c
	through, _, err := up.Run(o.Rounds, 2, nil, &o.Mixture)
	if err != nil {
		t.Fatal(err)
	}
	if c.Calls() != int64(o.Rounds) || !equalStates(&through, &plain) {
		t.Errorf("Update: %d calls (want %d), states the CPU's: %v", c.Calls(), o.Rounds, equalStates(&through, &plain))
	}
	up.Rounder = &roundstest.Counter{Err: fail}
	if _, _, err := up.Run(o.Rounds, 2, nil, &o.Mixture); !errors.Is(err, fail) {
		t.Errorf("Update with a failing Rounder: %v, want %v", err, fail)
	}
}
