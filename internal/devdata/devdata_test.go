package devdata

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadLE(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.i32")
	if err := os.WriteFile(p, []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	got := ReadLE[int32](t, p)
	if len(got) != 2 || got[0] != 1 || got[1] != -1 {
		t.Fatalf("ReadLE = %v, want [1 -1]", got)
	}
}

func TestRoot(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(root) != "data" || filepath.Base(filepath.Dir(root)) != "shared" {
		t.Fatalf("Root = %s, want .../shared/data", root)
	}
	// The repository root is the folder above internal/devdata.
	if _, err := os.Stat(filepath.Join(root, "..", "..", filepath.Base(mustAbs(t, "../..")), "go.mod")); err != nil {
		t.Fatalf("Root = %s is not beside the repository: %v", root, err)
	}
}

func mustAbs(t *testing.T, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
