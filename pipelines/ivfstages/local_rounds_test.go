package ivfstages

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestLocalRounds: all rounds in one stage (localRoundsFn) give the
// reference's states bit for bit, as the join per round does
// (TestJoinRounds), whatever order the blocks come in, spilled or not,
// skipping settled items or not; spilled, it removes the search's
// generations and sends only references of its posteriors.
func TestLocalRounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		spill bool
		tol   float64
	}{{"inline", false, 0}, {"spilled", true, 0}, {"skipping", false, 0.2}, {"skipping spilled", true, 0.2}} {
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
			fn := &localRoundsFn{RoundConf: RoundConf{Rounds: f.rounds, Mixture: f.nb.Mixture, Workers: 3, Spill: sp}}
			if err := fn.ProcessElement(context.Background(), 0, iterOf(in),
				func(bk string, rs BatchItems) { byBatch[bk] = append(byBatch[bk], rs) }); err != nil {
				t.Fatal(err)
			}
			if sp.On() {
				for _, g := range []int{genSearchIn, genSearched} {
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
		return fn.ProcessElement(context.Background(), 0, iterOf(bs), func(string, BatchItems) {})
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
	fn := &localRoundsFn{RoundConf: RoundConf{Rounds: 1, Mixture: f.nb.Mixture, Workers: 3, Spill: sp}}
	err := fn.ProcessElement(context.Background(), 0, iterOf(spilled), func(string, BatchItems) {})
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
