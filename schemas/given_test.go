package schemas

import "testing"

func TestGivenLabel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []int32
		want   int32
	}{
		{"none", nil, Unlabelled},
		{"one", []int32{3}, 3},
		{"majority", []int32{2, 1, 2}, 2},
		{"tie to the lower class", []int32{3, 1, 1, 3}, 1},
		{"unlabelled annotations ignored", []int32{-1, -1, 2}, 2},
	} {
		if got := GivenLabel(tc.labels); got != tc.want {
			t.Errorf("%s: GivenLabel(%v) = %d, want %d", tc.name, tc.labels, got, tc.want)
		}
	}
}
