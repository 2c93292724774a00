package pipelines_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/mixture"
)

// The generators below make one element of each float-carrying type from a
// seed, deterministically, and record the seed in the element, so that after
// a shuffle the receiver can rebuild what was sent and compare field by field.
// Sizes are those of real elements (a 512-row batch of d = 64, K = 10; a
// candidate set of 4,000 x 64): Prism's default coder would take seconds on
// them, a bulk coder milliseconds.

func genStates(r *rand.Rand, n int) mixture.States {
	var s mixture.States
	s.ItemOff = []int32{0}
	s.RowOff = []int32{0}
	for i := 0; i < n; i++ {
		for c := 0; c < 1+r.IntN(4); c++ {
			s.Class = append(s.Class, r.Int32N(10))
			s.Pi = append(s.Pi, r.Float32())
			s.Rem = append(s.Rem, r.Float32())
			for e := 0; e < r.IntN(5); e++ {
				s.Cat = append(s.Cat, r.Int32N(10))
				s.P = append(s.P, r.Float32())
			}
			s.RowOff = append(s.RowOff, int32(len(s.Cat)))
		}
		s.ItemOff = append(s.ItemOff, int32(len(s.Class)))
	}
	return s
}

func genItems(seed int, emit func(stages.Items)) {
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	n, k := 512, 10
	it := stages.Items{Shard: fmt.Sprintf("gs://b/part-%04d.parquet", seed), Offset: int64(seed), K: k, LabelOff: []int32{0}}
	if seed%2 == 1 {
		it.IDKind, it.Multi = schemas.IDString, true
	}
	for i := 0; i < n; i++ {
		if it.IDKind == schemas.IDString {
			it.StrIDs = append(it.StrIDs, fmt.Sprintf("item-%d-é", r.Int()))
		}
		it.IDs = append(it.IDs, r.Int64())
		for range 1 + r.IntN(3) {
			it.Labels = append(it.Labels, r.Int32N(11)-1)
		}
		it.LabelOff = append(it.LabelOff, int32(len(it.Labels)))
		it.Cand = append(it.Cand, r.Int32N(5000)-1)
		for range k {
			it.Neigh = append(it.Neigh, r.Int32N(5000)-1)
			it.Weight = append(it.Weight, r.NormFloat64())
		}
	}
	if seed%2 == 0 {
		it.Init = genStates(r, n)
	}
	it.State = genStates(r, n)
	emit(it)
}

func genCandStates(seed int, emit func(stages.CandStates)) {
	r := rand.New(rand.NewPCG(uint64(seed), 2))
	c := stages.CandStates{Idx: []int32{int32(seed)}, States: genStates(r, 4000)}
	for range 3999 {
		c.Idx = append(c.Idx, r.Int32N(4000))
	}
	emit(c)
}

func genCandidates(seed int, emit func(stages.Candidates)) {
	r := rand.New(rand.NewPCG(uint64(seed), 3))
	c := stages.Candidates{D: 64, Keys: []int64{int64(seed)}}
	for range 3999 {
		c.Keys = append(c.Keys, r.Int64())
	}
	for range 4000 * 64 {
		c.Features = append(c.Features, float32(r.NormFloat64()))
	}
	emit(c)
}

func genStats(seed int, emit func(stages.Stats)) {
	r := rand.New(rand.NewPCG(uint64(seed), 4))
	s := stages.Stats{N: int64(seed), D: 64, Dup: fmt.Sprintf("shardio: a.parquet row %d column \"id\": duplicate", seed)}
	for b := range 8 {
		s.Shards = append(s.Shards, fmt.Sprintf("part-%d.parquet", b))
		s.Offsets = append(s.Offsets, int64(512*b))
		s.Counts = append(s.Counts, 512)
	}
	for range 8 * 64 {
		s.Mean = append(s.Mean, r.NormFloat64())
		s.M2 = append(s.M2, r.ExpFloat64())
	}
	for i := range 4096 {
		s.Keys = append(s.Keys, r.Int64())
		s.Pos = append(s.Pos, int64(i/512)<<32|int64(i%512))
	}
	emit(s)
}

// diffFields names the top-level fields in which got and want differ.
func diffFields(got, want any) string {
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	var out []string
	for i := 0; i < g.NumField(); i++ {
		if !reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
			out = append(out, g.Type().Field(i).Name)
		}
	}
	return strings.Join(out, ", ")
}

// checkFn compares a shuffled element with a fresh one from its generator.
func checkItems(got stages.Items, emit func(string)) {
	var want stages.Items
	genItems(int(got.Offset), func(x stages.Items) { want = x })
	if d := diffFields(got, want); d != "" {
		emit(fmt.Sprintf("Items seed %d: %s differ after a shuffle", got.Offset, d))
	}
}

func checkCandStates(got stages.CandStates, emit func(string)) {
	var want stages.CandStates
	genCandStates(int(got.Idx[0]), func(x stages.CandStates) { want = x })
	if d := diffFields(got, want); d != "" {
		emit(fmt.Sprintf("CandStates seed %d: %s differ after a shuffle", got.Idx[0], d))
	}
}

func checkCandidates(got stages.Candidates, emit func(string)) {
	var want stages.Candidates
	genCandidates(int(got.Keys[0]), func(x stages.Candidates) { want = x })
	if d := diffFields(got, want); d != "" {
		emit(fmt.Sprintf("Candidates seed %d: %s differ after a shuffle", got.Keys[0], d))
	}
}

func checkStats(got stages.Stats, emit func(string)) {
	var want stages.Stats
	genStats(int(got.N), func(x stages.Stats) { want = x })
	if d := diffFields(got, want); d != "" {
		emit(fmt.Sprintf("Stats seed %d: %s differ after a shuffle", got.N, d))
	}
}

func init() {
	register.Function2x0(genItems)
	register.Function2x0(genCandStates)
	register.Function2x0(genCandidates)
	register.Function2x0(genStats)
	register.Function2x0(checkItems)
	register.Function2x0(checkCandStates)
	register.Function2x0(checkCandidates)
	register.Function2x0(checkStats)
	register.Emitter1[stages.Items]()
	register.Emitter1[stages.CandStates]()
	register.Emitter1[stages.Candidates]()
	register.Emitter1[stages.Stats]()
}

// TestBulkCodersReshuffle sends every element type that carries floats
// through a Reshuffle on Prism, so each is encoded and decoded by the runner
// with its registered coder, and checks that every field arrives unchanged.
// It also checks that the PCollections use those coders at all: Beam
// silently falls back to its row coder for an unregistered struct, which is
// correct but encodes floats one at a time.
func TestBulkCodersReshuffle(t *testing.T) {
	seeds := []int{0, 1, 2, 3, 4, 5}
	p, s := beam.NewPipelineWithRoot()
	in := beam.CreateList(s, seeds)
	for _, tc := range []struct {
		name       string
		gen, check any
	}{
		{"stages.Items", genItems, checkItems},
		{"stages.CandStates", genCandStates, checkCandStates},
		{"stages.Candidates", genCandidates, checkCandidates},
		{"stages.Stats", genStats, checkStats},
	} {
		ts := s.Scope(tc.name)
		sent := beam.ParDo(ts, tc.gen, in)
		if c := sent.Coder().String(); !strings.HasPrefix(c, tc.name) {
			t.Errorf("PCollection<%s> has coder %s, want the registered bulk coder", tc.name, c)
		}
		got := beam.Reshuffle(ts, sent)
		passert.Count(ts, got, tc.name, len(seeds))
		passert.Empty(ts, beam.ParDo(ts, tc.check, got))
	}
	ptest.RunAndValidate(t, p)
}
