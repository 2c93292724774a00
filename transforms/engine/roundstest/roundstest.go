// Package roundstest is the conformance suite every engine.Rounder runs (the
// CPU's engine.RunRound, the CUDA kernels of gpu.Rounds and their CPU
// emulator), in the manner of gonum's blas/testblas and of knntest and
// llctest: `func TestCPU(t *testing.T) { roundstest.Run(t, engine.CPU{}) }`.
//
// The reference is engine.RunRound itself (the rounds' definition is the
// CPU code: METHOD.md steps 3-7 with its sampler and MAP-EM), run on named
// batches at awkward shapes: two classes, one neighbour, zero and missing
// weights, unlabelled items and empty neighbours, the given-label anchor,
// a thousand classes, i.i.d. draws, several EM steps, flat priors (rows
// with zeros), the momentum and the own weight at their ends, the
// active-item tolerance. The batches' states
// come from the CPU's own earlier rounds, so rows have the several entries
// and remainders of a real run.
package roundstest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// Tol bounds, per item, the total variation distance (mixture.Distance,
// over every (class, label) pair of the joint pi(c) rho_c(y)) between a
// backend's next state and RunRound's. Where the draws are reproduced
// (Sampler) a backend fits EM to the same counts, so the two differ only
// by float64 rounding of the EM (a different order of sums, fused
// multiply-adds, the device's exp and log on the underflow path), carried
// into the float32 storage of packed states: about 1e-7 of a probability
// per entry. 1e-5 is a hundred times that and far below what any output
// reads (the posteriors are written as float32, the argmax needs a
// difference of 1e-3 to flip on the dev grid's states).
const Tol = 1e-5

// Sampler is implemented by a Rounder that can return the count vectors it
// draws for a round (what its EM then fits), so that the suite checks its
// generator against the CPU's draw for draw. Run checks it when r
// implements it.
type Sampler interface {
	// Samples reports whether Round draws with the backend's own sampler
	// under p (a backend may leave some settings to the CPU).
	Samples(p *mixture.Params) bool
	// Sample returns the count vectors of every item of b that runs in
	// round r (engine.Batch.Running), in item order.
	Sample(b engine.Batch, r int, p *mixture.Params) ([]mixture.Counts, error)
}

// testCase is one named batch and the parameters of its round.
type testCase struct {
	name string
	n, k int
	p    mixture.Params
	// unlabelled items (empty states) every so many; 0: none.
	unlabelledEvery int
	// zeroWeights: every third neighbour gets weight 0, every seventh item
	// all zero weights, every fifth slot no neighbour at all.
	zeroWeights bool
	// annotations per item (the anchor's weight grows with them); 0: no
	// initial states.
	annotations int
	// warm is the CPU rounds run first, so rows hold several entries.
	warm int
}

func params(c int, edit func(p *mixture.Params)) mixture.Params {
	p := mixture.DefaultParams(c)
	p.Seed = 42
	p.PooledIters = 0
	if edit != nil {
		edit(&p)
	}
	return p
}

