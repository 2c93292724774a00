package blobio

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLocalGlob(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"data/b.parquet", "data/a.parquet", "data/c.arrow", "data/part-10.arrow", "data/part-2.arrow"} {
		writeFile(t, filepath.Join(dir, name), "x")
	}
	if err := os.Mkdir(filepath.Join(dir, "data", "dir.parquet"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		pattern string
		want    []string // relative to dir
		wantErr bool
	}{
		{"star, sorted, directories left out", "data/*.parquet", []string{"data/a.parquet", "data/b.parquet"}, false},
		{"prefix", "data/part-*.arrow", []string{"data/part-10.arrow", "data/part-2.arrow"}, false},
		{"plain path", "data/c.arrow", []string{"data/c.arrow"}, false},
		{"no match", "data/*.csv", []string{}, false},
		{"missing directory", "nothere/*.parquet", []string{}, false},
		{"bad pattern", "data/[", nil, true},
	} {
		got, err := Local{}.Glob(ctx, filepath.Join(dir, tc.pattern))
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		rel := []string{}
		for _, p := range got {
			r, _ := filepath.Rel(dir, p)
			rel = append(rel, r)
		}
		if !reflect.DeepEqual(rel, tc.want) {
			t.Errorf("%s: Glob = %v, want %v", tc.name, rel, tc.want)
		}
	}
	// A file:// pattern keeps its scheme, so that the paths route back to Local.
	got, err := Local{}.Glob(ctx, "file://"+filepath.Join(dir, "data/a.*"))
	if err != nil || len(got) != 1 || got[0] != "file://"+filepath.Join(dir, "data/a.parquet") {
		t.Errorf("file:// Glob = %v, %v", got, err)
	}
}

func TestLocalFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var fs FS = Local{}
	out := filepath.Join(dir, "out", "sub")
	if err := fs.MkdirAll(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll(ctx, out); err != nil {
		t.Errorf("MkdirAll of an existing directory: %v", err)
	}
	tmp, final := filepath.Join(out, ".a.tmp"), filepath.Join(out, "a.arrow")
	writeFile(t, final, "old content")

	w, err := fs.Create(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "0123456789"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename(ctx, tmp, final); err != nil {
		t.Fatalf("Rename over an existing file: %v", err)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{{tmp, false}, {final, true}, {out, true}, {filepath.Join(dir, "nope"), false}} {
		if got, err := fs.Exists(ctx, tc.path); err != nil || got != tc.want {
			t.Errorf("Exists(%s) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}

	f, err := fs.Open(ctx, final)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != 10 {
		t.Errorf("Size = %d, want 10", f.Size())
	}
	buf := make([]byte, 3)
	if _, err := f.ReadAt(buf, 7); err != nil || string(buf) != "789" {
		t.Errorf("ReadAt(7) = %q, %v; want 789", buf, err)
	}
	s := Section(f)
	if _, err := s.Seek(-4, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(s); err != nil || string(rest) != "6789" {
		t.Errorf("Section after Seek(-4, end) reads %q, %v", rest, err)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}

	if _, err := fs.Open(ctx, filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Open of a missing file: error %v, want one naming it", err)
	}
	if _, err := fs.Open(ctx, out); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Open of a directory: error %v", err)
	}
	if err := fs.Remove(ctx, final); err != nil {
		t.Error(err)
	}
	if err := fs.Remove(ctx, final); err != nil {
		t.Errorf("Remove of a missing file: %v", err)
	}
	if ok, _ := fs.Exists(ctx, final); ok {
		t.Error("file exists after Remove")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := fs.Open(cancelled, out); err == nil {
		t.Error("Open with a cancelled context: no error")
	}
}

func TestFor(t *testing.T) {
	if fs, err := For("/data/x.parquet"); err != nil || fs != (Local{}) {
		t.Errorf("For(local path) = %v, %v", fs, err)
	}
	if fs, err := For("file:///data/x.parquet"); err != nil || fs != (Local{}) {
		t.Errorf("For(file://) = %v, %v", fs, err)
	}
	if _, err := For("nosuch://b/x"); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("For(unregistered scheme): error %v", err)
	}
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ path, base, dir string }{
		{"gs://bucket/data/part-0.parquet", "part-0.parquet", "gs://bucket/data"},
		{"/abs/x.arrow", "x.arrow", "/abs"},
		{"rel.arrow", "rel.arrow", "."},
		{"/x", "x", "/"},
	} {
		if got := Base(tc.path); got != tc.base {
			t.Errorf("Base(%q) = %q, want %q", tc.path, got, tc.base)
		}
		if got := Dir(tc.path); got != tc.dir {
			t.Errorf("Dir(%q) = %q, want %q", tc.path, got, tc.dir)
		}
	}
	if got := Join("gs://b/out/", "a.arrow"); got != "gs://b/out/a.arrow" {
		t.Errorf("Join = %q", got)
	}
}
