package mixture

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// dense expands a state's rows to C x C and pi to C, for checks against the
// sparse representation.
func dense(s *State, c int) (pi []float64, rho [][]float64) {
	pi = make([]float64, c)
	rho = make([][]float64, c)
	for k, cl := range s.Class {
		pi[cl] = s.Pi[k]
		rho[cl] = make([]float64, c)
		for x := 0; x < c; x++ {
			rho[cl][x] = s.Rows[k].Prob(int32(x), c)
		}
	}
	return pi, rho
}

func randomSparse(rng *rand.Rand, c, classes, entries int) State {
	var s State
	perm := rng.Perm(c)
	var z float64
	for _, cl := range perm[:classes] {
		p := rng.Float64() + 0.1
		z += p
		r := s.add(int32(cl), p)
		cats := rng.Perm(c)[:entries]
		var rz float64
		for _, x := range cats {
			v := rng.Float64()
			r.Cat = append(r.Cat, int32(x))
			r.P = append(r.P, v)
			rz += v
		}
		r.Rem = rng.Float64()
		if entries == c {
			r.Rem = 0
		}
		rz += r.Rem
		for e := range r.P {
			r.P[e] /= rz
		}
		r.Rem /= rz
	}
	for k := range s.Pi {
		s.Pi[k] /= z
	}
	return s
}

// TestBlendExact checks the sparse blend against the dense formula
// g*a + (1-g)*b for pi and for the rows of classes present on both sides.
func TestBlendExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 50; trial++ {
		c := 2 + rng.IntN(12)
		a := randomSparse(rng, c, 1+rng.IntN(c), rng.IntN(c+1))
		b := randomSparse(rng, c, 1+rng.IntN(c), rng.IntN(c+1))
		g := rng.Float64()
		var dst State
		Blend(&dst, &a, &b, g, c)
		if err := dst.Check(c); err != nil {
			t.Fatalf("trial %d: blended state invalid: %v", trial, err)
		}
		pa, ra := dense(&a, c)
		pb, rb := dense(&b, c)
		pd, rd := dense(&dst, c)
		for x := 0; x < c; x++ {
			if want := g*pa[x] + (1-g)*pb[x]; math.Abs(pd[x]-want) > 1e-12 {
				t.Errorf("trial %d: pi[%d] = %g, want %g", trial, x, pd[x], want)
			}
			if ra[x] == nil || rb[x] == nil {
				continue
			}
			for y := 0; y < c; y++ {
				if want := g*ra[x][y] + (1-g)*rb[x][y]; math.Abs(rd[x][y]-want) > 1e-12 {
					t.Errorf("trial %d: rho[%d][%d] = %g, want %g", trial, x, y, rd[x][y], want)
				}
			}
		}
	}
}

func TestTruncate(t *testing.T) {
	var s State
	for k, p := range []float64{0.1, 0.4, 0.05, 0.4, 0.05} {
		r := s.add(int32(k), p)
		r.Cat = []int32{0, 1, 2, 3}
		r.P = []float64{0.5, 0.2, 0.2, 0.05}
		r.Rem = 0.05
	}
	s.Truncate(3, 2)
	if got, want := s.Class, []int32{1, 3, 0}; !equalInt32(got, want) {
		t.Errorf("classes after truncation = %v, want %v (most probable first, ties to the lower class)", got, want)
	}
	if math.Abs(s.Pi[0]-0.4/0.9) > 1e-12 || math.Abs(s.Pi[2]-0.1/0.9) > 1e-12 {
		t.Errorf("pi not renormalised: %v", s.Pi)
	}
	for k := range s.Rows {
		r := &s.Rows[k]
		if len(r.Cat) != 2 || math.Abs(r.Rem-0.3) > 1e-12 {
			t.Errorf("row %d: %d entries, remainder %g; want 2 entries and the rest (0.3) folded into the remainder", k, len(r.Cat), r.Rem)
		}
	}
	if err := s.Check(5); err != nil {
		t.Error(err)
	}
}

