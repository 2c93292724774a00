package reportio

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
)

// The report reads what a user points it at: summary.json and the output
// shards it lists. The fuzz targets (run by .ci/fuzz.sh for a bounded time;
// crashers kept under testdata/fuzz/<Name>/ run as regression cases) feed
// it arbitrary bytes: Build must return a report or an error, never panic.

// fuzzFixture writes a small finished output into dir.
func fuzzFixture(t testing.TB, dir string) *resultio.Summary {
	f := randomFixture(9, 3, 30, []shardio.Format{shardio.Parquet}, nil, false, false)
	return f.write(t, dir, nil)
}

// copyDir copies the files of src into a new temporary directory: each
// fuzz input gets a fresh output without writing Parquet again.
func copyDir(t *testing.T, src string) string {
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// maxFuzzClasses: a summary.json's class count sizes the per-class tables
// (as the run that wrote it held the same); the fuzzer's larger counts only
// measure allocation, not parsing.
const maxFuzzClasses = 1 << 12

func FuzzSummary(f *testing.F) {
	dir := f.TempDir()
	fuzzFixture(f, dir)
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"classes": 3, "shards": [{"output": "../../etc/passwd"}]}`))
	f.Add([]byte(`{"classes": 9999999999, "shards": []}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := copyDir(t, dir)
		var probe struct{ Classes int64 }
		if json.Unmarshal(b, &probe) == nil && probe.Classes > maxFuzzClasses {
			// Refused before allocating, or not: only check the bound.
			if probe.Classes > 1<<31-1 {
				os.WriteFile(filepath.Join(d, "summary.json"), b, 0o644)
				if _, err := resultio.ReadSummary(context.Background(), d); err == nil {
					t.Errorf("summary.json with %d classes read without error", probe.Classes)
				}
			}
			return
		}
		if err := os.WriteFile(filepath.Join(d, "summary.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		Build(context.Background(), d, Options{})
	})
}

func FuzzOutputShard(f *testing.F) {
	dir := f.TempDir()
	sum := fuzzFixture(f, dir)
	b, err := os.ReadFile(filepath.Join(dir, sum.Shards[0].Output))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		d := copyDir(t, dir)
		if err := os.WriteFile(filepath.Join(d, sum.Shards[0].Output), b, 0o644); err != nil {
			t.Fatal(err)
		}
		Build(context.Background(), d, Options{})
	})
}
