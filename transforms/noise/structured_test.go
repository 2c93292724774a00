package noise

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestDerangement checks the perm map at awkward class counts: a permutation,
// no fixed point, not the pair shift where another derangement exists, the
// same for the same seed, and not always the same map across seeds.
func TestDerangement(t *testing.T) {
	for _, c := range []int{2, 3, 4, 10, 26} {
		maps := map[string]bool{}
		for seed := range uint64(20) {
			p := Derangement(c, seed)
			if !slices.Equal(p, Derangement(c, seed)) {
				t.Fatalf("C=%d seed %d: two calls differ", c, seed)
			}
			seen := make([]bool, c)
			shift := true
			for y, v := range p {
				if v < 0 || int(v) >= c || seen[v] {
					t.Fatalf("C=%d seed %d: %v is not a permutation", c, seed, p)
				}
				seen[v] = true
				if int(v) == y {
					t.Fatalf("C=%d seed %d: %v fixes class %d", c, seed, p, y)
				}
				shift = shift && int(v) == (y+1)%c
			}
			if shift && c > 2 {
				t.Errorf("C=%d seed %d: %v is the pair shift", c, seed, p)
			}
			maps[fmt.Sprint(p)] = true
		}
		// C=2 has one derangement, C=3 one besides the shift.
		if want := c > 3; (len(maps) > 1) != want {
			t.Errorf("C=%d: %d distinct maps over 20 seeds", c, len(maps))
		}
	}
}

// TestMultiTargets checks the multi map: n distinct targets per class, never
// the class itself, from the seed alone; every other class at n = C-1.
func TestMultiTargets(t *testing.T) {
	for _, tc := range []struct{ c, n int }{{2, 1}, {3, 2}, {10, 2}, {10, 9}, {26, 3}} {
		m := MultiTargets(tc.c, tc.n, 5)
		if len(m) != tc.c {
			t.Fatalf("C=%d n=%d: %d rows", tc.c, tc.n, len(m))
		}
		for y, to := range m {
			if len(to) != tc.n {
				t.Errorf("C=%d n=%d class %d: %d targets %v", tc.c, tc.n, y, len(to), to)
			}
			s := slices.Clone(to)
			slices.Sort(s)
			if len(slices.Compact(s)) != len(to) || slices.Contains(to, int32(y)) || slices.ContainsFunc(to, func(v int32) bool { return v < 0 || int(v) >= tc.c }) {
				t.Errorf("C=%d n=%d class %d: targets %v, want distinct classes other than %d", tc.c, tc.n, y, to, y)
			}
		}
		if !slices.EqualFunc(m, MultiTargets(tc.c, tc.n, 5), slices.Equal) {
			t.Errorf("C=%d n=%d: two calls differ", tc.c, tc.n)
		}
	}
	for _, n := range []int{0, 10} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MultiTargets(10, %d) did not panic", n)
				}
			}()
			MultiTargets(10, n, 1)
		}()
	}
}

// TestMixedPairClasses checks the mixed split: floor(C/2) pair classes, from
// the seed alone, not the same half for every seed.
func TestMixedPairClasses(t *testing.T) {
	for _, c := range []int{2, 3, 10, 26} {
		halves := map[string]bool{}
		for seed := range uint64(10) {
			p := MixedPairClasses(c, seed)
			k := 0
			for _, b := range p {
				if b {
					k++
				}
			}
			if k != c/2 {
				t.Errorf("C=%d seed %d: %d pair classes, want %d", c, seed, k, c/2)
			}
			if !slices.Equal(p, MixedPairClasses(c, seed)) {
				t.Errorf("C=%d seed %d: two calls differ", c, seed)
			}
			key := ""
			for _, b := range p {
				key += map[bool]string{true: "1", false: "0"}[b]
			}
			halves[key] = true
		}
		if len(halves) < 2 {
			t.Errorf("C=%d: the same half for 10 seeds", c)
		}
	}
}