func TestInit(t *testing.T) {
	cases := []struct {
		name   string
		labels []int32
		class  []int32
		pi     []float64
	}{
		{"one label", []int32{3}, []int32{3}, []float64{1}},
		{"annotations", []int32{2, 1, 2, -1, 2}, []int32{2, 1}, []float64{0.75, 0.25}},
		{"unlabelled", []int32{-1}, nil, nil},
		{"none", nil, nil, nil},
	}
	for _, tc := range cases {
		var s State
		s.Init(tc.labels, 5, 3, 0.1)
		if !equalInt32(s.Class, tc.class) {
			t.Errorf("%s: classes %v, want %v", tc.name, s.Class, tc.class)
		}
		for k := range tc.pi {
			if math.Abs(s.Pi[k]-tc.pi[k]) > 1e-12 {
				t.Errorf("%s: pi %v, want %v", tc.name, s.Pi, tc.pi)
			}
		}
		if err := s.Check(5); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestPackedRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var ss States
	var want []State
	for i := 0; i < 20; i++ {
		s := randomSparse(rng, 12, rng.IntN(5), rng.IntN(6))
		if i%7 == 0 {
			s = State{}
		}
		want = append(want, s)
		ss.Append(&s)
	}
	var cp States
	for i := 0; i < ss.Len(); i++ {
		cp.AppendFrom(&ss, i)
	}
	for i := range want {
		var got State
		cp.Get(&got, i)
		if got.Len() != want[i].Len() {
			t.Fatalf("item %d: %d classes, want %d", i, got.Len(), want[i].Len())
		}
		for k := range got.Class {
			if got.Class[k] != want[i].Class[k] || math.Abs(got.Pi[k]-want[i].Pi[k]) > 1e-7 {
				t.Errorf("item %d class %d: (%d, %g), want (%d, %g)", i, k, got.Class[k], got.Pi[k], want[i].Class[k], want[i].Pi[k])
			}
			gr, wr := &got.Rows[k], &want[i].Rows[k]
			if !equalInt32(gr.Cat, wr.Cat) || math.Abs(gr.Rem-wr.Rem) > 1e-7 {
				t.Errorf("item %d row %d differs: %+v vs %+v", i, k, gr, wr)
			}
		}
	}
}

// TestConcat: joining packed parts gives, slice for slice, what packing
// their items one by one gives, with and without Moved and with empty parts.
func TestConcat(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, withMoved := range []bool{false, true} {
		var parts []States
		var want States
		want.Reset()
		for p := 0; p < 6; p++ {
			var part States
			part.Reset()
			for i := 0; i < p%3*2; i++ { // parts of 0, 2 and 4 items
				s := randomSparse(rng, 12, rng.IntN(5), rng.IntN(6))
				part.Append(&s)
				want.Append(&s)
				if withMoved {
					part.Moved = append(part.Moved, float32(p+i))
					want.Moved = append(want.Moved, float32(p+i))
				}
			}
			parts = append(parts, part)
		}
		var got States
		got.Concat(parts)
		if !reflect.DeepEqual(got.ItemOff, want.ItemOff) || !reflect.DeepEqual(got.RowOff, want.RowOff) ||
			!reflect.DeepEqual(got.Class, want.Class) || !reflect.DeepEqual(got.Pi, want.Pi) ||
			!reflect.DeepEqual(got.Rem, want.Rem) || !reflect.DeepEqual(got.Cat, want.Cat) ||
			!reflect.DeepEqual(got.P, want.P) || len(got.Moved) != len(want.Moved) {
			t.Fatalf("moved=%v: Concat gives %+v, want %+v", withMoved, got, want)
		}
		for i := range want.Moved {
			if got.Moved[i] != want.Moved[i] {
				t.Fatalf("moved=%v: Moved[%d] = %g, want %g", withMoved, i, got.Moved[i], want.Moved[i])
			}
		}
	}
}

// TestRound checks a round's contract: a valid state, determinism in (seed,
// key, round), neighbours pulling a lone wrong label towards theirs, the
// unlabelled case, and the authors' code variant.
func TestRound(t *testing.T) {
	const c = 6
	mk := func(l int32) State {
		var s State
		s.Init([]int32{l}, c, 4, 0.1)
		return s
	}
	own := mk(0)
	neigh := []State{mk(2), mk(2), mk(2), mk(2), mk(1)}
	w := []float64{0.2, 0.2, 0.2, 0.2, 0.2}
	p := DefaultParams(c)
	p.C0, p.N, p.MaxRowEntries = 4, DefaultN(4), DefaultMaxRowEntries(4)
	p.Mu, p.Gamma, p.AnnotationWeight, p.Seed = 0.3, 0.2, 0, 3
	var ws Workspace
	run := func(own *State, key uint64, round int, p Params) State {
		var dst State
		ws.Round(&dst, own, nil, 0, neigh, w, key, round, &p)
		return dst
	}
	a := run(&own, 7, 0, p)
	if err := a.Check(c); err != nil {
		t.Fatal(err)
	}
	// One EM step per round (the default) moves a state part of the way: a
	// round takes class 2 from nothing to a share near class 0's, and the
	// next one past it.
	if p2 := a.ProbOf(2); p2 < 0.3 {
		t.Errorf("class 2 has pi %v after a round among neighbours labelled 2 (pi %v over %v), want >= 0.3", p2, a.Pi, a.Class)
	}
	if a2 := run(&a, 7, 1, p); func() int32 { top, _ := a2.Argmax(); return top }() != 2 {
		t.Errorf("top class not 2 after two rounds among neighbours labelled 2 (pi %v over %v)", a2.Pi, a2.Class)
	}
	b := run(&own, 7, 0, p)
	if !sameState(&a, &b) {
		t.Error("same (seed, key, round) gave different states")
	}
	if d := run(&own, 7, 1, p); sameState(&a, &d) {
		t.Error("a different round gave an identical state (draws not reseeded)")
	}
	var empty State
	u := run(&empty, 9, 0, p)
	if top, _ := u.Argmax(); top != 2 {
		t.Errorf("unlabelled item: top class %d, want its neighbours' 2", top)
	}
	pc := p
	pc.Variant = Code
	pc.Gamma = 0
	cv := run(&own, 7, 0, pc)
	if err := cv.Check(c); err != nil {
		t.Fatalf("code variant: %v", err)
	}
	if top, _ := cv.Argmax(); top != 2 {
		t.Errorf("code variant: top class %d, want 2", top)
	}
}

func sameState(a, b *State) bool {
	if a.Len() != b.Len() {
		return false
	}
	for k := range a.Class {
		if a.Class[k] != b.Class[k] || a.Pi[k] != b.Pi[k] {
			return false
		}
	}
	return true
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEMTol: a round's EM stops at the first step that moves no pi by more
// than EMTol. A tolerance no step meets runs every step; one every step
// meets stops after the first (the same as one EM iteration); the default's
// lies between and is close to the full run; out of range is rejected.
func TestEMTol(t *testing.T) {
	const c = 10
	mk := func(l int32) State {
		var s State
		s.Init([]int32{l}, c, 10, 0.6) // noisy rows: soft responsibilities
		return s
	}
	// Soft states (two classes each), as after a few rounds: one-hot ones
	// reach an exact fixpoint in one step.
	mix := func(a, b int32, g float64) State {
		x, y := mk(a), mk(b)
		var s State
		Blend(&s, &x, &y, g, c)
		return s
	}
	own := mix(3, 7, 0.6)
	neigh := []State{mix(3, 7, 0.7), mix(3, 1, 0.8), mix(7, 3, 0.55), mix(3, 7, 0.5), mix(7, 1, 0.9), mix(1, 3, 0.6)}
	w := []float64{0.2, 0.2, 0.2, 0.15, 0.15, 0.1}
	p := DefaultParams(c)
	p.AnnotationWeight, p.Seed, p.EMIters = 0, 5, 50
	var ws Workspace
	run := func(tol float64, iters int) State {
		q := p
		q.EMTol, q.EMIters = tol, iters
		var dst State
		ws.Round(&dst, &own, nil, 0, neigh, w, 11, 2, &q)
		return dst
	}
	full := run(0, 50)
	if got := run(1e-300, 50); !sameState(&got, &full) {
		t.Errorf("a tolerance no step meets changed the result: %v vs %v", got.Pi, full.Pi)
	}
	one := run(0, 1)
	if got := run(0.99, 50); !sameState(&got, &one) {
		t.Errorf("a tolerance every step meets: %v, want one step's %v", got.Pi, one.Pi)
	}
	if sameState(&one, &full) {
		t.Fatalf("one EM step already gives the full result: the case does not test the tolerance (%v %v, %v %v)", one.Class, one.Pi, full.Class, full.Pi)
	}
	def := run(DefaultParams(c).EMTol, 50)
	for k, cl := range full.Class {
		if d := def.ProbOf(cl) - full.Pi[k]; d > 0.01 || d < -0.01 {
			t.Errorf("class %d: pi %.4f with the default tolerance, %.4f with every step", cl, def.ProbOf(cl), full.Pi[k])
		}
	}
	for _, bad := range []float64{-0.1, 1, math.NaN()} {
		q := p
		q.EMTol = bad
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "EM tolerance") {
			t.Errorf("EMTol %g: Validate() = %v, want an EM tolerance error", bad, err)
		}
	}
}

// TestKeepTopAndBlendLongRows: on rows of hundreds of entries (an EM row at
// large C), keepTop keeps exactly the entries a full sort would, in its
// order, with the rest's mass in the remainder; and blending long rows
// through the category index gives bit for bit what the entry scans give.
func TestKeepTopAndBlendLongRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const c = 1000
	long := func(n int) Row {
		var r Row
		perm := rng.Perm(c)
		var tot float64
		for _, cat := range perm[:n] {
			p := rng.Float64()
			if rng.IntN(4) == 0 {
				p = 0.25 // ties, broken by category
			}
			r.Cat, r.P = append(r.Cat, int32(cat)), append(r.P, p)
			tot += p
		}
		for e := range r.P {
			r.P[e] /= tot * 1.25
		}
		r.Rem = 0.2
		return r
	}
	for _, n := range []int{21, 50, 400} {
		r := long(n)
		type ent struct {
			p   float64
			cat int32
		}
		var want []ent
		for e := range r.Cat {
			want = append(want, ent{r.P[e], r.Cat[e]})
		}
		sort.Slice(want, func(i, j int) bool {
			return want[i].p > want[j].p || want[i].p == want[j].p && want[i].cat < want[j].cat
		})
		wantRem := r.Rem
		for _, x := range want[20:] {
			wantRem += x.p
		}
		keepTop(&r, 20)
		if len(r.Cat) != 20 || len(r.P) != 20 {
			t.Fatalf("n %d: kept %d entries, want 20", n, len(r.Cat))
		}
		for e := range r.Cat {
			if r.Cat[e] != want[e].cat || r.P[e] != want[e].p {
				t.Fatalf("n %d: entry %d is %d:%g, a full sort puts %d:%g there", n, e, r.Cat[e], r.P[e], want[e].cat, want[e].p)
			}
		}
		if math.Abs(r.Rem-wantRem) > 1e-12 {
			t.Errorf("n %d: remainder %g, want %g", n, r.Rem, wantRem)
		}
	}
	for _, sizes := range [][2]int{{20, 400}, {400, 20}, {300, 300}, {5, 8}} {
		a, b := long(sizes[0]), long(sizes[1])
		var got, oracle Row
		blendRow(&got, &a, &b, 0.3, c, &blendScratch{})
		// The entry scans, by hand: a's entries, then b's that a lacks.
		for e, cat := range a.Cat {
			oracle.Cat = append(oracle.Cat, cat)
			oracle.P = append(oracle.P, 0.3*a.P[e]+0.7*b.Prob(cat, c))
		}
		for e, cat := range b.Cat {
			if !containsClass(a.Cat, cat) {
				oracle.Cat = append(oracle.Cat, cat)
				oracle.P = append(oracle.P, 0.3*a.Prob(cat, c)+0.7*b.P[e])
			}
		}
		if !slices.Equal(got.Cat, oracle.Cat) || !slices.Equal(got.P, oracle.P) {
			t.Errorf("rows of %d and %d entries: blendRow differs from the scans", sizes[0], sizes[1])
		}
	}
}

