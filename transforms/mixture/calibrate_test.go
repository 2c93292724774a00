package mixture

import (
	"math"
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
	if fwd != rev {
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
