package resultio

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestI32Codec(t *testing.T) {
	// The layout is fixed by the dev data: little-endian int32, no header.
	labels := []int32{0, 1, -1, 0x01020304, -0x7fffffff - 1}
	want := []byte{0, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 4, 3, 2, 1, 0, 0, 0, 0x80}
	b := AppendI32([]byte("x"), labels)
	if !bytes.Equal(b[1:], want) || b[0] != 'x' {
		t.Fatalf("AppendI32 = % x, want x followed by % x", b, want)
	}
	got, err := DecodeI32(want)
	if err != nil || !slices.Equal(got, labels) {
		t.Errorf("DecodeI32 = %v, %v; want %v", got, err, labels)
	}
	if got, err := DecodeI32(nil); err != nil || len(got) != 0 {
		t.Errorf("DecodeI32(empty) = %v, %v; want no labels", got, err)
	}
	if _, err := DecodeI32(want[:6]); err == nil || !strings.Contains(err.Error(), "6 bytes") {
		t.Errorf("DecodeI32(6 bytes) error = %v, want one naming the 6 bytes", err)
	}
}

func TestReadWriteI32(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.i32")
	labels := []int32{3, 1, 4, 1, 5, 9, 2, 6}
	if err := WriteI32(ctx, path, labels); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadI32(ctx, path); err != nil || !slices.Equal(got, labels) {
		t.Errorf("ReadI32 = %v, %v; want %v", got, err, labels)
	}
	// The committed slice's truth: 1797 labels of 10 classes.
	truth, err := ReadI32(ctx, "../../testdata/digits/truth.i32")
	if err != nil || len(truth) != 1797 || slices.Max(truth) != 9 || slices.Min(truth) != 0 {
		t.Errorf("testdata truth.i32: %d labels in [%d, %d], %v; want 1797 in [0, 9]", len(truth), slices.Min(truth), slices.Max(truth), err)
	}
	bad := filepath.Join(dir, "bad.i32")
	if err := os.WriteFile(bad, []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadI32(ctx, bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("ReadI32(3 bytes) error = %v, want one naming %s", err, bad)
	}
	if _, err := ReadI32(ctx, filepath.Join(dir, "missing.i32")); err == nil {
		t.Errorf("ReadI32(missing) succeeded")
	}
}

func TestWriteTruthI32(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "truth.i32")
	// Rows in any order: entry k is id k's label.
	if err := WriteTruthI32(ctx, path, []int64{2, 0, 1}, []int32{7, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadI32(ctx, path); err != nil || !slices.Equal(got, []int32{5, 6, 7}) {
		t.Errorf("read back %v, %v; want [5 6 7]", got, err)
	}
	for _, tc := range []struct {
		name string
		ids  []int64
	}{
		{"repeated", []int64{0, 0, 1}},
		{"too large", []int64{0, 1, 3}},
		{"negative", []int64{0, -1, 1}},
	} {
		p := filepath.Join(dir, tc.name+".i32")
		err := WriteTruthI32(ctx, p, tc.ids, []int32{1, 2, 3})
		if err == nil || !strings.Contains(err.Error(), "ids to be 0..2") {
			t.Errorf("%s: error = %v, want one asking for ids 0..2", tc.name, err)
		}
		if _, statErr := os.Stat(p); statErr == nil {
			t.Errorf("%s: %s was written despite the error", tc.name, p)
		}
	}
}