func cases() []testCase {
	return []testCase{
		{name: "default-C20", n: 300, k: 10, p: params(20, nil), warm: 2},
		{name: "C2", n: 200, k: 10, p: params(2, nil), warm: 2},
		{name: "one-neighbour", n: 150, k: 1, p: params(10, nil), warm: 1},
		{name: "zero-weights", n: 200, k: 8, p: params(10, nil), zeroWeights: true, warm: 1},
		{name: "unlabelled", n: 200, k: 6, p: params(10, nil), unlabelledEvery: 4, warm: 0},
		{name: "unlabelled-warm", n: 200, k: 6, p: params(10, nil), unlabelledEvery: 3, warm: 2},
		{name: "anchor", n: 150, k: 6, annotations: 3, warm: 1,
			p: params(10, func(p *mixture.Params) { p.Anchor = 0.2 })},
		{name: "large-C", n: 40, k: 10, p: params(1000, nil), warm: 2},
		{name: "C0=C=3", n: 120, k: 5, p: params(3, func(p *mixture.Params) { p.C0 = 3; p.N = 5 }), warm: 1},
		{name: "iid-draws", n: 150, k: 8, p: params(20, func(p *mixture.Params) { p.Draws = mixture.IID }), warm: 1},
		{name: "em-steps-tol", n: 150, k: 8, p: params(20, func(p *mixture.Params) { p.EMIters = 6 }), warm: 1},
		{name: "em-steps-no-tol", n: 100, k: 8, p: params(20, func(p *mixture.Params) { p.EMIters = 4; p.EMTol = 0 }), warm: 1},
		{name: "gamma-0", n: 120, k: 8, p: params(20, func(p *mixture.Params) { p.Gamma = 0 }), warm: 1},
		{name: "mu-0", n: 120, k: 8, p: params(20, func(p *mixture.Params) { p.Mu = 0 }), warm: 1},
		{name: "mu-1", n: 120, k: 8, p: params(20, func(p *mixture.Params) { p.Mu = 1 }), warm: 1},
		{name: "no-min-mass", n: 120, k: 8, p: params(20, func(p *mixture.Params) { p.MinClassMass = 0 }), warm: 1},
		{name: "short-rows", n: 120, k: 8, p: params(20, func(p *mixture.Params) { p.MaxRowEntries = 1 }), warm: 2},
		{name: "L=1,N=1", n: 100, k: 4, p: params(5, func(p *mixture.Params) { p.L, p.N = 1, 1 }), warm: 1},
		// Flat priors: the M step gives categories without counts zero
		// mass, and a class without responsibility a zero denominator
		// (its uniform row).
		{name: "flat-priors", n: 150, k: 8, p: params(20, func(p *mixture.Params) { p.Alpha, p.Beta, p.EMIters = 1, 1, 3 }), warm: 2},
		{name: "active-tol", n: 200, k: 6, p: params(10, func(p *mixture.Params) { p.ActiveTol = 0.05 }), warm: 2},
		{name: "code-variant", n: 80, k: 6, p: params(10, func(p *mixture.Params) { p.Variant = mixture.Code; p.EMIters = 3 }), warm: 1},
	}
}

// Run checks r against engine.RunRound on every case: the same items run,
// every next state within Tol of RunRound's (and valid), the same Moved;
// the same draws when r is a Sampler; the same bytes on a second call and
// for the batch split in two (determinism: draws are seeded by seed, item
// key and round, never by position or time).
func Run(t *testing.T, r engine.Rounder) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			b, round := tc.batch(t)
			want, wantRan := engine.RunRound(b, round, 2, nil, &tc.p)
			got, ran, err := r.Round(b, round, &tc.p)
			if err != nil {
				t.Fatalf("Round: %v", err)
			}
			if ran != wantRan {
				t.Errorf("%d items ran, RunRound ran %d", ran, wantRan)
			}
			compare(t, &got, &want, &tc.p)
			if s, ok := r.(Sampler); ok && s.Samples(&tc.p) {
				checkSamples(t, s, b, round, &tc.p)
			}
			again, _, err := r.Round(b, round, &tc.p)
			if err != nil {
				t.Fatalf("second Round: %v", err)
			}
			if i := firstDiff(&got, &again, 0, b.N); i >= 0 {
				t.Errorf("a second call differs at item %d", i)
			}
			checkSplit(t, r, b, round, &tc.p, &got)
		})
	}
}

