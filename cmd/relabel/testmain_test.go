package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/resultio"
)

// relabelBin is the relabel binary built once by TestMain: the CLI tests run
// the real program (its flag parsing, exit codes and stderr), not dispatch.
var relabelBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "relabel-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	relabelBin = filepath.Join(dir, "relabel")
	// Build from this package's directory (go test runs here), reusing the
	// build cache the test binary itself was built with.
	build := exec.Command("go", "build", "-o", relabelBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building relabel for the CLI tests: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := ptest.MainRet(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// sharedData is ../shared/data seen from this package.
const sharedData = "../../../shared/data"

// needShared returns the path of rel under ../shared/data, skipping the test
// when the development data is absent.
func needShared(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(sharedData, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("development data absent (%v): this test reads ../shared/data", err)
	}
	return p
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
	wall           time.Duration
}

// relabel runs the binary with args and returns its exit status and output.
func relabel(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, relabelBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), wall: time.Since(t0)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("relabel %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustRelabel runs the binary and fails the test unless it exits 0.
func mustRelabel(t *testing.T, args ...string) result {
	t.Helper()
	r := relabel(t, args...)
	if r.code != 0 {
		t.Fatalf("relabel %s: exit %d\nstdout: %s\nstderr (tail): %s", strings.Join(args, " "), r.code, r.stdout, tail(r.stderr, 2000))
	}
	t.Logf("relabel %s: %.1fs", strings.Join(args, " "), r.wall.Seconds())
	return r
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// runs memoizes successful runs by their arguments, so that tests checking
// different properties of the same run (accuracy, counts, determinism) share
// it: each digits run costs about ten seconds on two cores.
var runs struct {
	sync.Mutex
	m map[string]result
}

func sharedRun(t *testing.T, args ...string) result {
	t.Helper()
	key := strings.Join(args, "\x00")
	runs.Lock()
	defer runs.Unlock()
	if r, ok := runs.m[key]; ok {
		return r
	}
	r := mustRelabel(t, args...)
	if runs.m == nil {
		runs.m = map[string]result{}
	}
	runs.m[key] = r
	return r
}

// outDir is a directory that outlives single tests (shared runs write there);
// TestMain's temporary directory holds it.
func outDir(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(filepath.Dir(relabelBin), name)
}

// readI32 reads a raw little-endian int32 file (truth.i32, noisy-*.i32).
func readI32(t *testing.T, path string) []int32 {
	t.Helper()
	v, err := resultio.ReadI32(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// output is an output shard read back: per row, in file order.
type output struct {
	ids     []int64
	given   [][]int32 // the label column: one label, or the annotations
	clean   []int32
	prob    []float32
	changed []bool
	schema  *arrow.Schema
}

// readOutput reads an output shard (Arrow IPC file or Parquet, by extension)
// with arrow-go's own readers, not relabel's.
func readOutput(t *testing.T, path string) output {
	t.Helper()
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	var sc *arrow.Schema
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	switch filepath.Ext(path) {
	case ".arrow":
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer r.Close()
		sc = r.Schema()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatalf("%s batch %d: %v", path, i, err)
			}
			rec.Retain()
			recs = append(recs, rec)
		}
	case ".parquet":
		pf, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, mem)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer tbl.Release()
		sc = tbl.Schema()
		tr := array.NewTableReader(tbl, 1<<16)
		defer tr.Release()
		for tr.Next() {
			rec := tr.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
	default:
		t.Fatalf("%s: unknown output extension", path)
	}
	o := output{schema: sc}
	for _, rec := range recs {
		col := func(names ...string) arrow.Array {
			for _, name := range names {
				if idx := rec.Schema().FieldIndices(name); len(idx) == 1 {
					return rec.Column(idx[0])
				}
			}
			t.Fatalf("%s: no column %q in %v", path, names, rec.Schema())
			return nil
		}
		ids := col("id").(*array.Int64)
		clean := col("clean_label")
		prob := col("clean_prob").(*array.Float32)
		changed := col("changed").(*array.Boolean)
		// The given labels keep their input column: label, or labels
		// (the annotations).
		given := col("label", "labels")
		for i := 0; i < int(rec.NumRows()); i++ {
			o.ids = append(o.ids, ids.Value(i))
			o.clean = append(o.clean, intAt(t, clean, i))
			o.prob = append(o.prob, prob.Value(i))
			o.changed = append(o.changed, changed.Value(i))
			o.given = append(o.given, labelsAt(t, given, i))
		}
		rec.Release()
	}
	return o
}

func intAt(t *testing.T, a arrow.Array, i int) int32 {
	t.Helper()
	if a.IsNull(i) {
		return -1
	}
	switch a := a.(type) {
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return int32(a.Value(i))
	}
	t.Fatalf("label column of type %v, want int32 or int64", a.DataType())
	return 0
}

func labelsAt(t *testing.T, a arrow.Array, i int) []int32 {
	t.Helper()
	if l, ok := a.(array.ListLike); ok {
		lo, hi := l.ValueOffsets(i)
		var out []int32
		for j := lo; j < hi; j++ {
			out = append(out, intAt(t, l.ListValues(), int(j)))
		}
		return out
	}
	return []int32{intAt(t, a, i)}
}

// byID maps an output's ids to their clean labels.
func (o output) byID() map[int64]int32 {
	m := make(map[int64]int32, len(o.ids))
	for i, id := range o.ids {
		m[id] = o.clean[i]
	}
	return m
}

// accuracy is the fraction of rows whose clean label is the true one (ids index truth).
func (o output) accuracy(t *testing.T, truth []int32) float64 {
	t.Helper()
	ok := 0
	for i, id := range o.ids {
		if id < 0 || int(id) >= len(truth) {
			t.Fatalf("id %d outside the truth's %d rows", id, len(truth))
		}
		if o.clean[i] == truth[id] {
			ok++
		}
	}
	return float64(ok) / float64(max(len(o.ids), 1))
}

// givenAccuracy scores the given labels (the majority of several annotations,
// ties to the lower class) against the truth: the baseline to beat.
func (o output) givenAccuracy(truth []int32) float64 {
	ok := 0
	for i, id := range o.ids {
		if majority(o.given[i]) == truth[id] {
			ok++
		}
	}
	return float64(ok) / float64(max(len(o.ids), 1))
}

func majority(labels []int32) int32 {
	count := map[int32]int{}
	best, bestN := int32(-1), 0
	for _, l := range labels {
		if l < 0 {
			continue
		}
		count[l]++
		if n := count[l]; n > bestN || (n == bestN && l < best) {
			best, bestN = l, n
		}
	}
	return best
}

// listDir returns the names in dir, sorted (hidden ones included).
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
