package blobio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/blobio/blobiotest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pattern returns n bytes that differ at every offset modulo 251, so a read
// at the wrong offset is caught.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func TestGCSRegistered(t *testing.T) {
	fsys, err := blobio.For("gs://bkt/x")
	if err != nil {
		t.Fatalf("For(gs://bkt/x): %v", err)
	}
	if _, ok := fsys.(*blobio.GCS); !ok {
		t.Fatalf("For(gs://bkt/x) = %T, want *blobio.GCS", fsys)
	}
}

func TestGCSGlob(t *testing.T) {
	e := blobiotest.Start(t, "bkt")
	for _, name := range []string{
		"in/a.parquet", "in/b.parquet", "in/c.txt", "in/sub/d.parquet",
		"in2/f.parquet", "other/e.parquet",
	} {
		e.Put(name, []byte(name))
	}
	g := &blobio.GCS{}
	ctx := ctxT(t)
	tests := []struct {
		name    string
		pattern string
		want    []string
		wantErr bool
	}{
		{"star suffix", "gs://bkt/in/*.parquet", []string{"gs://bkt/in/a.parquet", "gs://bkt/in/b.parquet"}, false},
		{"star does not cross slash", "gs://bkt/in/*", []string{"gs://bkt/in/a.parquet", "gs://bkt/in/b.parquet", "gs://bkt/in/c.txt"}, false},
		{"nested", "gs://bkt/in/*/*.parquet", []string{"gs://bkt/in/sub/d.parquet"}, false},
		{"question mark", "gs://bkt/in/?.parquet", []string{"gs://bkt/in/a.parquet", "gs://bkt/in/b.parquet"}, false},
		{"class", "gs://bkt/in/[bc].*", []string{"gs://bkt/in/b.parquet", "gs://bkt/in/c.txt"}, false},
		{"literal", "gs://bkt/in/a.parquet", []string{"gs://bkt/in/a.parquet"}, false},
		{"literal is not a prefix match", "gs://bkt/in", nil, false},
		{"star in directory", "gs://bkt/*/e.parquet", []string{"gs://bkt/other/e.parquet"}, false},
		{"no match", "gs://bkt/nothing/*", nil, false},
		{"bad pattern", "gs://bkt/in/[", nil, true},
		{"wildcard bucket", "gs://b*/in/*", nil, true},
		{"missing bucket", "gs://nobucket/in/*", nil, true},
		{"not gs", "s3://bkt/in/*", nil, true},
		{"no bucket", "gs:///in/*", nil, true},
	}
	for _, tc := range tests {
		got, err := g.Glob(ctx, tc.pattern)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: Glob(%q) error = %v, want error %v", tc.name, tc.pattern, err, tc.wantErr)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Glob(%q) = %q, want %q", tc.name, tc.pattern, got, tc.want)
		}
	}
}

// TestGCSGlobListsPrefixOnly checks the listing is narrowed to the text before
// the first wildcard rather than walking the bucket.
func TestGCSGlobListsPrefixOnly(t *testing.T) {
	e := blobiotest.Start(t, "bkt")
	e.Put("in/a.parquet", []byte("a"))
	g := &blobio.GCS{}
	if _, err := g.Glob(ctxT(t), "gs://bkt/in/part-*.parquet"); err != nil {
		t.Fatalf("Glob: %v", err)
	}
	if got, want := e.ListPrefixes(), []string{"in/part-"}; !reflect.DeepEqual(got, want) {
		t.Errorf("listing prefixes = %q, want %q", got, want)
	}
}

// TestGCSRangedReads checks each ReadAt fetches exactly the bytes it asks
// for: a Parquet reader reading the footer must not download the file.
func TestGCSRangedReads(t *testing.T) {
	e := blobiotest.Start(t, "bkt")
	const size = 1 << 20
	content := pattern(size)
	e.Put("in/big.bin", content)
	g := &blobio.GCS{}
	f, err := g.Open(ctxT(t), "gs://bkt/in/big.bin")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer f.Close()
	if f.Size() != size {
		t.Fatalf("Size() = %d, want %d", f.Size(), size)
	}
	e.TakeDownloads() // Open fetches metadata only, but start from zero anyway.

	tests := []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantEOF bool
	}{
		{"footer", size - 8, 8, 8, false},
		{"middle", 123457, 4096, 4096, false},
		{"start", 0, 1, 1, false},
		{"past the end", size - 10, 100, 10, true},
		{"at the end", size, 10, 0, true},
	}
	for _, tc := range tests {
		buf := make([]byte, tc.n)
		n, err := f.ReadAt(buf, tc.off)
		if n != tc.wantN {
			t.Errorf("%s: ReadAt(%d bytes at %d) n = %d, want %d", tc.name, tc.n, tc.off, n, tc.wantN)
		}
		if gotEOF := errors.Is(err, io.EOF); gotEOF != tc.wantEOF || (err != nil && !gotEOF) {
			t.Errorf("%s: ReadAt error = %v, want EOF %v", tc.name, err, tc.wantEOF)
		}
		if n > 0 && !bytes.Equal(buf[:n], content[tc.off:tc.off+int64(n)]) {
			t.Errorf("%s: ReadAt returned the wrong bytes", tc.name)
		}
		var served int64
		for _, d := range e.TakeDownloads() {
			served += d.Bytes
			if d.Range == "" {
				t.Errorf("%s: a download had no Range header", tc.name)
			}
		}
		if served != int64(tc.wantN) {
			t.Errorf("%s: emulator served %d object bytes, want exactly %d", tc.name, served, tc.wantN)
		}
	}
}