// TestCatIndex: find returns each indexed category's entry and -1 for every
// other category, for scanned (short) and hashed (long) rows, including
// absent categories that share a mask bit with present ones.
func TestCatIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var x catIndex
	for _, n := range []int{0, 3, 16, 17, 20, 100, 700} {
		perm := rng.Perm(1000)
		cats := make([]int32, n)
		for i := range cats {
			cats[i] = int32(perm[i])
		}
		x.build(cats)
		for c := int32(0); c < 1000; c++ {
			want := slices.Index(cats, c)
			if got := x.find(c); got != want {
				t.Fatalf("n = %d: find(%d) = %d, want %d", n, c, got, want)
			}
		}
	}
}

// bitsEqual reports whether two states are the same bit for bit: classes,
// pi, and every row's categories, probabilities and remainder, in order.
func bitsEqual(a, b *State) bool {
	if !equalInt32(a.Class, b.Class) || len(a.Rows) != len(b.Rows) {
		return false
	}
	for k := range a.Class {
		ra, rb := &a.Rows[k], &b.Rows[k]
		if math.Float64bits(a.Pi[k]) != math.Float64bits(b.Pi[k]) ||
			math.Float64bits(ra.Rem) != math.Float64bits(rb.Rem) ||
			!equalInt32(ra.Cat, rb.Cat) || len(ra.P) != len(rb.P) {
			return false
		}
		for e := range ra.P {
			if math.Float64bits(ra.P[e]) != math.Float64bits(rb.P[e]) {
				return false
			}
		}
	}
	return true
}

