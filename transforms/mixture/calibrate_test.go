package mixture

import (
	"cmp"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestTemper(t *testing.T) {
	p := []float32{0.5, 0.3, 0.2}
	for _, tc := range []struct {
		name string
		t    float64
		want []float32
	}{
		{"identity", 1, []float32{0.5, 0.3, 0.2}},
		{"sharpen by squaring", 0.5, []float32{25 / 38., 9 / 38., 4 / 38.}},
		{"flatten", 2, []float32{0.41545, 0.32180, 0.26275}},
	} {
		got := Temper(nil, p, tc.t)
		var sum float64
		for k := range got {
			sum += float64(got[k])
			if math.Abs(float64(got[k]-tc.want[k])) > 1e-4 {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
				break
			}
			if k > 0 && got[k] > got[k-1] {
				t.Errorf("%s: order changed: %v", tc.name, got)
			}
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("%s: sums to %v", tc.name, sum)
		}
	}
	// A truncated posterior (mass beyond the kept classes dropped) is
	// renormalised over what is kept; zeros stay zero; empty stays empty.
	if got := Temper(nil, []float32{0.4, 0.4, 0}, 0.25); got[0] != 0.5 || got[2] != 0 {
		t.Errorf("truncated: %v", got)
	}
	if got := Temper(nil, nil, 0.25); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
}

// TestAutoTemperature: the statistics count what they say, add up to the
// same integers in any order, and the temperature follows the formula
// (flatter with fewer changes, sharper when changed items keep more mass on
// their given label), clamped, with a defined value on empty input.
func TestAutoTemperature(t *testing.T) {
	type item struct {
		class []int32
		pi    []float32
		given int32
	}
	items := []item{
		{[]int32{2, 0}, []float32{0.7, 0.3}, 0},  // changed, keeps .3 on its given label
		{[]int32{1, 3}, []float32{0.9, 0.1}, 1},  // kept
		{[]int32{3}, []float32{1}, 2},            // changed, given label not kept: 0
		{[]int32{0, 1}, []float32{0.6, 0.4}, -1}, // unlabelled: not counted
		{nil, nil, 1},                            // empty state: not counted
	}
	var fwd, rev CalibrationStats
	for _, it := range items {
		fwd.Add(it.class, it.pi, it.given, 1)
	}
	for i := len(items) - 1; i >= 0; i-- {
		var one CalibrationStats
		one.Add(items[i].class, items[i].pi, items[i].given, 1)
		rev = rev.Merge(one)
	}
	if !reflect.DeepEqual(fwd, rev) {
		t.Fatalf("order changed the sums: %+v vs %+v", fwd, rev)
	}
	if fwd.Labelled != 3 || fwd.Changed != 2 {
		t.Fatalf("counted %+v, want 3 labelled, 2 changed", fwd)
	}
	if g := fwd.GivenShare(); math.Abs(g-0.15) > 1e-7 {
		t.Errorf("given share %v, want .15", g)
	}
	want := 0.68 - 0.35*(2.0/3) - 1.15*0.15
	if got := AutoTemperature(fwd); math.Abs(got-want) > 1e-7 {
		t.Errorf("AutoTemperature = %v, want %v", got, want)
	}
	if got := AutoTemperature(CalibrationStats{}); got != 0.68 {
		t.Errorf("no labelled item: %v, want 0.68", got)
	}
	// Everything changed with all the mass left on the given label: clamped.
	if got := AutoTemperature(CalibrationStats{Labelled: 10, Changed: 10, GivenMass: 10 * massScale / 2}); got != minAutoT {
		t.Errorf("clamp: %v, want %v", got, minAutoT)
	}
	// Fewer changes flatten the map; more mass on the given label sharpens it.
	low := AutoTemperature(CalibrationStats{Labelled: 100, Changed: 20, GivenMass: 20 * massScale / 7})
	high := AutoTemperature(CalibrationStats{Labelled: 100, Changed: 40, GivenMass: 40 * massScale / 7})
	pair := AutoTemperature(CalibrationStats{Labelled: 100, Changed: 30, GivenMass: 30 * massScale / 3})
	if !(low > high && high > pair) {
		t.Errorf("T at 20%% changes %v, 40%% %v, pair-like %v: want decreasing", low, high, pair)
	}
	// Mostly several annotations per item: the fixed default, whatever
	// the share; a few multi-annotation items do not switch it.
	var crowd CalibrationStats
	for i := 0; i < 10; i++ {
		crowd.Add([]int32{1, 0}, []float32{0.8, 0.2}, int32(i%2), 1+4*(i%5/4))
	}
	if crowd.Multi != 2 || AutoTemperature(crowd) == DefaultTemperature {
		t.Errorf("2 of 10 multi-annotation items: %+v gave T %v", crowd, AutoTemperature(crowd))
	}
	for i := 0; i < 10; i++ {
		crowd.Add([]int32{1, 0}, []float32{0.8, 0.2}, int32(i%2), 5)
	}
	if got := AutoTemperature(crowd); got != DefaultTemperature {
		t.Errorf("12 of 20 multi-annotation items: T %v, want %v", got, DefaultTemperature)
	}
}

// likelihoodSet generates n items over c classes whose calibrated
// posterior p is known: each item's p puts a in [.5, .99) on one class,
// .7 of the rest on the next class and the remainder evenly on the
// others; its truth is drawn from p and its given label from the truth
// through tOwn (pair flips at rate .3 and a .01 leak to every class). pi
// is p^t0 renormalised (most probable first), so tempering it by t0 gives
// p back: the temperature that calibrates the set is t0.
func likelihoodSet(n, c int, t0 float64, seed uint64) (tOwn []float64, class [][]int32, pi [][]float32, given []int32) {
	tOwn = make([]float64, c*c)
	for k := range c {
		for l := range c {
			tOwn[k*c+l] = 0.01
		}
		tOwn[k*c+k] += 0.7 - 0.01*float64(c)
		tOwn[k*c+(k+1)%c] += 0.3
	}
	r := rand.New(rand.NewPCG(seed, 1))
	draw := func(p []float64) int {
		u, acc := r.Float64(), 0.0
		for k, v := range p {
			if acc += v; u < acc {
				return k
			}
		}
		return len(p) - 1
	}
	for range n {
		top := r.IntN(c)
		a := 0.5 + 0.49*r.Float64()
		p := make([]float64, c)
		for k := range p {
			p[k] = 0.3 * (1 - a) / float64(c-2)
		}
		p[top], p[(top+1)%c] = a, 0.7*(1-a)
		y := draw(p)
		given = append(given, int32(draw(tOwn[y*c:(y+1)*c])))
		idx := make([]int32, c)
		for k := range idx {
			idx[k] = int32(k)
		}
		slices.SortStableFunc(idx, func(x, y int32) int { return cmp.Compare(p[y], p[x]) })
		q := make([]float32, c)
		var z float64
		for _, k := range idx {
			z += math.Pow(p[k], t0)
		}
		for e, k := range idx {
			q[e] = float32(math.Pow(p[k], t0) / z)
		}
		class, pi = append(class, idx), append(pi, q)
	}
	return tOwn, class, pi, given
}

// TestLabelLikelihood: on sets whose calibrating temperature is known, the
// given labels are most likely at that temperature (to the grid's step and
// the sample's noise); the sums are integers that add up to the same in
// any order and split; AutoTemperature takes the likelihood's temperature
// once an item was added that way, except where most items carry several
// annotations.
func TestLabelLikelihood(t *testing.T) {
	if LikTemperature(0) != minAutoT || LikTemperature(likGrid-1) != maxAutoT || LikTemperature(21) != 0.31 {
		t.Fatalf("grid %v..%v, [21] %v; want %v..%v, .31", LikTemperature(0), LikTemperature(likGrid-1), LikTemperature(21), minAutoT, maxAutoT)
	}
	const n, c = 20000, 6
	for _, tc := range []struct {
		name string
		t0   float64
	}{
		{"sharp", 0.2},
		{"middling", 0.35},
		{"flat", 0.6},
	} {
		tOwn, class, pi, given := likelihoodSet(n, c, tc.t0, 7)
		var s CalibrationStats
		for i := range class {
			s.Add(class[i], pi[i], given[i], 1)
			s.AddLabelLikelihood(tOwn, c, class[i], pi[i], given[i])
		}
		if s.LikItems != n {
			t.Fatalf("%s: %d items added, want %d", tc.name, s.LikItems, n)
		}
		if got := s.LikelihoodTemperature(); math.Abs(got-tc.t0) > 0.03 {
			t.Errorf("%s: likelihood temperature %.3f, want %.2f +- .03", tc.name, got, tc.t0)
		}
		if got := AutoTemperature(s); got != s.LikelihoodTemperature() {
			t.Errorf("%s: AutoTemperature %v, want the likelihood's %v", tc.name, got, s.LikelihoodTemperature())
		}
		// The formula would not find it: it reads no transition.
		formula := s
		formula.LikItems, formula.LogLik = 0, nil
		t.Logf("%s: t0 %.2f, likelihood %.2f, formula %.3f", tc.name, tc.t0, s.LikelihoodTemperature(), AutoTemperature(formula))

		// Any order, any split: the same integers.
		var a, b CalibrationStats
		for i := len(class) - 1; i >= 0; i-- {
			part := &a
			if i%3 == 0 {
				part = &b
			}
			part.Add(class[i], pi[i], given[i], 1)
			part.AddLabelLikelihood(tOwn, c, class[i], pi[i], given[i])
		}
		ab := b.Merge(a)
		if !reflect.DeepEqual(ab, s) {
			t.Errorf("%s: split in reverse order: %+v, want %+v", tc.name, ab.LogLik[:3], s.LogLik[:3])
		}
		// The sum shares no memory with its operands.
		ba, bb := a.LogLik[0], b.LogLik[0]
		ab.LogLik[0]++
		if one := a.Merge(CalibrationStats{}); a.LogLik[0] != ba || b.LogLik[0] != bb || &one.LogLik[0] == &a.LogLik[0] {
			t.Errorf("%s: merge aliased an operand", tc.name)
		}
	}

	// An empty (decoded) LogLik adds nothing to a merge.
	if m := (CalibrationStats{LogLik: []int64{}}).Merge(CalibrationStats{Labelled: 1}); m.LogLik != nil || m.Labelled != 1 {
		t.Errorf("merging empty likelihood sums: %+v", m)
	}

	// Unlabelled items and empty states add nothing; several annotations
	// keep the default temperature whatever the likelihood says.
	tOwn, class, pi, given := likelihoodSet(10, 4, 0.3, 1)
	var s CalibrationStats
	s.AddLabelLikelihood(tOwn, 4, class[0], pi[0], -1)
	s.AddLabelLikelihood(tOwn, 4, nil, nil, 2)
	if s.LikItems != 0 || s.LogLik != nil || s.LikelihoodTemperature() != 0 {
		t.Errorf("unlabelled or empty items were added: %+v", s)
	}
	for i := range class {
		s.Add(class[i], pi[i], given[i], 5)
		s.AddLabelLikelihood(tOwn, 4, class[i], pi[i], given[i])
	}
	if got := AutoTemperature(s); got != DefaultTemperature {
		t.Errorf("several annotations per item: T %v, want %v", got, DefaultTemperature)
	}
	defer func() {
		if recover() == nil {
			t.Error("a transition that is not c x c did not panic")
		}
	}()
	s.AddLabelLikelihood(tOwn[:15], 4, class[0], pi[0], given[0])
}
