package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
	if *updateGolden {
		var buf bytes.Buffer
		for _, k := range sortedKeys(got) {
			fmt.Fprintf(&buf, "%s %s\n", got[k], k)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readGolden(t, path)
	for _, k := range sortedKeys(want) {
		if got[k] != want[k] {
			t.Errorf("%s: sha256 %s, pinned %s", k, got[k], want[k])
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: not pinned (run with -update if the new output is intended)", k)
		}
	}
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func readGolden(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		h, k, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		m[k] = h
	}
	return m
}

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
