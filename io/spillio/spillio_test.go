package spillio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoundTrip: what Write stores comes back from Read by reference, several
// elements to a file, an empty one included; a rewrite of the same name gives
// the same references; Drop removes the generation, after which a Read is an
// error that says what probably happened; an off Dir drops nothing.
func TestRoundTrip(t *testing.T) {
	d := Dir(t.TempDir())
	encs := [][]byte{[]byte("first"), {}, []byte("third element")}
	refs, err := d.Write(2, "b1", encs...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range refs {
		got, err := Read(r)
		if err != nil || !bytes.Equal(got, encs[i]) {
			t.Errorf("element %d: %q (err %v), want %q", i, got, err, encs[i])
		}
		// ReadFunc's pooled buffer: the longest element first, so the
		// shorter ones reuse a larger buffer and must get only their bytes.
		for _, j := range []int{2, i} {
			if err := ReadFunc(refs[j], func(b []byte) error {
				if !bytes.Equal(b, encs[j]) {
					t.Errorf("ReadFunc element %d: %q, want %q", j, b, encs[j])
				}
				return nil
			}); err != nil {
				t.Errorf("ReadFunc element %d: %v", j, err)
			}
		}
	}
	again, err := d.Write(2, "b1", encs...)
	if err != nil || len(again) != len(refs) || again[2] != refs[2] {
		t.Errorf("rewrite: refs %v (err %v), want %v", again, err, refs)
	}
	if _, err := os.Stat(refs[0].Path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	if err := d.Drop(2); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(refs[0]); err == nil || !strings.Contains(err.Error(), "spill directory removed") {
		t.Errorf("read after drop: %v, want an error naming the removed directory", err)
	}
	if err := ReadFunc(refs[0], func([]byte) error { t.Error("ReadFunc called use after drop"); return nil }); err == nil {
		t.Error("ReadFunc after drop: no error")
	}
	if err := Dir("").Drop(2); err != nil || Dir("").On() {
		t.Errorf("off Dir: Drop %v, On %v", err, Dir("").On())
	}
}

// TestWriteNeverRecreatesDir: a bundle still writing after its stopped run
// removed the spill directory fails, and leaves no directory behind.
func TestWriteNeverRecreatesDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "spill")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	d := Dir(root)
	if _, err := d.Write(1, "a", []byte("x")); err != nil {
		t.Fatalf("write into an existing directory: %v", err)
	}
	if _, err := d.Write(1, "b", []byte("y")); err != nil {
		t.Fatalf("second write into the same generation: %v", err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Write(2, "c", []byte("z")); err == nil {
		t.Error("a write after the directory was removed succeeded")
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the removed directory is back (%v)", err)
	}
}

// TestAppender: what an Appender stores comes back by reference, several
// elements (an empty one included) to a file; appending to the same name
// again starts the file afresh; Drop removes it with its generation.
func TestAppender(t *testing.T) {
	d := Dir(t.TempDir())
	for range 2 {
		a, err := d.Append(3, "w0")
		if err != nil {
			t.Fatal(err)
		}
		encs := [][]byte{[]byte("one"), {}, []byte("three and more")}
		var refs []Ref
		for _, e := range encs {
			r, err := a.Put(e)
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, r)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if refs[0].Off != 0 || refs[2].Off != 3 {
			t.Errorf("references %+v: the file was not started afresh or elements overlap", refs)
		}
		for i, r := range refs {
			if got, err := Read(r); err != nil || !bytes.Equal(got, encs[i]) {
				t.Errorf("element %d: %q (err %v), want %q", i, got, err, encs[i])
			}
		}
	}
	if err := d.Drop(3); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Gen(3)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("generation 3 after Drop: %v", err)
	}
}