// batch builds tc's batch and the round to run: states start from labels
// (mixture.State.Init) and go through tc.warm CPU rounds; every item's
// neighbours are other items of the batch, weights from a seeded generator.
func (tc testCase) batch(t testing.TB) (engine.Batch, int) {
	t.Helper()
	p := &tc.p
	if err := p.Validate(); err != nil {
		t.Fatalf("case %s: %v", tc.name, err)
	}
	rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.k)))
	n, k, c := tc.n, tc.k, p.C
	var own, init mixture.States
	var st mixture.State
	truth := make([]int32, n)
	for i := range truth {
		truth[i] = int32(rng.IntN(c))
	}
	labelsOf := func(i int) []int32 {
		if tc.unlabelledEvery > 0 && i%tc.unlabelledEvery == 1 {
			return nil
		}
		m := max(tc.annotations, 1)
		ls := make([]int32, m)
		for a := range ls {
			ls[a] = truth[i]
			if rng.Float64() < 0.3 {
				ls[a] = int32(rng.IntN(c))
			}
		}
		return ls
	}
	ann := make([]int, n)
	for i := 0; i < n; i++ {
		ls := labelsOf(i)
		ann[i] = len(ls)
		st.Init(ls, c, p.C0, p.Smooth)
		own.Append(&st)
	}
	if tc.annotations > 0 {
		init = own
		own = mixture.States{}
		own.Concat([]mixture.States{init})
	}
	neigh := make([]int32, n*k)
	weight := make([]float64, n*k)
	for i := 0; i < n; i++ {
		for j := 0; j < k; j++ {
			// Neighbours mostly of the same true class, as a kNN finds them.
			x := rng.IntN(n)
			for try := 0; try < 4 && truth[x] != truth[i]; try++ {
				x = rng.IntN(n)
			}
			if x == i {
				x = (x + 1) % n
			}
			neigh[i*k+j] = int32(x)
			weight[i*k+j] = rng.Float64()
			if tc.zeroWeights {
				switch {
				case i%7 == 3:
					weight[i*k+j] = 0
				case j%3 == 1:
					weight[i*k+j] = 0
				case (i+j)%5 == 2:
					neigh[i*k+j] = -1
				}
			}
		}
	}
	b := engine.Batch{N: n, K: k, Own: &own}
	if tc.annotations > 0 {
		b.Init = &init
	}
	b.Annotations = func(i int) int { return ann[i] }
	// Keys far apart and not the positions, so that seeding by position
	// would show.
	b.Key = func(i int) uint64 { return uint64(i)*7919 + 1_000_003 }
	b.Neighbour = func(i, j int) (*mixture.States, int, float64) {
		if x := neigh[i*k+j]; x >= 0 {
			return b.Own, int(x), weight[i*k+j]
		}
		return nil, 0, 0
	}
	for r := 0; r < tc.warm; r++ {
		next, _ := engine.RunRound(b, r, 2, nil, p)
		own = next
		b.Own = &own
	}
	return b, tc.warm
}

// compare checks got against RunRound's want item by item.
func compare(t *testing.T, got, want *mixture.States, p *mixture.Params) {
	t.Helper()
	if got.Len() != want.Len() {
		t.Fatalf("%d states, want %d", got.Len(), want.Len())
	}
	if (len(got.Moved) == 0) != (len(want.Moved) == 0) {
		t.Fatalf("Moved of %d items, want %d", len(got.Moved), len(want.Moved))
	}
	var g, w mixture.State
	same, worst, worstAt, bad := 0, 0.0, -1, 0
	for i := 0; i < want.Len(); i++ {
		if firstDiff(got, want, i, i+1) < 0 {
			same++
		}
		got.Get(&g, i)
		want.Get(&w, i)
		if err := g.Check(p.C); err != nil && w.Check(p.C) == nil {
			t.Errorf("item %d: invalid state: %v", i, err)
		}
		d := mixture.Distance(&g, &w, p.C)
		if math.IsNaN(d) || d > worst {
			worst, worstAt = d, i
		}
		if !(d <= Tol) {
			bad++
			if bad <= 3 {
				t.Errorf("item %d: total variation %.3g from RunRound's state, want <= %g:\n got %s\nwant %s", i, d, Tol, show(&g), show(&w))
			}
		}
		if len(want.Moved) > 0 && math.Abs(float64(got.Moved[i]-want.Moved[i])) > Tol {
			t.Errorf("item %d: Moved %g, want %g", i, got.Moved[i], want.Moved[i])
		}
	}
	t.Logf("%d of %d states bit for bit RunRound's; largest distance %.3g (item %d)", same, want.Len(), worst, worstAt)
}

