package pipelines_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
)

var (
	updateLakePins = flag.Bool("update-lake-pins", false, "rewrite testdata/lake.sha256 from this build's lake outputs")
	lakePin30k     = flag.Bool("lake-pin-30k", false, "also pin the 30,000-row ivf lake (about a minute)")
)

// TestLakePins pins the rows the lake writes, day by day, so that moving
// the lake's code keeps its outputs byte for byte (issue 36): a directory
// lake and a table lake over the digits days (exact neighbours), and a
// table lake of 6,000 (with -lake-pin-30k also 30,000) synthetic rows
// through ivf with a kept partitioning and a 300-row append. What is hashed
// is every column of every output row, sorted by row (the schema metadata,
// which records the options and version, and the files' names, which carry a
// run's token, are left out). Regenerate with
//
//	go test ./pipelines -run TestLakePins -update-lake-pins [-lake-pin-30k]
//
// only when a change of the lake's outputs is intended, and say why in the
// commit.
func TestLakePins(t *testing.T) {
	ctx := ctxT(t)
	got := map[string]string{}
	days := digitsDays(t)

	// A directory lake.
	in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
	cfg := dirConfig(in, out)
	for day, r := range days {
		writeDay(t, filepath.Join(in, fmt.Sprintf("day-%d.parquet", day)), r)
		if _, err := pipelines.Run(ctx, cfg, embedded); err != nil {
			t.Fatalf("dir day %d: %v", day, err)
		}
		got[fmt.Sprintf("dir/day-%d", day)] = hashDirRows(t, out)
	}

	// A table lake.
	l := newTestLake(t)
	tcfg := l.config("ns.inc")
	tcfg.Lake.Incremental = true
	for day, r := range days {
		l.appendRows(t, r)
		if _, err := pipelines.Run(ctx, tcfg, embedded); err != nil {
			t.Fatalf("table day %d: %v", day, err)
		}
		got[fmt.Sprintf("table/day-%d", day)] = hashTableRows(t, l, "ns.inc")
	}

	// ivf with a kept partitioning, and an append.
	sizes := []int{6000}
	if *lakePin30k {
		sizes = append(sizes, 30000)
	}
	for _, n := range sizes {
		l := newTestLake(t)
		l.appendRows(t, blobRows(0, n, 1))
		o := l.config("ns.ivf")
		o.Neighbours, o.Rounds, o.L = options.NeighboursIVF, 3, 50
		o.Lake.Incremental = true
		for day := 0; day < 2; day++ {
			if day == 1 {
				l.appendRows(t, blobRows(int64(n), 300, 2))
			}
			if _, err := pipelines.Run(ctx, o, embedded); err != nil {
				t.Fatalf("ivf %d day %d: %v", n, day, err)
			}
			got[fmt.Sprintf("ivf-%d/day-%d", n, day)] = hashTableRows(t, l, "ns.ivf")
		}
	}

	path := filepath.Join("testdata", "lake.sha256")
	if *updateLakePins {
		want := map[string]string{}
		if _, err := os.Stat(path); err == nil {
			want = readPins(t, path)
		}
		for k, v := range got {
			want[k] = v
		}
		var buf bytes.Buffer
		for _, k := range slices.Sorted(maps.Keys(want)) {
			fmt.Fprintf(&buf, "%s %s\n", want[k], k)
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readPins(t, path)
	for _, k := range slices.Sorted(maps.Keys(got)) {
		w, ok := want[k]
		if !ok {
			t.Errorf("%s: not pinned (run with -update-lake-pins if the new output is intended)", k)
			continue
		}
		if got[k] != w {
			t.Errorf("%s: rows hash %s, pinned %s", k, got[k], w)
		}
	}
}

func readPins(t *testing.T, path string) map[string]string {
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

// rowLines appends one line per row of rec: its columns' names and values.
func rowLines(lines []string, rec arrow.RecordBatch) []string {
	for i := 0; i < int(rec.NumRows()); i++ {
		var b strings.Builder
		for c := 0; c < int(rec.NumCols()); c++ {
			fmt.Fprintf(&b, "%s=%s\t", rec.ColumnName(c), rec.Column(c).ValueStr(i))
		}
		lines = append(lines, b.String())
	}
	return lines
}

func hashLines(lines []string) string {
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashDirRows hashes every row of a directory lake's output shards.
func hashDirRows(t *testing.T, dir string) string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.arrow"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: no output shards (%v)", dir, err)
	}
	var lines []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatal(err)
			}
			lines = rowLines(lines, rec)
		}
		r.Close()
		f.Close()
	}
	return hashLines(lines)
}

// hashTableRows hashes every row of a table's current snapshot, read by
// iceberg-go's own scan.
func hashTableRows(t *testing.T, l *testLake, name string) string {
	t.Helper()
	ctx := context.Background()
	tbl, err := l.cat.LoadTable(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		lines = rowLines(lines, rec)
		rec.Release()
	}
	return hashLines(lines)
}
