package schemas

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func fullRows() Rows {
	return Rows{
		Shard:    "gs://b/data/part-0001.parquet",
		Offset:   1 << 40,
		IDKind:   IDString,
		IDs:      []int64{Key("a"), Key(""), Key("ü")},
		StrIDs:   []string{"a", "", "ü"},
		D:        2,
		Features: []float32{1, -2, float32(math.Inf(1)), 3.5, 0, float32(math.SmallestNonzeroFloat32)},
		Labels:   []int32{0, 2, 1, Unlabelled},
		LabelOff: []int32{0, 2, 3, 4},
		Multi:    true,
	}
}

func fullCleaned() Cleaned {
	return Cleaned{
		Shard:      "a.arrow",
		Offset:     -1, // not meaningful, but varint must carry negatives
		IDKind:     IDInt64,
		IDs:        []int64{math.MinInt64, 0, math.MaxInt64},
		Labels:     []int32{3, Unlabelled, 1},
		LabelOff:   []int32{0, 1, 2, 3},
		CleanLabel: []int32{3, 0, 2},
		CleanProb:  []float32{0.9, 0.5, 0.75},
		GivenProb:  []float32{0.9, float32(math.NaN()), 0.25},
		Changed:    []bool{false, true, true},
		PostOff:    []int32{0, 2, 3, 5},
		PostClass:  []int32{3, 1, 0, 2, 1},
		PostProb:   []float32{0.9, 0.1, 0.5, 0.75, 0.25},
	}
}

// sameBits compares like reflect.DeepEqual, but float slices bit by bit, so
// that a NaN round-trips as itself.
func sameBits(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := 0; i < va.NumField(); i++ {
		fa, fb := va.Field(i).Interface(), vb.Field(i).Interface()
		if x, ok := fa.([]float32); ok {
			y := fb.([]float32)
			if (x == nil) != (y == nil) || len(x) != len(y) {
				return false
			}
			for j := range x {
				if math.Float32bits(x[j]) != math.Float32bits(y[j]) {
					return false
				}
			}
			continue
		}
		if !reflect.DeepEqual(fa, fb) {
			return false
		}
	}
	return true
}

func TestRowsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Rows
	}{
		{"zero", Rows{}},
		{"empty non-nil slices", Rows{IDs: []int64{}, StrIDs: []string{}, Features: []float32{}, Labels: []int32{}, LabelOff: []int32{0}}},
		{"full", fullRows()},
		{"int ids, one row", Rows{Shard: "x", IDs: []int64{7}, D: 1, Features: []float32{1}, Labels: []int32{2}, LabelOff: []int32{0, 1}}},
	} {
		b, err := EncodeRows(tc.in)
		if err != nil {
			t.Fatalf("%s: encode: %v", tc.name, err)
		}
		got, err := DecodeRows(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", tc.name, err)
		}
		if !sameBits(got, tc.in) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", tc.name, got, tc.in)
		}
	}
}

func TestCleanedRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Cleaned
	}{
		{"zero", Cleaned{}},
		{"empty non-nil slices", Cleaned{IDs: []int64{}, Changed: []bool{}, PostProb: []float32{}, StrIDs: []string{}}},
		{"full", fullCleaned()},
	} {
		b, err := EncodeCleaned(tc.in)
		if err != nil {
			t.Fatalf("%s: encode: %v", tc.name, err)
		}
		got, err := DecodeCleaned(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", tc.name, err)
		}
		if !sameBits(got, tc.in) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", tc.name, got, tc.in)
		}
	}
}

// TestEncodingLayout pins the wire format: a change to it must be deliberate,
// since encoded elements may outlive one binary (a runner's persisted state).
func TestEncodingLayout(t *testing.T) {
	b := AppendRows(nil, &Rows{Shard: "s", Offset: 1, IDs: []int64{2}, Features: []float32{1}, D: 1, LabelOff: nil})
	want := []byte{
		'R', 1, // tag, version
		1, 's', // Shard
		2,    // Offset 1, zigzag
		0, 0, // IDKind, Multi
		1,                         // D
		2, 2, 0, 0, 0, 0, 0, 0, 0, // IDs: len 1, then little-endian 2
		0,                   // StrIDs nil
		2, 0, 0, 0x80, 0x3f, // Features: [1.0]
		0, 0, // Labels, LabelOff nil
	}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("encoding\n got % x\nwant % x", b, want)
	}
}

func TestDecodeCorrupt(t *testing.T) {
	rows, _ := EncodeRows(fullRows())
	cleaned, _ := EncodeCleaned(fullCleaned())
	// Every strict prefix is truncated input and must fail, never panic.
	for n := 0; n < len(rows); n++ {
		if _, err := DecodeRows(rows[:n]); err == nil {
			t.Fatalf("DecodeRows of %d of %d bytes: no error", n, len(rows))
		}
	}
	for n := 0; n < len(cleaned); n++ {
		if _, err := DecodeCleaned(cleaned[:n]); err == nil {
			t.Fatalf("DecodeCleaned of %d of %d bytes: no error", n, len(cleaned))
		}
	}
	for _, tc := range []struct {
		name string
		dec  func([]byte) error
		in   []byte
		want string
	}{
		{"trailing", func(b []byte) error { _, err := DecodeRows(b); return err }, append(append([]byte{}, rows...), 0), "trailing"},
		{"wrong tag", func(b []byte) error { _, err := DecodeRows(b); return err }, cleaned, "header"},
		{"huge length", func(b []byte) error { _, err := DecodeRows(b); return err },
			[]byte{'R', 1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, "truncated"},
		{"bad bool", func(b []byte) error { _, err := DecodeRows(b); return err }, []byte{'R', 1, 0, 0, 0, 7}, "bool"},
	} {
		err := tc.dec(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func BenchmarkEncodeRows(b *testing.B) {
	const n, d = 4096, 64
	r := Rows{IDs: make([]int64, n), D: d, Features: make([]float32, n*d), Labels: make([]int32, n), LabelOff: make([]int32, n+1)}
	buf := AppendRows(nil, &r)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = AppendRows(buf[:0], &r)
	}
}

func BenchmarkDecodeRows(b *testing.B) {
	const n, d = 4096, 64
	r := Rows{IDs: make([]int64, n), D: d, Features: make([]float32, n*d), Labels: make([]int32, n), LabelOff: make([]int32, n+1)}
	buf := AppendRows(nil, &r)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeRows(buf); err != nil {
			b.Fatal(err)
		}
	}
}
