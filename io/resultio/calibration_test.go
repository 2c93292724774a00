package resultio

import (
	"math"
	"testing"

	"github.com/relabel/relabel/transforms/mixture"
)

// TestCalibrationClean: the calibrated posterior keeps the state's order and
// sums to 1; --min-confidence keeps the given label where the change is less
// sure than asked; unlabelled and empty states come out as documented.
func TestCalibrationClean(t *testing.T) {
	var ss mixture.States
	ss.Reset()
	add := func(classes []int32, pi []float32) {
		ss.Class = append(ss.Class, classes...)
		ss.Pi = append(ss.Pi, pi...)
		ss.ItemOff = append(ss.ItemOff, int32(len(ss.Class)))
	}
	if len(ss.ItemOff) == 0 {
		ss.ItemOff = []int32{0}
	}
	add([]int32{2, 0, 1}, []float32{0.5, 0.3, 0.2}) // 0: given 0, top 2
	add([]int32{1, 3}, []float32{0.9, 0.1})         // 1: given 1, unchanged
	add(nil, nil)                                   // 2: empty state
	for _, tc := range []struct {
		name      string
		cal       Calibration
		i         int
		given     int32
		clean     int32
		changed   bool
		cleanProb float64 // NaN: not checked
	}{
		{"uncalibrated", Calibration{Temperature: 1}, 0, 0, 2, true, 0.5},
		{"tempered", Calibration{Temperature: 0.5}, 0, 0, 2, true, 25.0 / 38},
		{"sure enough", Calibration{Temperature: 0.5, MinConfidence: 0.6}, 0, 0, 2, true, 25.0 / 38},
		{"not sure enough: given kept", Calibration{Temperature: 0.5, MinConfidence: 0.7}, 0, 0, 0, false, 9.0 / 38},
		{"unchanged", Calibration{Temperature: 0.25, MinConfidence: 0.99}, 1, 1, 1, false, math.NaN()},
		{"unlabelled takes the top class", Calibration{Temperature: 0.25, MinConfidence: 0.99}, 0, -1, 2, false, math.NaN()},
		{"empty state: no clean label", Calibration{Temperature: 0.25}, 2, 1, -1, false, 0},
	} {
		clean, cp, gp, changed, post := tc.cal.Clean(&ss, tc.i, tc.given, nil)
		if clean != tc.clean || changed != tc.changed {
			t.Errorf("%s: clean %d changed %v, want %d %v", tc.name, clean, changed, tc.clean, tc.changed)
		}
		if !math.IsNaN(tc.cleanProb) && math.Abs(float64(cp)-tc.cleanProb) > 1e-6 {
			t.Errorf("%s: clean_prob %v, want %v", tc.name, cp, tc.cleanProb)
		}
		if tc.given < 0 && !math.IsNaN(float64(gp)) {
			t.Errorf("%s: given_label_prob %v for an unlabelled row, want NaN", tc.name, gp)
		}
		var sum float64
		for k, p := range post {
			sum += float64(p)
			if k > 0 && p > post[k-1] {
				t.Errorf("%s: posterior order changed: %v", tc.name, post)
			}
		}
		if len(post) > 0 && math.Abs(sum-1) > 1e-5 {
			t.Errorf("%s: posterior sums to %v", tc.name, sum)
		}
	}
	for _, bad := range []Calibration{{Temperature: 0}, {Temperature: -1}, {Temperature: 1, MinConfidence: 1.5}, {Temperature: math.Inf(1)}, {Auto: true, MinConfidence: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestCalibrationResolve: an Auto calibration takes the temperature its
// statistics give (StatsOf over the states), a fixed one keeps its own, and
// an unresolved one is never applied.
func TestCalibrationResolve(t *testing.T) {
	var ss mixture.States
	ss.ItemOff = []int32{0}
	add := func(classes []int32, pi []float32) {
		ss.Class = append(ss.Class, classes...)
		ss.Pi = append(ss.Pi, pi...)
		ss.ItemOff = append(ss.ItemOff, int32(len(ss.Class)))
	}
	add([]int32{2, 0, 1}, []float32{0.5, 0.3, 0.2}) // given 0: changed
	add([]int32{1, 3}, []float32{0.9, 0.1})         // given 1: kept
	given := []int32{0, 1}
	var stats mixture.CalibrationStats
	StatsOf(&stats, &ss, func(i int) []int32 { return given[i : i+1] }, nil, 0)
	if stats.Labelled != 2 || stats.Changed != 1 {
		t.Fatalf("stats %+v, want 2 labelled, 1 changed", stats)
	}
	auto := Calibration{Auto: true, MinConfidence: 0.5}
	if err := auto.Validate(); err != nil {
		t.Fatalf("auto: %v", err)
	}
	r := auto.Resolve(stats)
	if r.Auto || r.Temperature != mixture.AutoTemperature(stats) || r.MinConfidence != 0.5 {
		t.Errorf("resolved %+v, want temperature %v", r, mixture.AutoTemperature(stats))
	}
	_, p, _, _, _ := r.Clean(&ss, 0, 0, nil)
	want := mixture.Temper(nil, ss.Pi[0:3], r.Temperature)[0]
	if p != want {
		t.Errorf("clean_prob %v, want %v (pi tempered by the fitted T)", p, want)
	}
	if fixed := (Calibration{Temperature: 0.4}).Resolve(stats); fixed.Temperature != 0.4 {
		t.Errorf("a fixed temperature became %v", fixed.Temperature)
	}
	defer func() {
		if recover() == nil {
			t.Error("Clean with an unresolved temperature did not panic")
		}
	}()
	auto.Clean(&ss, 0, 0, nil)
}
