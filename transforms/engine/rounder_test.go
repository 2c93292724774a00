package engine_test

import (
	"slices"
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