// firstDiff returns the first item of [lo, hi) whose packed state differs
// in a bit between a and b (-1: none).
func firstDiff(a, b *mixture.States, lo, hi int) int {
	for i := lo; i < hi; i++ {
		ca0, ca1 := a.ItemOff[i], a.ItemOff[i+1]
		cb0, cb1 := b.ItemOff[i], b.ItemOff[i+1]
		if ca1-ca0 != cb1-cb0 {
			return i
		}
		for e := int32(0); e < ca1-ca0; e++ {
			ea, eb := ca0+e, cb0+e
			if a.Class[ea] != b.Class[eb] || math.Float32bits(a.Pi[ea]) != math.Float32bits(b.Pi[eb]) ||
				math.Float32bits(a.Rem[ea]) != math.Float32bits(b.Rem[eb]) {
				return i
			}
			ra, rb := a.RowOff[ea:ea+2], b.RowOff[eb:eb+2]
			if !slices.Equal(a.Cat[ra[0]:ra[1]], b.Cat[rb[0]:rb[1]]) {
				return i
			}
			pa, pb := a.P[ra[0]:ra[1]], b.P[rb[0]:rb[1]]
			if len(pa) != len(pb) {
				return i
			}
			for x := range pa {
				if math.Float32bits(pa[x]) != math.Float32bits(pb[x]) {
					return i
				}
			}
		}
	}
	return -1
}

func show(s *mixture.State) string {
	out := ""
	for k, c := range s.Class {
		r := &s.Rows[k]
		out += fmt.Sprintf("[%d %.6g: %v %v rem %.6g] ", c, s.Pi[k], r.Cat, r.P, r.Rem)
	}
	return out
}