func TestGCSOpenMissing(t *testing.T) {
	blobiotest.Start(t, "bkt")
	g := &blobio.GCS{}
	_, err := g.Open(ctxT(t), "gs://bkt/nope.parquet")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing) error = %v, want one matching fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), "gs://bkt/nope.parquet") {
		t.Errorf("Open(missing) error %q does not name the path", err)
	}
}

// TestGCSCreateRename is relabel's commit: write a temporary name, then
// rename it to the final one.
func TestGCSCreateRename(t *testing.T) {
	blobiotest.Start(t, "bkt")
	g := &blobio.GCS{}
	ctx := ctxT(t)
	content := pattern(300_000)
	tmp, final := "gs://bkt/out/.tmp-part-0", "gs://bkt/out/part-0.parquet"

	if err := g.MkdirAll(ctx, "gs://bkt/out"); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	w, err := g.Create(ctx, tmp)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := w.Write(content); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if ok, err := g.Exists(ctx, tmp); err != nil || ok {
		t.Errorf("before Close: Exists(%s) = %v, %v; want false (not visible until Close)", tmp, ok, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := g.Rename(ctx, tmp, final); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{{tmp, false}, {final, true}, {"gs://bkt/out", true}, {"gs://bkt/out/", true}, {"gs://bkt/ou", false}, {"gs://bkt", true}, {"gs://nobucket", false}} {
		if ok, err := g.Exists(ctx, c.path); err != nil || ok != c.want {
			t.Errorf("after Rename: Exists(%s) = %v, %v; want %v", c.path, ok, err, c.want)
		}
	}
	f, err := g.Open(ctx, final)
	if err != nil {
		t.Fatalf("Open(%s): %v", final, err)
	}
	got := make([]byte, f.Size())
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatalf("ReadAt: %v", err)
	}
	if !bytes.Equal(got, content) {
		t.Errorf("read back %d bytes differing from the %d written", len(got), len(content))
	}

	// Rename replaces an existing destination.
	w, err = g.Create(ctx, tmp)
	if err != nil {
		t.Fatalf("Create again: %v", err)
	}
	fmt.Fprint(w, "second")
	if err := w.Close(); err != nil {
		t.Fatalf("Close again: %v", err)
	}
	if err := g.Rename(ctx, tmp, final); err != nil {
		t.Fatalf("Rename over existing: %v", err)
	}
	f, err = g.Open(ctx, final)
	if err != nil || f.Size() != int64(len("second")) {
		t.Fatalf("after replacing Rename: Open = %v, size %d; want size %d", err, f.Size(), len("second"))
	}

	if err := g.Rename(ctx, "gs://bkt/out/missing", final); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Rename(missing) error = %v, want fs.ErrNotExist", err)
	}
	if err := g.Remove(ctx, final); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if ok, _ := g.Exists(ctx, final); ok {
		t.Errorf("Exists after Remove = true")
	}
	if err := g.Remove(ctx, final); err != nil {
		t.Errorf("Remove(missing) = %v, want nil", err)
	}
}

// TestGCSFailedUploadLeavesNothing cuts the connection after part of a
// resumable upload has been accepted: Close must fail and no object may exist
// under the temporary name, nor under the final one.
func TestGCSFailedUploadLeavesNothing(t *testing.T) {
	e := blobiotest.Start(t, "bkt")
	ctx := ctxT(t)
	const chunk = 256 << 10
	g := &blobio.GCS{ChunkSize: chunk, ChunkRetryDeadline: time.Second}
	tmp, final := "gs://bkt/out/.tmp-part-0", "gs://bkt/out/part-0.parquet"

	var chunks int
	e.SetAbort(func(r *http.Request) bool {
		// Chunks of a resumable upload carry its upload_id.
		if r.URL.Query().Get("upload_id") == "" {
			return false
		}
		chunks++
		return chunks > 2 // accept two chunks, then fail every later request
	})

	w, err := g.Create(ctx, tmp)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	_, werr := w.Write(pattern(6 * chunk))
	cerr := w.Close()
	if werr == nil && cerr == nil {
		t.Fatalf("Write and Close both succeeded although the upload was cut")
	}
	t.Logf("Write: %v; Close: %v", werr, cerr)
	if cerr != nil && !strings.Contains(cerr.Error(), tmp) {
		t.Errorf("Close error %q does not name the path", cerr)
	}
	e.SetAbort(nil)
	if chunks < 3 {
		t.Fatalf("the upload sent %d chunk requests; the test needs the cut to come after 2 were accepted", chunks)
	}
	for _, p := range []string{tmp, final} {
		if ok, err := g.Exists(ctx, p); err != nil || ok {
			t.Errorf("after the failed upload: Exists(%s) = %v, %v; want false", p, ok, err)
		}
	}
	if got, err := g.Glob(ctx, "gs://bkt/out/*"); err != nil || len(got) != 0 {
		t.Errorf("after the failed upload: Glob(out/*) = %q, %v; want nothing", got, err)
	}
}

// TestGCSNoCredentials checks the lazily made client reports missing
// credentials with the fix, instead of failing at init or hanging.
func TestGCSNoCredentials(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/missing.json")
	t.Setenv("HOME", t.TempDir())
	g := &blobio.GCS{}
	start := time.Now()
	_, err := g.Exists(ctxT(t), "gs://bkt/x")
	if err == nil {
		t.Fatalf("Exists without credentials succeeded")
	}
	if !strings.Contains(err.Error(), "Application Default Credentials") {
		t.Errorf("error %q does not point at Application Default Credentials", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to report missing credentials", d)
	}
}
