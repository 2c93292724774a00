package wire

import (
	"math"
	"reflect"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var w Writer
	w.Byte(7)
	w.Bool(true)
	w.Uvarint(1 << 40)
	w.Varint(-12345)
	w.Float64(math.Pi)
	w.String("shard-0001.parquet")
	Slice(&w, []float32{1.5, float32(math.Inf(1)), -0})
	Slice(&w, []int64(nil))
	Slice(&w, []int32{})
	Slice(&w, []float64{math.NaN()})
	w.Bools([]bool{true, false})
	w.Strings([]string{"a", "", "ccc"})

	r := Reader{B: w.B}
	if got := r.Byte(); got != 7 {
		t.Errorf("Byte = %d", got)
	}
	if !r.Bool() {
		t.Error("Bool = false")
	}
	if got := r.Uvarint(); got != 1<<40 {
		t.Errorf("Uvarint = %d", got)
	}
	if got := r.Varint(); got != -12345 {
		t.Errorf("Varint = %d", got)
	}
	if got := r.Float64(); got != math.Pi {
		t.Errorf("Float64 = %g", got)
	}
	if got := r.String(); got != "shard-0001.parquet" {
		t.Errorf("String = %q", got)
	}
	if got := ReadSlice[float32](&r); !reflect.DeepEqual(got, []float32{1.5, float32(math.Inf(1)), -0}) {
		t.Errorf("float32s = %v", got)
	}
	if got := ReadSlice[int64](&r); got != nil {
		t.Errorf("nil slice decoded as %#v", got)
	}
	if got := ReadSlice[int32](&r); got == nil || len(got) != 0 {
		t.Errorf("empty slice decoded as %#v", got)
	}
	if got := ReadSlice[float64](&r); len(got) != 1 || !math.IsNaN(got[0]) {
		t.Errorf("NaN slice = %v", got)
	}
	if got := r.Bools(); !reflect.DeepEqual(got, []bool{true, false}) {
		t.Errorf("Bools = %v", got)
	}
	if got := r.Strings(); !reflect.DeepEqual(got, []string{"a", "", "ccc"}) {
		t.Errorf("Strings = %v", got)
	}
	if err := r.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
}

func TestTruncated(t *testing.T) {
	var w Writer
	Slice(&w, []float32{1, 2, 3})
	for n := 0; n < len(w.B); n++ {
		r := Reader{B: w.B[:n]}
		ReadSlice[float32](&r)
		if r.Err() == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
	r := Reader{B: append(append([]byte(nil), w.B...), 9)}
	ReadSlice[float32](&r)
	if r.Err() == nil {
		t.Error("trailing byte: no error")
	}
}

// TestSkip: SkipSlice and SkipStrings pass over exactly what Slice and
// Strings wrote (nil, empty and full), so the field after them reads
// right, and a truncated encoding is an error.
func TestSkip(t *testing.T) {
	var w Writer
	Slice(&w, []int64{1, 2, 3})
	Slice(&w, []int32(nil))
	Slice(&w, []float64{})
	w.Strings([]string{"a", "", "ccc"})
	w.Strings(nil)
	w.Varint(-77)
	r := Reader{B: w.B}
	SkipSlice[int64](&r)
	SkipSlice[int32](&r)
	SkipSlice[float64](&r)
	r.SkipStrings()
	r.SkipStrings()
	if r.Failed() != nil {
		t.Errorf("skipping: %v", r.Failed())
	}
	if got := r.Varint(); got != -77 || r.Err() != nil {
		t.Errorf("after skipping: %d (err %v), want -77", got, r.Err())
	}
	if r := (Reader{B: []byte{1, 2}}); r.Failed() != nil || r.Err() == nil {
		t.Errorf("unread bytes: Failed %v (want none), Err %v (want one)", r.Failed(), r.Err())
	}
	for n := 0; n < len(w.B)-1; n++ {
		r := Reader{B: w.B[:n]}
		SkipSlice[int64](&r)
		SkipSlice[int32](&r)
		SkipSlice[float64](&r)
		r.SkipStrings()
		r.SkipStrings()
		r.Varint()
		if r.Err() == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
}