// TestStructuredRates generates each structured kind on a large set and
// checks the realised flip rate per class against rate, and every flip's
// target against the class map: perm's derangement, multi's targets (each
// near rate/n), mixed's c+1 on the pair half and a spread over the other
// classes on the symmetric half.
func TestStructuredRates(t *testing.T) {
	const n, c, rate = 60000, 10, 0.45
	ds := synth(n, 2, c)
	perClass := n / c
	for _, p := range []Params{
		{Kind: Perm, Rate: rate, Seed: 3},
		{Kind: Multi, Rate: rate, Seed: 3}, // default 2 targets
		{Kind: Multi, Rate: rate, Targets: 3, Seed: 3},
		{Kind: Mixed, Rate: rate, Seed: 3},
	} {
		name := p.Kind.String()
		out, err := Generate(ds, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, tol := wrongFraction(ds.Truth, out.Labels), binomTol(rate, n); math.Abs(got-rate) > tol {
			t.Errorf("%s: wrong fraction %.4f, want %.2f +- %.4f", name, got, rate, tol)
		}
		// to[y][k]: rows of class y labelled k.
		to := make([][]int, c)
		for y := range to {
			to[y] = make([]int, c)
		}
		for i, y := range ds.Truth {
			to[y][out.Labels[i]]++
		}
		for y := range c {
			flips := perClass - to[y][y]
			if got, tol := float64(flips)/float64(perClass), binomTol(rate, perClass); math.Abs(got-rate) > tol {
				t.Errorf("%s class %d: flip rate %.4f, want %.2f +- %.4f", name, y, got, rate, tol)
			}
			var allowed []int32
			switch p.Kind {
			case Perm:
				allowed = []int32{Derangement(c, p.Seed)[y]}
			case Multi:
				allowed = MultiTargets(c, max(p.Targets, DefaultTargets), p.Seed)[y]
				for _, k := range allowed {
					want := rate / float64(len(allowed))
					if got, tol := float64(to[y][k])/float64(perClass), binomTol(want, perClass); math.Abs(got-want) > tol {
						t.Errorf("%s class %d -> %d: rate %.4f, want %.4f +- %.4f", name, y, k, got, want, tol)
					}
				}
			case Mixed:
				if MixedPairClasses(c, p.Seed)[y] {
					allowed = []int32{int32((y + 1) % c)}
					break
				}
				for k := range c {
					if k == y {
						continue
					}
					allowed = append(allowed, int32(k))
					want := rate / float64(c-1)
					if got, tol := float64(to[y][k])/float64(perClass), binomTol(want, perClass); math.Abs(got-want) > tol {
						t.Errorf("%s symmetric class %d -> %d: rate %.4f, want %.4f +- %.4f", name, y, k, got, want, tol)
					}
				}
			}
			for k, cnt := range to[y] {
				if k != y && cnt > 0 && !slices.Contains(allowed, int32(k)) {
					t.Errorf("%s class %d: %d rows flipped to %d, allowed %v", name, y, cnt, k, allowed)
				}
			}
		}
	}
}

// TestStructuredShards checks that the structured kinds, like the others,
// label a row the same whether it is generated with every row, reversed, or
// in a shard of its own: the class maps come from the seed alone and each
// row's draws from (seed, id). It also checks that the kinds corrupt the same
// rows as sym at the same seed (the shared first draw).
func TestStructuredShards(t *testing.T) {
	ds := synth(3000, 3, 7)
	sym, err := SymmetricLabels(ds, 0.4, 9)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Params{{Kind: Perm, Rate: 0.4}, {Kind: Multi, Rate: 0.4, Targets: 4}, {Kind: Mixed, Rate: 0.4}} {
		p.Seed = 9
		all, err := Generate(ds, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ds.Len() {
			if (all.Labels[i] != ds.Truth[i]) != (sym[i] != ds.Truth[i]) {
				t.Fatalf("%v: row %d flipped %v, sym %v", p.Kind, i, all.Labels[i] != ds.Truth[i], sym[i] != ds.Truth[i])
			}
		}
		for _, lo := range []int{0, 1000, 2999} {
			hi := min(lo+1000, ds.Len())
			shard := Dataset{IDs: slices.Clone(ds.IDs[lo:hi]), Truth: slices.Clone(ds.Truth[lo:hi]), C: ds.C}
			slices.Reverse(shard.IDs)
			slices.Reverse(shard.Truth)
			got, err := Generate(shard, p)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(all.Labels[lo:hi])
			slices.Reverse(want)
			if !slices.Equal(got.Labels, want) {
				t.Errorf("%v: rows %d..%d reversed in a shard of their own differ", p.Kind, lo, hi)
			}
		}
		p.Seed = 10
		other, err := Generate(ds, p)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(other.Labels, all.Labels) {
			t.Errorf("%v: seeds 9 and 10 gave identical labels", p.Kind)
		}
	}
}

// TestStructuredErrors checks the validation of the structured kinds.
func TestStructuredErrors(t *testing.T) {
	ok := synth(10, 3, 4)
	for _, tc := range []struct {
		name string
		p    Params
		want string
	}{
		{"perm rate", Params{Kind: Perm, Rate: 2}, "rate 2"},
		{"mixed rate", Params{Kind: Mixed, Rate: math.NaN()}, "rate NaN"},
		{"multi too many targets", Params{Kind: Multi, Rate: 0.4, Targets: 4}, "4 flip targets per class, want 1 to 3"},
		{"multi negative targets", Params{Kind: Multi, Rate: 0.4, Targets: -1}, "-1 flip targets"},
	} {
		_, err := Generate(ok, tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := Generate(Dataset{IDs: []int64{1}, Truth: []int32{0}, C: 1}, Params{Kind: Perm, Rate: 0.1}); err == nil || !strings.Contains(err.Error(), "1 classes") {
		t.Errorf("perm with one class: error %v", err)
	}
}
