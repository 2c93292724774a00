package ivfstages

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/engine/roundstest"
)

// TestLocalRounds: all rounds in one stage (localRoundsFn) give the
// reference's states bit for bit, as the join per round does
// (TestJoinRounds), whatever order the blocks come in, spilled or not,
// skipping settled items or not; spilled, it removes the search's
// generations and sends only references of its posteriors. Through a
// device's Rounder (here one that counts, on the CPU) every round is one
// call over every block, with the same states.
func TestLocalRounds(t *testing.T) {
	for _, c := range []struct {
		name     string
		spill    bool
		tol      float64
		whole    bool
		streamed bool
	}{{"inline", false, 0, false, false}, {"spilled", true, 0, false, false}, {"skipping", false, 0.2, false, false}, {"skipping spilled", true, 0.2, false, false},
		{"whole rounds", false, 0, true, false}, {"whole rounds skipping spilled", true, 0.2, true, false},
		{"streamed", true, 0, false, true}, {"streamed skipping", true, 0.2, false, true}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, 500, 64)
			f.nb.Mixture.ActiveTol = c.tol
			blocks := f.search(t, f.parts(t, 2), nil)
			_, states, _, skipped := referenceRounds(f, blocks, c.tol)
			if c.tol > 0 && skipped == 0 {
				t.Fatalf("tolerance %g: no item skipped a round; the case tests nothing", c.tol)
			}
			var sp Spill
			if c.spill {
				sp.Dir = t.TempDir()
				if err := os.MkdirAll(sp.genDir(genSearchIn), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var in []Block
			for _, b := range blocks {
				if sp.On() { // as the search emits them
					if err := sp.put(genSearched, &b, nil); err != nil {
						t.Fatal(err)
					}
				}
				in = append(in, b)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
			byBatch := map[string][]BatchItems{}
			fn := &localRoundsFn{RoundConf: RoundConf{Rounds: f.rounds, Mixture: f.nb.Mixture, Workers: 3, Spill: sp, Streamed: c.streamed}}
			counter := &roundstest.Counter{}
			if c.whole {
				fn.rounder = counter
			}
			if err := fn.ProcessElement(context.Background(), 0, stages.IterOf(in),
				func(bk string, rs BatchItems) { byBatch[bk] = append(byBatch[bk], rs) }); err != nil {
				t.Fatal(err)
			}
			if n := int64(f.rounds * len(states)); c.whole && (counter.Calls() != int64(f.rounds) || counter.Items() != n) {
				t.Errorf("the Rounder ran %d calls of %d items, want %d of %d", counter.Calls(), counter.Items(), f.rounds, n)
			}
			if sp.On() {
				gens := []int{genSearchIn, genSearched}
				for r := 1; r < f.rounds; r++ { // the streamed rounds' states
					gens = append(gens, genRouted+r)
				}
				for _, g := range gens {
					if _, err := os.Stat(sp.genDir(g)); !os.IsNotExist(err) {
						t.Errorf("generation %d still there (%v)", g, err)
					}
				}
				for bk, rs := range byBatch {
					for _, x := range rs {
						if x.Row != nil || x.Spilled.Path == "" || len(encodeBatchItems(x)) > 128 {
							t.Fatalf("batch %q: posteriors not spilled (%d bytes encoded)", bk, len(encodeBatchItems(x)))
						}
					}
				}
			}
			checkBatches(t, f, byBatch, states, rng)
		})
	}
}

// TestLocalRoundsErrors: a block asked for twice, or a neighbour whose
// block is missing, fails with the block named instead of running on.
func TestLocalRoundsErrors(t *testing.T) {
	f := newFixture(t, 500, 64)
	blocks := f.search(t, f.parts(t, 2), nil)
	var in []Block
	for _, b := range blocks {
		in = append(in, b)
	}
	slices.SortFunc(in, func(x, y Block) int { return int(x.Key - y.Key) })
	run := func(bs []Block) error {
		fn := &localRoundsFn{RoundConf: RoundConf{Rounds: 1, Mixture: f.nb.Mixture}}
		return fn.ProcessElement(context.Background(), 0, stages.IterOf(bs), func(string, BatchItems) {})
	}
	gone := errors.New("device lost")
	fn := &localRoundsFn{RoundConf: RoundConf{Rounds: 1, Mixture: f.nb.Mixture}, rounder: &roundstest.Counter{Err: gone}}
	if err := fn.ProcessElement(context.Background(), 0, stages.IterOf(in), func(string, BatchItems) {}); !errors.Is(err, gone) || !strings.Contains(err.Error(), "round 0") {
		t.Errorf("a failing Rounder: error %v, want the round and %v", err, gone)
	}
	if err := run(append(slices.Clone(in), in[0])); err == nil || !strings.Contains(err.Error(), "two blocks under one key") {
		t.Errorf("a block twice: error %v, want two blocks under one key", err)
	}
	withExt := -1
	for x := range in {
		if len(in[x].ExtKeys) > 0 {
			withExt = x
			break
		}
	}
	if withExt < 0 {
		t.Fatal("no block has external neighbours; the case tests nothing")
	}
	home := in[withExt].ExtHome[0]
	var rest []Block
	for _, b := range in {
		if b.Key != home {
			rest = append(rest, b)
		}
	}
	if err := run(rest); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("block %d absent", home)) {
		t.Errorf("block %d missing: error %v", home, err)
	}
	// A spilled block whose file is gone: unspilled on several
	// goroutines, the read's error still comes back, naming the block.
	sp := Spill{Dir: t.TempDir()}
	var spilled []Block
	for _, b := range in {
		if err := sp.put(genSearched, &b, nil); err != nil {
			t.Fatal(err)
		}
		spilled = append(spilled, b)
	}
	lost := spilled[len(spilled)/2]
	if err := os.Remove(lost.Spilled.Path); err != nil {
		t.Fatal(err)
	}
	fn = &localRoundsFn{RoundConf: RoundConf{Rounds: 1, Mixture: f.nb.Mixture, Workers: 3, Spill: sp}}
	err := fn.ProcessElement(context.Background(), 0, stages.IterOf(spilled), func(string, BatchItems) {})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("block %d", lost.Key)) {
		t.Errorf("block %d's spill file gone: error %v, want one naming the block", lost.Key, err)
	}
}

