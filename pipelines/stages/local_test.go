package stages

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/head"
)

// itemBytes spells a batch as its shard, offset and whole encoding
// (EncodeItems: ids, labels, neighbours, weights, initial and final
// states) by its SHA-256, so that two plans' batches compare byte for
// byte.
func itemBytes(it Items) string {
	return fmt.Sprintf("%s@%d:%x", it.Shard, it.Offset, sha256.Sum256(EncodeItems(it)))
}

func init() { register.Function1x1(itemBytes) }

// TestLocal: the stages run in one (Local) give every batch with the same
// bytes as the stages one after another (ComputeStats, Neighbours,
// RoundsPooled, Given), and keep the same fits (the head, the pooled fit,
// the given-label model), with the pooled start's gate open and shut,
// with and without the head and the given-label model, with no rounds,
// in sample mode (a candidate set smaller than the input) and on one
// worker and three; a duplicate id fails naming it, as Neighbours does.
func TestLocal(t *testing.T) {
	const n, c, d, k, batch = 360, 4, 5, 8, 100
	pair := func(y int32, rng *rand.Rand) int32 {
		if rng.Float64() < 0.4 {
			return (y + 1) % c
		}
		return y
	}
	rows, _, _ := noisyBlobs(n, c, d, batch, 1.2, 5, pair)
	hp := head.Params{Folds: 5, Lambda: 1, Iters: 20, WarmIters: 5, Seed: 7, Weight: 0.25}
	for _, tc := range []struct {
		name       string
		rounds     int
		workers    int
		candidates int
		gate       float64
		head       bool
		given      bool
	}{
		{name: "defaults", rounds: 3, workers: 2, gate: 0, head: true, given: true},
		{name: "gate shut, no head", rounds: 3, workers: 1, gate: 1, given: true},
		{name: "vote", rounds: 2, workers: 3, gate: 0, head: true},
		{name: "no rounds", rounds: 0, workers: 2, gate: 0, given: true},
		{name: "sample", rounds: 2, workers: 2, candidates: 150, gate: 0, given: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := pooledTestParams(c, k)
			np.Mixture.PooledGate = tc.gate
			sp := StatsParams{Candidates: tc.candidates, Seed: np.Mixture.Seed, IDColumn: "id"}
			var h *head.Params
			if tc.head {
				h = &hp
			}
			keepStaged, keepLocal := t.TempDir(), t.TempDir()
			var given func(keep string) *GivenParams
			if tc.given {
				given = func(keep string) *GivenParams {
					return &GivenParams{C: c, C0: np.Mixture.C0, Seed: np.Mixture.Seed, Workers: tc.workers, Keep: keep}
				}
			} else {
				given = func(string) *GivenParams { return nil }
			}

			p, s := beam.NewPipelineWithRoot()
			in := beam.CreateList(s, rows)
			stats := ComputeStats(s, in, sp)
			items := Neighbours(s, in, stats, np)
			rp := RoundsParams{Rounds: tc.rounds, Workers: tc.workers, Mixture: np.Mixture, Head: h, Keep: keepStaged}
			if h != nil {
				rp.Features = CandidateFeatures(s, in, stats)
			}
			items, fit := RoundsPooled(s, items, rp)
			if g := given(keepStaged); g != nil {
				items = Given(s, items, *g)
			}
			KeepPooled(s, fit, keepStaged)

			lp := LocalParams{Stats: sp, Neighbours: np, Rounds: rp, Given: given(keepLocal)}
			lp.Rounds.Features, lp.Rounds.Keep = beam.PCollection{}, keepLocal
			local, lfit := Local(s, in, lp)
			if !lfit.IsValid() {
				t.Fatal("Local: no pooled fit with the pooled start on")
			}
			KeepPooled(s, lfit, keepLocal)

			want := beam.ParDo(s, itemBytes, items)
			got := beam.ParDo(s, itemBytes, local)
			passert.Count(s, got, "local batches", len(rows))
			passert.Equals(s, got, want)
			ptest.RunAndValidate(t, p)

			ctx := context.Background()
			ks, err := keptio.ReadFitDir(ctx, keepStaged)
			if err != nil {
				t.Fatal(err)
			}
			kl, err := keptio.ReadFitDir(ctx, keepLocal)
			if err != nil {
				t.Fatal(err)
			}
			if ks.Pooled == nil || (tc.head && ks.Head == nil) || (tc.given && ks.Given == nil) {
				t.Fatalf("the stages kept %+v: want the pooled fit, the head where on, the given-label model where on", ks)
			}
			if !reflect.DeepEqual(ks, kl) {
				t.Errorf("kept fits differ: stages %+v, Local %+v", ks, kl)
			}
		})
	}

	t.Run("duplicate", func(t *testing.T) {
		dup := append([]schemas.Rows(nil), rows...)
		last := dup[len(dup)-1]
		last.IDs = append([]int64(nil), last.IDs...)
		last.IDs[len(last.IDs)-1] = last.IDs[0]
		dup[len(dup)-1] = last
		np := pooledTestParams(c, k)
		p, s := beam.NewPipelineWithRoot()
		in := beam.CreateList(s, dup)
		Local(s, in, LocalParams{Stats: StatsParams{Seed: 1, IDColumn: "id"}, Neighbours: np,
			Rounds: RoundsParams{Rounds: 1, Workers: 1, Mixture: np.Mixture}})
		err := ptest.Run(p)
		if err == nil || !strings.Contains(err.Error(), "id") || !strings.Contains(err.Error(), last.Shard) {
			t.Errorf("duplicate id: error %v, want one naming the id column and %s", err, last.Shard)
		}
	})
}
