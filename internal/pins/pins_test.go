package pins

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestRoundTrip: a written pin file reads back as written, and Diff names
// a changed key, an unpinned one and a pinned one not computed, in key
// order, and not an unchanged one.
func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.sha256")
	want := map[string]string{"b/x file": Sum([]byte("x")), "a": Sum(nil), "c": "00"}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read %v (%v), want %v", got, err, want)
	}
	d := Diff(map[string]string{"a": Sum(nil), "b/x file": "ff", "new": "00"}, want)
	if len(d) != 3 || d[0] != "b/x file: sha256 ff, pinned "+want["b/x file"] || d[1] != "c: pinned, but not computed" || d[2][:4] != "new:" {
		t.Errorf("diff %q", d)
	}
}
