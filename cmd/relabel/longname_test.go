package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
)

// TestRunLongInputNames: input file names of 250 bytes (the file system
// allows 255) run end to end: relabel's own names derived from them (the
// output shard and the report left beside it while the run writes) are
// shortened to fit, and two such names that differ only near the end give
// two outputs.
func TestRunLongInputNames(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := strings.Repeat("n", 241)
	for i, part := range []string{"0000", "0001"} {
		b, err := os.ReadFile("../../testdata/digits/noisy-idn-0.4-part-" + part + ".parquet")
		if err != nil {
			t.Fatal(err)
		}
		name := prefix + string(rune('a'+i)) + ".parquet"
		if len(name) != 250 {
			t.Fatalf("test name is %d bytes, want 250", len(name))
		}
		if err := os.WriteFile(filepath.Join(in, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	mustRelabel(t, "run", "--input", filepath.Join(in, "*.parquet"), "--output", out, "--classes", "10", "--report=false")
	var shards []string
	for _, n := range listDir(t, out) {
		if len(n) > resultio.MaxNameBytes {
			t.Errorf("output %q is %d bytes", n, len(n))
		}
		if strings.HasSuffix(n, ".arrow") {
			shards = append(shards, n)
		}
	}
	if len(shards) != 2 {
		t.Fatalf("outputs %v, want two shards", listDir(t, out))
	}
	o, err := resultio.ReadOutput(context.Background(), out, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if o.Len() == 0 {
		t.Error("output has no rows")
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Shards []struct{ Input, Output string }
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Shards) != 2 {
		t.Fatalf("summary.json has %d shards, want 2", len(sum.Shards))
	}
	for _, s := range sum.Shards {
		if want := resultio.OutputName(s.Input, shardio.ArrowFile); s.Output != want || !slices.Contains(shards, want) {
			t.Errorf("summary: %s -> %s, want %s among %v", filepath.Base(s.Input), s.Output, want, shards)
		}
	}
}
