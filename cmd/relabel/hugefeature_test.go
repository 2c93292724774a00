package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// writeDigitsFeature writes the shipped digits shards as one Parquet file
// with feature dim of the file's row row set to v.
func writeDigitsFeature(t *testing.T, path string, row, dim int, v float32) {
	t.Helper()
	ctx := context.Background()
	shards, err := shardio.Scan(ctx, digitsShards, shardio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := shardio.ReadAll(ctx, shards, shardio.ReadOptions{Classes: 10, D: shards[0].D})
	if err != nil {
		t.Fatal(err)
	}
	rows[0].Features[row*rows[0].D+dim] = v
	fs, err := blobio.For(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := shardio.WriteInput(ctx, fs, path, shardio.Parquet, rows, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestRunHugeFeature: a finite feature so large that its squared distances
// overflow float32 is bad input with --no-standardise (exit 1, one line
// naming file, row and column, no output); z-scored (the default) it is an
// ordinary value, the moments being float64.
func TestRunHugeFeature(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "huge.parquet")
	writeDigitsFeature(t, in, 5, 3, 1e37)

	out := filepath.Join(dir, "raw")
	r := relabel(t, "run", "--input", in, "--output", out, "--classes", "10", "--report=false", "--no-standardise")
	want := `shardio: ` + in + ` row 5 column "features": 1e+37 at dimension 3`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("--no-standardise: exit %d, stderr\n%s\nwant exit 1 and %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--no-standardise left %s behind: %v %v", out, listDir(t, out), err)
	}

	out = filepath.Join(dir, "z")
	r = relabel(t, "run", "--input", in, "--output", out, "--classes", "10", "--report=false")
	if r.code != 0 {
		t.Fatalf("standardised: exit %d, stderr\n%s", r.code, r.stderr)
	}
}
