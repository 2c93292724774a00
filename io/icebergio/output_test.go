package icebergio

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/relabel/relabel/schemas"
)

func testRun(snap, from int64) Run {
	return Run{
		InputTable: "ns.items", InputSnapshotID: snap, Incremental: from != 0, FromSnapshotID: from,
		Version: "test", Seed: 7, Options: map[string]string{"k": "10", "rounds": "3"},
	}
}

// snapshotCount is the number of snapshots of the output table as the
// catalog has it now (not as an Output last saw it).
func snapshotCount(t *testing.T, cat *Catalog, name string) int {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.Metadata().Snapshots())
}

// TestOutputRoundTrip: a full run's rows committed from Arrow records (one
// snapshot, replace), then an incremental run's rows from Parquet files that
// relabel's writer wrote (one snapshot, append), then a second full run that
// replaces everything; after each, iceberg-go's own scan returns exactly the
// rows committed, and LastRun the recorded run.
func TestOutputRoundTrip(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	cat, _ := newLake(t)
	out, err := cat.OpenOutput(ctx, "ns.items_relabelled", outSchema)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := out.LastRun(); ok || err != nil {
		t.Fatalf("LastRun of a new table: ok %t, err %v", ok, err)
	}

	// Full run over days 0..2, from records.
	var first []*schemas.Cleaned
	var recs []arrow.RecordBatch
	for _, d := range days[:3] {
		c := cleaned(d, 1)
		first = append(first, c)
		rec := outputRecord(c)
		defer rec.Release()
		recs = append(recs, rec)
	}
	run1 := testRun(101, 0)
	s1, err := out.Commit(ctx, Commit{Run: run1, Mode: Replace, Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if n := snapshotCount(t, cat, out.Name()); n != 1 {
		t.Errorf("after the first commit: %d snapshots, want 1", n)
	}
	checkRows(t, "full run", scanOutput(t, out.Table()), rowsOfCleaned(first...))
	checkLastRun(t, cat, out.Name(), run1)
	tbl, _ := cat.LoadTable(ctx, out.Name())
	if got := tbl.CurrentSnapshot().Summary.Properties; got["relabel.option.k"] != "10" || got[SummaryInputTable] != "ns.items" || got[SummaryInputSnapshot] != "101" || got[SummarySeed] != "7" || got[SummaryVersion] != "test" {
		t.Errorf("snapshot summary %v does not record the run", got)
	}

	// Incremental run: day 3 from a Parquet file written by relabel's own
	// writer under DataDir.
	c3 := cleaned(days[3], 1)
	path := writeOutputFile(t, out.DataDir(), "run2-00000.parquet", c3)
	run2 := testRun(102, 101)
	s2, err := out.Commit(ctx, Commit{Run: run2, Files: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	if s2 == s1 || snapshotCount(t, cat, out.Name()) != 2 {
		t.Errorf("after the incremental commit: snapshot %d (was %d), %d snapshots; want a second one", s2, s1, snapshotCount(t, cat, out.Name()))
	}
	checkRows(t, "incremental run", scanOutput(t, out.Table()), rowsOfCleaned(append(first, c3)...))
	checkLastRun(t, cat, out.Name(), run2)

	// A second full run with other values replaces every row, from files.
	var again []*schemas.Cleaned
	var files []string
	for i, d := range days {
		c := cleaned(d, 3)
		again = append(again, c)
		files = append(files, writeOutputFile(t, out.DataDir(), "run3-"+string(rune('a'+i))+".parquet", c))
	}
	run3 := testRun(103, 0)
	if _, err := out.Commit(ctx, Commit{Run: run3, Mode: Replace, Files: files}); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "second full run", scanOutput(t, out.Table()), rowsOfCleaned(again...))
	checkLastRun(t, cat, out.Name(), run3)

	// Reopening with other columns is refused.
	other := schemas.OutputSchema(schemas.IDString, schemas.LabelInt32, false, nil)
	if _, err := cat.OpenOutput(ctx, out.Name(), other); err == nil || !strings.Contains(err.Error(), "column 0") {
		t.Errorf("reopening with string ids: %v, want an error naming column 0", err)
	}
}

// checkRows compares rows by id: output rows (outRow) or input rows as
// relabel's readers see them (inRow).
func checkRows[R comparable](t *testing.T, what string, got, want map[int64]R) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
	}
	bad := 0
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			if bad++; bad <= 3 {
				t.Errorf("%s: id %d: got %+v (present %t), want %+v", what, id, g, ok, w)
			}
		}
	}
}

