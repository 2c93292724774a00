package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/internal/pins"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden.sha256 from this build's outputs")

// goldenRuns are the pinned runs on the committed digits slice: the default
// (exact neighbours), ivf with spilling, Parquet output and the annotators.
var goldenRuns = []struct {
	name string
	args []string
}{
	{"exact", []string{"--input", digitsShards}},
	{"ivf", []string{"--input", digitsShards, "--neighbours", "ivf", "--partitions", "8", "--nprobe", "3"}},
	{"parquet", []string{"--input", digitsShards, "--format", "parquet", "--rounds", "4"}},
	{"annotators", []string{"--input", "../../testdata/digits/annotators-5.parquet", "--rounds", "4"}},
}

// TestGoldenOutputs pins the bytes relabel writes on the committed digits
// slice: a refactor must keep them identical. Each output shard is pinned
// twice: its data (the record batches with the schema metadata, which records
// the options, stripped) and the whole file. Regenerate with
//
//	go test ./cmd/relabel -run TestGoldenOutputs -update-golden
//
// only when a change of the outputs is intended, and say why in the commit.
func TestGoldenOutputs(t *testing.T) {
	got := map[string]string{}
	for _, g := range goldenRuns {
		out := filepath.Join(t.TempDir(), g.name)
		mustRelabel(t, append([]string{"run", "--output", out}, g.args...)...)
		names := listDir(t, out)
		for _, name := range names {
			if name == "summary.json" || name == "report.html" { // timings
				continue
			}
			b, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			key := g.name + "/" + name
			got[key+" file"] = sum(b)
			if strings.HasSuffix(name, ".arrow") {
				got[key+" data"] = sum(dataBytes(t, b))
			}
		}
	}
	path := filepath.Join("testdata", "golden.sha256")
	pins.Check(t, path, got, *updateGolden)
}

func sum(b []byte) string { return pins.Sum(b) }

// dataBytes re-encodes an Arrow IPC file's record batches as a stream with
// the schema metadata dropped.
func dataBytes(t *testing.T, file []byte) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	r, err := ipc.NewFileReader(bytes.NewReader(file), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sc := arrow.NewSchema(r.Schema().Fields(), nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc), ipc.WithAllocator(mem))
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
