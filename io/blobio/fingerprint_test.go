package blobio_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/blobio/blobiotest"
)

// TestFingerprint: the same content has the same fingerprint, a rewrite
// with other content (even of the same size) another, locally by content
// hash and on gs:// by generation; a missing file is an error naming it.
func TestFingerprint(t *testing.T) {
	ctx := ctxT(t)
	blobiotest.Start(t, "bkt")
	dir := t.TempDir()
	put := map[string]func(path string, b []byte){
		"local": func(path string, b []byte) {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"gs": func(path string, b []byte) {
			if err := blobio.WriteFile(ctx, &blobio.GCS{}, path, b); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, path := range map[string]string{"local": filepath.Join(dir, "a.parquet"), "gs": "gs://bkt/in/a.parquet"} {
		a, b := pattern(1000), pattern(1000)
		b[500]++
		put[name](path, a)
		f1, err := blobio.FingerprintOf(ctx, path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f2, err := blobio.FingerprintOf(ctx, path)
		if err != nil || f2 != f1 {
			t.Errorf("%s: fingerprint %+v then %+v (%v) for the same content", name, f1, f2, err)
		}
		want := "sha256:"
		if name == "gs" {
			want = "generation:"
		}
		if f1.Size != 1000 || !strings.HasPrefix(f1.Version, want) {
			t.Errorf("%s: fingerprint %+v, want size 1000 and a %s version", name, f1, want)
		}
		put[name](path, b)
		f3, err := blobio.FingerprintOf(ctx, path)
		if err != nil || f3 == f1 || f3.Size != 1000 {
			t.Errorf("%s: after a rewrite of the same size: %+v (%v), before %+v; want another version", name, f3, err, f1)
		}
		if _, err := blobio.FingerprintOf(ctx, path+".missing"); err == nil || !strings.Contains(err.Error(), "a.parquet.missing") {
			t.Errorf("%s: missing file: %v, want an error naming it", name, err)
		}
	}
}
