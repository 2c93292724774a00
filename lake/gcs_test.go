package lake_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/blobio/blobiotest"
)

// TestLakeIncrementalGCS is TestLakeIncrementalDigits with the warehouse on
// gs:// (the emulator): the input table's data files are read, and the
// output table's written and committed, through Cloud Storage.
func TestLakeIncrementalGCS(t *testing.T) {
	e := blobiotest.Start(t, "bucket")
	l := newTestLakeAt(t, "gs://bucket/warehouse")
	lakeIncrementalDigits(t, l)
	objs := e.Objects(t, "warehouse/")
	var data int
	for o := range objs {
		if strings.HasSuffix(o, ".parquet") {
			data++
		}
	}
	if data == 0 {
		t.Errorf("no Parquet data file in gs://bucket/warehouse/ (%d objects)", len(objs))
	}
}

// TestLakeDirIncrementalGCS: a directory lake on gs:// (the emulator): the
// manifest records the objects' generations, the second day is relabelled
// incrementally, a rerun changes nothing, and an object rewritten with the
// same bytes (a new generation) is relabelled as changed.
func TestLakeDirIncrementalGCS(t *testing.T) {
	ctx := ctxT(t)
	e := blobiotest.Start(t, "bucket")
	days := digitsDays(t)
	local := t.TempDir()
	put := func(day int) {
		p := filepath.Join(local, fmt.Sprintf("day-%d.parquet", day))
		writeDay(t, p, days[day])
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		e.Put(fmt.Sprintf("in/day-%d.parquet", day), b)
	}
	cfg := dirConfig("gs://bucket/in", "gs://bucket/out")
	put(0)
	if _, err := runLake(ctx, cfg, embedded); err != nil {
		t.Fatal(err)
	}
	put(1)
	sum, err := runLake(ctx, cfg, embedded)
	if err != nil {
		t.Fatal(err)
	}
	lk := sum.Lake
	if !lk.Incremental || lk.NewFiles != 1 || lk.NewRows != int64(days[1].Len()) || len(lk.Manifest) != 2 || !strings.HasPrefix(lk.Manifest[0].Version, "generation:") {
		t.Fatalf("second day: %+v", lk)
	}
	if sum, err = runLake(ctx, cfg, embedded); err != nil || !sum.Lake.NothingNew {
		t.Fatalf("rerun: %v, %+v; want nothing new", err, sum.Lake)
	}
	put(0) // the same bytes again: a new generation
	if sum, err = runLake(ctx, cfg, embedded); err != nil || sum.Lake.ChangedFiles != 1 || sum.Lake.NewRows != int64(days[0].Len()) {
		t.Fatalf("rewritten object: %v, %+v; want day 0 relabelled as changed", err, sum.Lake)
	}
	objs := e.Objects(t, "out/")
	for name := range objs {
		if strings.Contains(name, ".relabel") {
			t.Errorf("gs://bucket/%s left behind", name)
		}
	}
	if _, ok := objs["out/day-0.arrow"]; !ok {
		t.Errorf("no output shard out/day-0.arrow among %d objects", len(objs))
	}
}