// checkSamples compares s's draws with the CPU sampler's on the same
// mixture (engine.Batch.Flatten: Round's components and weights), vector
// for vector.
func checkSamples(t *testing.T, s Sampler, b engine.Batch, r int, p *mixture.Params) {
	t.Helper()
	got, err := s.Sample(b, r, p)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	want := ReferenceSamples(b, r, p)
	if len(got) != len(want) {
		t.Fatalf("Sample: %d items' counts, want %d", len(got), len(want))
	}
	bad := 0
	for i := range want {
		if msg := diffCounts(&got[i], &want[i]); msg != "" {
			bad++
			if bad <= 3 {
				t.Errorf("item %d's draws differ from the CPU sampler's: %s", i, msg)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d items' draws differ", bad, len(want))
	}
}

// ReferenceSamples is what the CPU's sampler draws for the running items
// of b in round r (mixture.Round's draws, before EM), in item order. Items
// whose mixture is empty get no vectors.
func ReferenceSamples(b engine.Batch, r int, p *mixture.Params) []mixture.Counts {
	run := b.Running(p)
	var f engine.Flat
	b.Flatten(&f, run, p)
	out := make([]mixture.Counts, len(run))
	var sm mixture.Sampler
	var comps []mixture.State
	for t := range run {
		lo, hi := int(f.CompOff[t]), int(f.CompOff[t+1])
		comps = slices.Grow(comps[:0], hi-lo)[:hi-lo]
		ptrs := make([]*mixture.State, hi-lo)
		for j := lo; j < hi; j++ {
			f.Sources[f.CompSrc[j]].Get(&comps[j-lo], int(f.CompAt[j]))
			ptrs[j-lo] = &comps[j-lo]
		}
		sm.Seed(p.Seed, f.Keys[t], r)
		sm.Draws = p.Draws
		out[t].Reset()
		if !sm.SetMixture(ptrs, f.CompW[lo:hi]) {
			continue
		}
		sm.Sample(&out[t], p.L, p.N, p.C)
	}
	return out
}

func diffCounts(a, b *mixture.Counts) string {
	if a.Len() != b.Len() {
		return fmt.Sprintf("%d distinct vectors, want %d", a.Len(), b.Len())
	}
	switch {
	case !slices.Equal(a.Off, b.Off):
		return fmt.Sprintf("offsets %v, want %v", a.Off, b.Off)
	case !slices.Equal(a.Cat, b.Cat):
		return fmt.Sprintf("categories %v, want %v", a.Cat, b.Cat)
	case !slices.Equal(a.Cnt, b.Cnt):
		return fmt.Sprintf("counts %v, want %v", a.Cnt, b.Cnt)
	case !slices.Equal(a.W, b.W):
		return fmt.Sprintf("multiplicities %v, want %v", a.W, b.W)
	case !slices.Equal(a.Trials, b.Trials):
		return fmt.Sprintf("trials %v, want %v", a.Trials, b.Trials)
	}
	return ""
}

// checkSplit runs b as two batches, [0, h) and [h, n), each reading the
// same neighbours' states, and wants the same bytes as the whole batch.
func checkSplit(t *testing.T, r engine.Rounder, b engine.Batch, round int, p *mixture.Params, whole *mixture.States) {
	t.Helper()
	h := b.N/3 + 1
	var parts []mixture.States
	for _, span := range [][2]int{{0, h}, {h, b.N}} {
		lo, hi := span[0], span[1]
		var own, init mixture.States
		own.Reset()
		init.Reset()
		for i := lo; i < hi; i++ {
			own.AppendFrom(b.Own, i)
			if b.Init != nil {
				init.AppendFrom(b.Init, i)
			}
		}
		if len(b.Own.Moved) > 0 {
			own.Moved = append([]float32(nil), b.Own.Moved[lo:hi]...)
		} else {
			own.Moved = nil
		}
		sub := engine.Batch{N: hi - lo, K: b.K, Own: &own,
			Neighbour:   func(i, j int) (*mixture.States, int, float64) { return b.Neighbour(i+lo, j) },
			Annotations: func(i int) int { return b.Annotations(i + lo) },
			Key:         func(i int) uint64 { return b.Key(i + lo) },
		}
		if b.Init != nil {
			sub.Init = &init
		}
		got, _, err := r.Round(sub, round, p)
		if err != nil {
			t.Fatalf("Round of items %d..%d: %v", lo, hi, err)
		}
		parts = append(parts, got)
	}
	var joined mixture.States
	joined.Concat(parts)
	if i := firstDiff(&joined, whole, 0, b.N); i >= 0 {
		t.Errorf("the batch split at %d differs from the whole batch at item %d", h, i)
	}
}

// NewBatch is a batch of n items with k neighbours each for parameters p
// (its seed included), their states after warm CPU rounds, built as Run's
// cases are (neighbours mostly of the item's class, 30% of labels
// flipped), and the round to run next: for benchmarks at a named size.
func NewBatch(tb testing.TB, n, k int, p mixture.Params, warm int) (engine.Batch, int) {
	return testCase{name: fmt.Sprintf("n=%d,k=%d", n, k), n: n, k: k, p: p, warm: warm}.batch(tb)
}

// Agreement returns the share of items whose packed state in got is want's
// bit for bit, and the largest total variation between the two.
func Agreement(got, want *mixture.States, c int) (same, worst float64) {
	var g, w mixture.State
	n := 0
	for i := 0; i < want.Len(); i++ {
		if firstDiff(got, want, i, i+1) < 0 {
			n++
			continue
		}
		got.Get(&g, i)
		want.Get(&w, i)
		if d := mixture.Distance(&g, &w, c); d > worst || math.IsNaN(d) {
			worst = d
		}
	}
	return float64(n) / float64(max(want.Len(), 1)), worst
}
