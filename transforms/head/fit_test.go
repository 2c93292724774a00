package head

import (
	"reflect"
	"slices"
	"testing"
)

// TestFit: a head's Fit after a round gives its items the very states that
// round gave them (their out-of-fold probabilities, bit for bit), whatever
// order the rows come in; it reads back from its encoding unchanged; a head
// that switched itself off keeps an Off fit; bad encodings are refused.
func TestFit(t *testing.T) {
	const n, d, c = 240, 6, 3
	x, keys, _, given := linearSet(n, d, c, 5)
	for _, tc := range []struct {
		name   string
		weight float64
	}{{"fixed weight", 1}, {"fitted share", 0}} {
		p := testParams
		p.Weight = tc.weight
		h, err := New(x, keys, d, c, p)
		if err != nil {
			t.Fatal(err)
		}
		st := givenStates(given, c)
		neighbour := func(i, j int) (int, float64) { return (i + j + 1) % n, 0.2 }
		var out any
		var w float64
		for r := range 2 {
			o, ww, err := h.Round(r, &st, 5, neighbour, 2, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			out, w = o, ww
		}
		f := h.Fit()
		if h.Off() {
			if !f.Off {
				t.Errorf("%s: the head is off, its fit is not", tc.name)
			}
			continue
		}
		if f.Off || f.Weight != w || w <= 0 {
			t.Fatalf("%s: fit off %t weight %g, round's weight %g", tc.name, f.Off, f.Weight, w)
		}
		got := f.States(x, keys, 2, 0.1)
		if !reflect.DeepEqual(got, out) {
			t.Errorf("%s: the fit's states differ from the last round's component", tc.name)
		}
		// Rows reversed: each row's probabilities are its own fold's.
		rx, rk := make([]float32, 0, n*d), slices.Clone(keys)
		slices.Reverse(rk)
		for i := n - 1; i >= 0; i-- {
			rx = append(rx, x[i*d:(i+1)*d]...)
		}
		fwd, rev := make([]float64, n*c), make([]float64, n*c)
		f.Probs(fwd, x, keys)
		f.Probs(rev, rx, rk)
		for i := range n {
			if !slices.Equal(fwd[i*c:(i+1)*c], rev[(n-1-i)*c:(n-i)*c]) {
				t.Fatalf("%s: row %d's probabilities depend on its place", tc.name, i)
			}
		}
		b, _ := f.AppendBinary(nil)
		var back Fit
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(&back, f) {
			t.Errorf("%s: the fit reads back otherwise", tc.name)
		}
		for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0), nil} {
			if err := new(Fit).UnmarshalBinary(bad); err == nil {
				t.Errorf("%s: a damaged encoding of %d bytes (of %d) was taken", tc.name, len(bad), len(b))
			}
		}
	}

	// A head that switched itself off (OffShare) keeps an Off fit.
	p := testParams
	p.Weight = 0
	h, err := New(x, keys, d, c, p)
	if err != nil {
		t.Fatal(err)
	}
	st := givenStates(given, c)
	perfect := func(i, j int) (int, float64) { return i, 0.2 } // each item its own vote: the neighbours cannot be beaten
	if _, _, err := h.Round(0, &st, 5, perfect, 2, 0.1); err != nil {
		t.Fatal(err)
	}
	if !h.Off() || !h.Fit().Off {
		t.Errorf("a head beside a perfect vote: off %t, fit off %t; want both", h.Off(), h.Fit().Off)
	}
}
