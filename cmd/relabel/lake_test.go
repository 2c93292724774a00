package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/icebergio/icebergiotest"
	"github.com/relabel/relabel/schemas"
)

// appendTableRows appends r to the table ns.items of the SQLite catalog at
// uri (creating both), as one snapshot.
func appendTableRows(t *testing.T, uri string, r *schemas.Rows) {
	t.Helper()
	ctx := context.Background()
	cat, err := icebergio.OpenCatalog(ctx, uri, icebergio.CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, "ns.items")
	if err != nil {
		tbl = icebergiotest.CreateTable(t, cat.Iceberg(), "ns.items")
	}
	icebergiotest.Append(t, tbl, r)
}

// TestLakeTableCLI: relabel run from an input table to an output table with
// --incremental, the commands README's "Relabel a data lake on a schedule"
// shows: the first run is a full one, the second after an append is
// incremental, the third finds nothing new and commits nothing.
func TestLakeTableCLI(t *testing.T) {
	dir := t.TempDir()
	uri := "sqlite://" + filepath.Join(dir, "lake", "catalog.db")
	args := []string{"run", "--catalog", uri, "--input-table", "ns.items", "--output-table", "ns.relabelled", "--incremental", "--rounds", "2", "--head", "off"} // few rounds: the head, still on, would make the next run a full one (lake TestLakeHeadFull)
	appendTableRows(t, uri, synthRows(0, 200))
	r := relabel(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "full run; 200 rows relabelled") {
		t.Fatalf("first run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, tail(r.stderr, 800))
	}
	appendTableRows(t, uri, synthRows(200, 50))
	r = relabel(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "incremental run") || !strings.Contains(r.stdout, "50 new rows in 1 new files") {
		t.Fatalf("second run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, tail(r.stderr, 800))
	}
	r = relabel(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing committed") {
		t.Fatalf("third run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, tail(r.stderr, 800))
	}
}

// TestLakeBadFlags: table flags in impossible combinations exit 2 naming the
// flag, before anything is opened.
func TestLakeBadFlags(t *testing.T) {
	dir := t.TempDir()
	cat := "sqlite://" + filepath.Join(dir, "c.db")
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--input-table", "ns.a", "--output-table", "ns.b"}, "--catalog"},
		{[]string{"--catalog", "ftp://x", "--input-table", "ns.a", "--output-table", "ns.b"}, "--catalog"},
		{[]string{"--catalog", cat, "--input-table", "ns.a", "--output-table", "ns.items "}, "--output-table"},
		{[]string{"--catalog", cat, "--input", "x/*.parquet", "--input-table", "ns.a", "--output-table", "ns.b"}, "--input-table"},
		{[]string{"--catalog", cat, "--input-table", "a", "--output-table", "ns.b"}, "--input-table"},
		{[]string{"--catalog", cat, "--input-table", "ns.a", "--output-table", "ns.a"}, "--output-table"},
		{[]string{"--catalog", cat, "--input-table", "ns.a", "--output", "o", "--output-table", "ns.b"}, "--output-table"},
		{[]string{"--annotations", "a.parquet", "--output", "o", "--incremental"}, "--incremental"},
		{[]string{"--input", "x/*.parquet", "--output", "o", "--warehouse", "w"}, "--warehouse"},
	} {
		r := relabel(t, append([]string{"run"}, tc.args...)...)
		lines := errorLines(r.stderr)
		if r.code != 2 || len(lines) == 0 || !strings.Contains(lines[0], tc.flag) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a first line naming %s", tc.args, r.code, tail(r.stderr, 400), tc.flag)
		}
	}
}
