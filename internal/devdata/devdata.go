// Package devdata gives tests the development data that sits beside the
// repository (../shared/data: real datasets with truth and generated noise).
// A user's clone has no ../shared, so Dir skips the test there with a
// message that names what is missing; CI has it. Tests used to carry their
// own copies of these few lines; one copy keeps the skip rule and the raw
// file format (little-endian, row-major) the same everywhere.
package devdata

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// Root is ../shared/data seen from the repository root.
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "data"), nil
		}
		if filepath.Dir(dir) == dir {
			return "", os.ErrNotExist
		}
	}
}

// Dir returns ../shared/data/elem... (from the repository root), and skips
// the test when it is absent.
func Dir(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Skipf("development data absent: no go.mod above the working directory: %v", err)
	}
	dir := filepath.Join(append([]string{root}, elem...)...)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("development data absent (this test reads ../shared/data beside the repository): %v", err)
	}
	return dir
}

// ReadLE reads a raw little-endian file of 4-byte values (features.f32,
// truth.i32, noisy-*.i32), failing the test on any error.
func ReadLE[T int32 | float32](t testing.TB, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%4 != 0 {
		t.Fatalf("%s: %d bytes, not a whole number of 4-byte values", path, len(b))
	}
	out := make([]T, len(b)/4)
	if _, err := binary.Decode(b, binary.LittleEndian, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}