// checkLastRun reopens the output table, as the next run would, and checks
// the run it records.
func checkLastRun(t *testing.T, cat *Catalog, name string, want Run) {
	t.Helper()
	o, err := cat.OpenOutput(context.Background(), name, outSchema)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := o.LastRun()
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("LastRun = %+v, %t, %v; want %+v", got, ok, err, want)
	}
}

// TestConcurrentCommits: two runs open the output table at the same snapshot
// through separate catalog handles (as two processes would) and commit at
// once. Exactly one wins; the other fails with ErrConcurrentRun and commits
// nothing; no row is lost or duplicated; rerun, the loser commits a separate
// snapshot.
func TestConcurrentCommits(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	cat, dir := newLake(t)
	if _, err := cat.OpenOutput(ctx, "ns.out", outSchema); err != nil {
		t.Fatal(err)
	}
	uri := "sqlite://" + filepath.Join(dir, "lake", "catalog.db")
	var outs [2]*Output
	var runs [2]*schemas.Cleaned
	for i := range outs {
		c, err := OpenCatalog(ctx, uri, CatalogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if outs[i], err = c.OpenOutput(ctx, "ns.out", outSchema); err != nil {
			t.Fatal(err)
		}
		runs[i] = cleaned(days[i], 0)
	}
	var wg sync.WaitGroup
	var errs [2]error
	for i := range outs {
		wg.Go(func() {
			rec := outputRecord(runs[i])
			defer rec.Release()
			_, errs[i] = outs[i].Commit(ctx, Commit{Run: testRun(int64(200+i), 0), Records: []arrow.RecordBatch{rec}})
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if won >= 0 {
				t.Fatalf("both fenced commits succeeded: one of them did not see the other")
			}
			won = i
		case !errors.Is(err, ErrConcurrentRun) || !strings.Contains(err.Error(), "rerun"):
			t.Errorf("run %d: %v, want ErrConcurrentRun telling to rerun", i, err)
		}
	}
	if won < 0 {
		t.Fatalf("no run committed: %v", errs)
	}
	lost := 1 - won
	if n := snapshotCount(t, cat, "ns.out"); n != 1 {
		t.Errorf("after the race: %d snapshots, want 1", n)
	}
	tbl, _ := cat.LoadTable(ctx, "ns.out")
	checkRows(t, "after the race", scanOutput(t, tbl), rowsOfCleaned(runs[won]))

	// The loser reruns: opened afresh, it commits a separate snapshot.
	o, err := cat.OpenOutput(ctx, "ns.out", outSchema)
	if err != nil {
		t.Fatal(err)
	}
	rec := outputRecord(runs[lost])
	defer rec.Release()
	if _, err := o.Commit(ctx, Commit{Run: testRun(int64(200+lost), 0), Records: []arrow.RecordBatch{rec}}); err != nil {
		t.Fatal(err)
	}
	if n := snapshotCount(t, cat, "ns.out"); n != 2 {
		t.Errorf("after the rerun: %d snapshots, want 2", n)
	}
	want := rowsOfCleaned(runs[0])
	maps.Copy(want, rowsOfCleaned(runs[1]))
	checkRows(t, "after the rerun", scanOutput(t, o.Table()), want)
}

// TestFailedCommitCommitsNothing: commits that fail while adding or writing
// data leave the output table at its snapshot with its rows.
func TestFailedCommitCommitsNothing(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	cat, dir := newLake(t)
	out, err := cat.OpenOutput(ctx, "ns.out", outSchema)
	if err != nil {
		t.Fatal(err)
	}
	c0 := cleaned(days[0], 0)
	rec := outputRecord(c0)
	defer rec.Release()
	s0, err := out.Commit(ctx, Commit{Run: testRun(1, 0), Records: []arrow.RecordBatch{rec}})
	if err != nil {
		t.Fatal(err)
	}
	good := writeOutputFile(t, out.DataDir(), "good.parquet", cleaned(days[1], 0))

	// A batch whose columns are not the table's.
	wrongSc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "other", Type: arrow.PrimitiveTypes.Float64}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, wrongSc)
	bld.Field(0).(*array.Int64Builder).Append(1)
	bld.Field(1).(*array.Float64Builder).Append(2)
	wrong := bld.NewRecordBatch()
	bld.Release()
	defer wrong.Release()

	for _, tc := range []struct {
		name string
		c    Commit
		msg  string
	}{
		{"missing file", Commit{Run: testRun(2, 1), Files: []string{good, filepath.Join(dir, "nope.parquet")}}, "nope.parquet"},
		{"missing file, replace", Commit{Run: testRun(2, 0), Mode: Replace, Files: []string{filepath.Join(dir, "nope.parquet")}}, "nope.parquet"},
		{"wrong columns", Commit{Run: testRun(2, 1), Records: []arrow.RecordBatch{wrong}}, "nothing committed"},
		{"no rows", Commit{Run: testRun(2, 1)}, "Files or Records"},
		{"no run", Commit{Files: []string{good}}, "InputTable"},
		{"incremental without from", Commit{Run: Run{InputTable: "ns.items", InputSnapshotID: 2, Incremental: true, Version: "v"}, Files: []string{good}}, "FromSnapshotID"},
	} {
		_, err := out.Commit(ctx, tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.msg)
		}
		if out.SnapshotID() != s0 || snapshotCount(t, cat, "ns.out") != 1 {
			t.Errorf("%s: the table moved to snapshot %d (%d snapshots), want it at %d", tc.name, out.SnapshotID(), snapshotCount(t, cat, "ns.out"), s0)
		}
		tbl, _ := cat.LoadTable(ctx, "ns.out")
		checkRows(t, tc.name, scanOutput(t, tbl), rowsOfCleaned(c0))
	}
	// The Output is still usable after the failures.
	if _, err := out.Commit(ctx, Commit{Run: testRun(2, 1), Files: []string{good}}); err != nil {
		t.Errorf("a good commit after failed ones: %v", err)
	}
}