// TestTightenGC checks that the one-stage rounds' collector target holds
// while any stage runs, is restored by the last to finish, and leaves a
// user's GOGC alone.
func TestTightenGC(t *testing.T) {
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	orig := debug.SetGCPercent(137)
	defer debug.SetGCPercent(orig)
	a := tightenGC()
	if got := debug.SetGCPercent(localRoundsGCPercent); got != localRoundsGCPercent {
		t.Fatalf("GC percent during the rounds = %d, want %d", got, localRoundsGCPercent)
	}
	b := tightenGC() // a second stage at the same time
	a()
	if got := debug.SetGCPercent(localRoundsGCPercent); got != localRoundsGCPercent {
		t.Fatalf("GC percent after the first of two stages = %d, want %d", got, localRoundsGCPercent)
	}
	b()
	if got := debug.SetGCPercent(137); got != 137 {
		t.Fatalf("GC percent after both stages = %d, want 137 restored", got)
	}
	t.Setenv("GOGC", "300")
	c := tightenGC()
	if got := debug.SetGCPercent(137); got != 137 {
		t.Fatalf("with GOGC set, GC percent = %d, want the user's target untouched", got)
	}
	c()
	if got := debug.SetGCPercent(137); got != 137 {
		t.Fatalf("with GOGC set, GC percent after = %d, want 137", got)
	}
}

// TestRoundsSetup: without a GPU (--device cpu) the round stages resolve
// the CPU's Rounder on their own workers (the local rounds: one per block,
// blocks spread over the cores) and scratch; an unknown device fails
// Setup.
func TestRoundsSetup(t *testing.T) {
	l := &localRoundsFn{RoundConf: RoundConf{Workers: 3, Device: "cpu"}}
	j := &joinRoundFn{RoundConf: RoundConf{Workers: 3, Device: "cpu"}}
	for name, c := range map[string]struct {
		setup func() error
		got   *engine.Rounder
		want  engine.Rounder
	}{
		"local": {l.Setup, &l.rounder, engine.CPU{Workers: 1, Scratch: &l.scratch}},
		"join":  {j.Setup, &j.rounder, engine.CPU{Workers: 3, Scratch: &j.scratch}},
	} {
		if err := c.setup(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if *c.got != c.want {
			t.Errorf("%s: Setup resolved %#v, want %#v", name, *c.got, c.want)
		}
	}
	if err := (&overlapRoundFn{joinRoundFn: joinRoundFn{RoundConf: RoundConf{Device: "tpu"}}}).Setup(); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("--device tpu: Setup: %v, want an error naming it", err)
	}
}

// TestLocalRoundsStop: a stopped run's rounds (its context cancelled) end
// at the next block with the context's error and send nothing on, in
// memory and streamed from the spill files, instead of running every
// round first.
func TestLocalRoundsStop(t *testing.T) {
	f := newFixture(t, 500, 64)
	blocks := f.search(t, f.parts(t, 2), nil)
	for _, streamed := range []bool{false, true} {
		var sp Spill
		if streamed {
			sp.Dir = t.TempDir()
		}
		var in []Block
		for _, b := range blocks {
			if sp.On() {
				if err := sp.put(genSearched, &b, nil); err != nil {
					t.Fatal(err)
				}
			}
			in = append(in, b)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fn := &localRoundsFn{RoundConf: RoundConf{Rounds: f.rounds, Mixture: f.nb.Mixture, Workers: 2, Spill: sp, Streamed: streamed}}
		sent := 0
		err := fn.ProcessElement(ctx, 0, stages.IterOf(in), func(string, BatchItems) { sent++ })
		if !errors.Is(err, context.Canceled) || sent != 0 {
			t.Errorf("streamed %v: a stopped run's rounds: error %v and %d sent, want %v and none", streamed, err, sent, context.Canceled)
		}
	}
}
