package icebergio

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/relabel/relabel/io/icebergio/icebergiotest"
)

// ageTree makes every file under dir older than OrphanAge and returns them.
func ageTree(t *testing.T, dir string) []string {
	t.Helper()
	old := time.Now().Add(-OrphanAge - time.Hour)
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, p)
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no files under %s", dir)
	}
	return files
}

// checkExist fails for each of files that is gone.
func checkExist(t *testing.T, what string, files []string) {
	t.Helper()
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %s is gone: %v", what, f, err)
		}
	}
}

// TestOrphansSharedLocation: an output table whose location was set by hand
// to another table's: a commit to it removes none of the other table's
// files (old, and unreferenced by the output table), which stays readable;
// nor, since the catalog holds another table at that location, any file at
// all, its own run directories' orphans included.
func TestOrphansSharedLocation(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	cat, _ := newLake(t)
	other := icebergiotest.Append(t, icebergiotest.CreateTable(t, cat.Iceberg(), "ns.other"), days[0])
	loc := other.Location()
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(outSchema, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Iceberg().CreateTable(ctx, table.Identifier{"ns", "out"}, sc, catalog.WithLocation(loc)); err != nil {
		t.Fatal(err)
	}
	out, err := cat.OpenOutput(ctx, "ns.out", outSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Table().Location(); got != loc {
		t.Fatalf("output table at %s, want the other table's %s", got, loc)
	}
	dir, err := out.RunDir("0000dead")
	if err != nil {
		t.Fatal(err)
	}
	own := writeOutputFile(t, dir, "a.parquet", cleaned(days[1], 0))
	others := ageTree(t, Task{Path: loc}.ReaderPath()+"/data")

	run, err := out.RunDir("00000001")
	if err != nil {
		t.Fatal(err)
	}
	f := writeOutputFile(t, run, "a.parquet", cleaned(days[2], 0))
	if _, err := out.Commit(ctx, Commit{Run: testRun(1, 0), Mode: Replace, Files: []string{f}}); err != nil {
		t.Fatal(err)
	}
	checkExist(t, "the other table's files", others)
	checkExist(t, "an orphan of the output table at a shared location", []string{own})
	tbl, err := cat.LoadTable(ctx, "ns.other")
	if err != nil {
		t.Fatal(err)
	}
	at := icebergiotest.Scan(t, tbl) // iceberg-go's own reader: fails on a missing file
	if at.NumRows() != int64(days[0].Len()) {
		t.Errorf("the other table scans to %d rows, want %d", at.NumRows(), days[0].Len())
	}
	at.Release()
	p, err := cat.PlanInput(ctx, "ns.other")
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "the other table after the commit", readPlanRows(t, p), wantRows(days[0]))
}

// TestOrphansSharedWarehouse: two catalogs sharing one warehouse, each with
// a table ns.out, so at one location. A commit through the second catalog
// removes its own old orphans but none of the first table's files, which
// it does not reference and cannot see in its catalog; the first table
// stays readable.
func TestOrphansSharedWarehouse(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	dir := t.TempDir()
	open := func(db string) *Catalog {
		cat, err := OpenCatalog(ctx, "sqlite://"+filepath.Join(dir, db), CatalogOptions{Warehouse: filepath.Join(dir, "wh")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cat.Close() })
		return cat
	}
	catA, catB := open("a.db"), open("b.db")
	outA, err := catA.OpenOutput(ctx, "ns.out", outSchema)
	if err != nil {
		t.Fatal(err)
	}
	runA, err := outA.RunDir("0000000a")
	if err != nil {
		t.Fatal(err)
	}
	cA := cleaned(days[0], 1)
	fA := writeOutputFile(t, runA, "a.parquet", cA)
	if _, err := outA.Commit(ctx, Commit{Run: testRun(1, 0), Mode: Replace, Files: []string{fA}}); err != nil {
		t.Fatal(err)
	}
	outB, err := catB.OpenOutput(ctx, "ns.out", outSchema)
	if err != nil {
		t.Fatal(err)
	}
	if outA.Table().Location() != outB.Table().Location() {
		t.Fatalf("the two tables are at %s and %s, want one location", outA.Table().Location(), outB.Table().Location())
	}
	deadB, err := outB.RunDir("0000dead")
	if err != nil {
		t.Fatal(err)
	}
	orphanB := writeOutputFile(t, deadB, "a.parquet", cleaned(days[1], 0))
	aged := ageTree(t, outA.DataDir())
	runB, err := outB.RunDir("0000000b")
	if err != nil {
		t.Fatal(err)
	}
	fB := writeOutputFile(t, runB, "a.parquet", cleaned(days[2], 0))
	if _, err := outB.Commit(ctx, Commit{Run: testRun(2, 0), Mode: Replace, Files: []string{fB}}); err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, f := range aged {
		if f != orphanB {
			keep = append(keep, f)
		}
	}
	checkExist(t, "the first catalog's table's files", keep)
	if _, err := os.Stat(orphanB); err == nil {
		t.Errorf("%s, an old orphan in the second table's own run directory, is still there", orphanB)
	}
	tblA, err := catA.LoadTable(ctx, "ns.out")
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "the first catalog's table after the second's commit", scanOutput(t, tblA), rowsOfCleaned(cA))
}

// journalMode is the journal mode of the SQLite file path.
func journalMode(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open(sqliteshim.ShimName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	return mode
}

// TestCatalogJournalMode: a catalog file another writer made keeps its
// journal mode through a run that commits and one that fails; a catalog
// file relabel creates is in WAL mode.
func TestCatalogJournalMode(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.db")
	db, err := sql.Open(sqliteshim.ShimName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := sqlcat.NewCatalog(DefaultCatalogName, db, sqlcat.SQLite, iceberg.Properties{
		"warehouse": "file://" + filepath.ToSlash(filepath.Join(dir, "wh")), "init_catalog_tables": "true"})
	if err != nil {
		t.Fatal(err)
	}
	icebergiotest.Append(t, icebergiotest.CreateTable(t, theirs, "ns.items"), days[0])
	db.Close()
	before := journalMode(t, path)
	if before == "wal" {
		t.Fatalf("the other writer's catalog is in %s mode already", before)
	}

	cat, err := OpenCatalog(ctx, "sqlite://"+path, CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cat.OpenOutput(ctx, "ns.out", outSchema)
	if err != nil {
		t.Fatal(err)
	}
	run, err := out.RunDir("00000001")
	if err != nil {
		t.Fatal(err)
	}
	f := writeOutputFile(t, run, "a.parquet", cleaned(days[0], 0))
	if _, err := out.Commit(ctx, Commit{Run: testRun(1, 0), Mode: Replace, Files: []string{f}}); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Commit(ctx, Commit{Run: testRun(1, 0), Files: []string{filepath.Join(dir, "missing.parquet")}}); err == nil {
		t.Error("a commit of a missing file succeeded")
	}
	cat.Close()
	if got := journalMode(t, path); got != before {
		t.Errorf("after relabel's runs the catalog is in journal mode %s, want %s as its writer left it", got, before)
	}

	mine := filepath.Join(dir, "new", "catalog.db")
	cat, err = OpenCatalog(ctx, "sqlite://"+mine, CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.OpenOutput(ctx, "ns.out", outSchema); err != nil {
		t.Fatal(err)
	}
	cat.Close()
	if got := journalMode(t, mine); got != "wal" {
		t.Errorf("a catalog relabel created is in journal mode %s, want wal", got)
	}
}
