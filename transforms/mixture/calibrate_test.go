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