// TestBlendFit: Round's blend straight from the EM tables (EM.blendFit)
// gives the states that writing the fit out and blending it (EM.Result,
// then Blend) gives, bit for bit, over class counts from 3 to 1000, both
// EM variants, one and ten EM steps, neighbours-only mixtures (Mu = 0,
// where the item's own classes can be missing from the fit) and the
// neighbourhoods that bring classes the item lacks.
func TestBlendFit(t *testing.T) {
	for _, c := range []int{3, 10, 100, 1000} {
		for _, variant := range []Variant{Paper, Code} {
			for _, iters := range []int{1, 10} {
				for _, mu := range []float64{0.5, 0} {
					p := DefaultParams(c)
					p.Variant, p.EMIters, p.Mu, p.Seed = variant, iters, mu, 7
					p.C0 = min(c, 10)
					p.N, p.MaxRowEntries = DefaultN(p.C0), DefaultMaxRowEntries(p.C0)
					rng := rand.New(rand.NewPCG(uint64(c), uint64(iters)))
					items := make([]State, 40)
					base := rng.IntN(max(c-4, 1))
					for i := range items {
						items[i].Init([]int32{int32(min(base+rng.IntN(5), c-1))}, c, p.C0, p.Smooth)
					}
					var ref, fused Workspace
					ref.refBlend = true
					var want, got State
					neigh, w := make([]State, 10), make([]float64, 10)
					compared := 0
					for round := 0; round < 4; round++ {
						for i := range items {
							for j := range neigh {
								neigh[j].CopyFrom(&items[rng.IntN(len(items))])
								w[j] = rng.Float64()
							}
							ref.Round(&want, &items[i], nil, 0, neigh, w, uint64(i), round, &p)
							fused.Round(&got, &items[i], nil, 0, neigh, w, uint64(i), round, &p)
							if !bitsEqual(&got, &want) {
								t.Fatalf("C=%d %v iters=%d mu=%g round %d item %d: blendFit differs from Result+Blend\ngot  %+v\nwant %+v",
									c, variant, iters, mu, round, i, got, want)
							}
							compared++
							items[i].CopyFrom(&want)
						}
					}
					if compared == 0 {
						t.Fatal("no rounds compared")
					}
				}
			}
		}
	}
}
