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
