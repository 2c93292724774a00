package blobio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadWriteFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content []byte
	}{
		{"empty", nil},
		{"small", []byte("summary")},
		{"large", bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 100_003)},
	} {
		path := filepath.Join(dir, tc.name+".bin")
		if err := WriteFile(ctx, Local{}, path, tc.content); err != nil {
			t.Fatalf("%s: WriteFile: %v", tc.name, err)
		}
		got, err := ReadFile(ctx, Local{}, path)
		if err != nil {
			t.Fatalf("%s: ReadFile: %v", tc.name, err)
		}
		if !bytes.Equal(got, tc.content) {
			t.Errorf("%s: read back %d bytes differing from the %d written", tc.name, len(got), len(tc.content))
		}
	}
	// WriteFile replaces the whole file, as os.WriteFile does.
	path := filepath.Join(dir, "small.bin")
	if err := WriteFile(ctx, Local{}, path, []byte("ab")); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(ctx, Local{}, path); err != nil || string(got) != "ab" {
		t.Errorf("after rewriting: ReadFile = %q, %v; want \"ab\"", got, err)
	}
	if _, err := ReadFile(ctx, Local{}, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) error = %v, want fs.ErrNotExist", err)
	}
	if err := WriteFile(ctx, Local{}, filepath.Join(dir, "no", "dir", "x"), []byte("x")); err == nil {
		t.Errorf("WriteFile into a missing directory succeeded")
	}
}

// failFS fails the Write or the Close of every file it creates.
type failFS struct {
	Local
	failWrite, failClose bool
	closed               int
}

type failWriter struct{ fs *failFS }

func (w failWriter) Write(b []byte) (int, error) {
	if w.fs.failWrite {
		return 0, errors.New("disk full")
	}
	return len(b), nil
}

func (w failWriter) Close() error {
	w.fs.closed++
	if w.fs.failClose {
		return errors.New("upload cut")
	}
	return nil
}

func (f *failFS) Create(ctx context.Context, path string) (io.WriteCloser, error) {
	return failWriter{f}, nil
}

// TestWriteFileErrors checks that a failing Write or Close is reported with
// the path, and that the writer is closed either way.
func TestWriteFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   *failFS
		want string
	}{
		{"write", &failFS{failWrite: true}, "disk full"},
		{"close", &failFS{failClose: true}, "upload cut"},
	} {
		err := WriteFile(context.Background(), tc.fs, "mem://x/y", []byte("abc"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "mem://x/y") {
			t.Errorf("%s: WriteFile error = %v, want one naming mem://x/y and %q", tc.name, err, tc.want)
		}
		if tc.fs.closed != 1 {
			t.Errorf("%s: Close called %d times, want 1", tc.name, tc.fs.closed)
		}
	}
}