// TestCommitRemovesOrphans: what a killed run left in its run directory
// (files no snapshot references) is removed by the next commit once older
// than OrphanAge; younger ones (a concurrent run's), committed files, old
// snapshots' files (time travel), the kept ivf state and fit, and old unreferenced
// files outside the table's run directories (another writer's, a run
// directory of another table) stay.
func TestCommitRemovesOrphans(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	cat, _ := newLake(t)
	out, err := cat.OpenOutput(ctx, "ns.out", outSchema)
	if err != nil {
		t.Fatal(err)
	}
	runDir := func(tok string) string {
		d, err := out.RunDir(tok)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	data := out.DataDir()
	first := writeOutputFile(t, runDir("00000001"), "a.parquet", cleaned(days[0], 0))
	state := filepath.Join(runDir("00000001"), "ivf.state")
	if err := os.WriteFile(state, []byte("state"), 0o644); err != nil {
		t.Fatal(err)
	}
	fit := filepath.Join(runDir("00000001"), "relabel-fit.state")
	if err := os.WriteFile(fit, []byte("fit"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := testRun(1, 0)
	r.State, r.Fit = state, fit
	if _, err := out.Commit(ctx, Commit{Run: r, Mode: Replace, Files: []string{first}}); err != nil {
		t.Fatal(err)
	}
	dead := writeOutputFile(t, runDir("0000dead"), "a.parquet", cleaned(days[1], 0))
	young := writeOutputFile(t, runDir("0000001e"), "a.parquet", cleaned(days[1], 0))
	foreign := writeOutputFile(t, data, "00000-0-foreign.parquet", cleaned(days[1], 0))
	otherTable := writeOutputFile(t, filepath.Join(data, "relabel-00000000-0000-0000-0000-000000000000-0000dead"), "a.parquet", cleaned(days[1], 0))
	oldStyle := writeOutputFile(t, filepath.Join(data, "relabel-0000dead"), "a.parquet", cleaned(days[1], 0))
	old := time.Now().Add(-OrphanAge - time.Hour)
	for _, f := range []string{first, state, fit, dead, foreign, otherTable, oldStyle} {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	second := writeOutputFile(t, runDir("00000002"), "a.parquet", cleaned(days[2], 0))
	if _, err := out.Commit(ctx, Commit{Run: testRun(2, 0), Mode: Replace, Files: []string{second}}); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{first: true, state: true, fit: true, dead: false, young: true, second: true,
		foreign: true, otherTable: true, oldStyle: true} {
		_, err := os.Stat(f)
		if got := err == nil; got != want {
			t.Errorf("%s: exists %t, want %t", f, got, want)
		}
	}
	for _, tok := range []string{"", "x", "../../etc", "ABCDEF12", strings.Repeat("a", 65)} {
		if d, err := out.RunDir(tok); err == nil {
			t.Errorf("RunDir(%q) = %s, want an error", tok, d)
		}
	}
}
