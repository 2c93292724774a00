package lake_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/internal/pins"
	"github.com/relabel/relabel/options"
)

var updateLakePins = flag.Bool("update-lake-pins", false, "rewrite testdata/lake.sha256 from this build's lake outputs")

// TestLakePins pins the rows the lake writes, day by day, so that moving
// the lake's code keeps its outputs byte for byte: a directory
// lake and a table lake over the digits days (exact neighbours), and a
// table lake of 30,000 synthetic rows through ivf with a kept partitioning
// and a 300-row append. What is hashed
// is every column of every output row, sorted by row (the schema metadata,
// which records the options and version, and the files' names, which carry a
// run's token, are left out). Regenerate with
//
//	go test ./lake -run TestLakePins -update-lake-pins
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
		if _, err := runLake(ctx, cfg, embedded); err != nil {
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
		if _, err := runLake(ctx, tcfg, embedded); err != nil {
			t.Fatalf("table day %d: %v", day, err)
		}
		got[fmt.Sprintf("table/day-%d", day)] = hashTableRows(t, l, "ns.inc")
	}

	// ivf with a kept partitioning, and an append.
	for _, n := range []int{30000} {
		l := newTestLake(t)
		l.appendRows(t, blobRows(0, n, 1))
		o := l.config("ns.ivf")
		o.Neighbours, o.Rounds, o.L = options.NeighboursIVF, 3, 50
		o.Lake.Incremental = true
		for day := 0; day < 2; day++ {
			if day == 1 {
				l.appendRows(t, blobRows(int64(n), 300, 2))
			}
			if _, err := runLake(ctx, o, embedded); err != nil {
				t.Fatalf("ivf %d day %d: %v", n, day, err)
			}
			got[fmt.Sprintf("ivf-%d/day-%d", n, day)] = hashTableRows(t, l, "ns.ivf")
		}
	}

	path := filepath.Join("testdata", "lake.sha256")
	pins.Check(t, path, got, *updateLakePins)
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
	return pins.Sum([]byte(strings.Join(lines, "\n") + "\n")) // each line ends in a newline
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
