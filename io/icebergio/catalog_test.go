package icebergio

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/relabel/relabel/io/icebergio/icebergiotest"
)

// foreignLake creates ns.items the way iceberg-go's own getting-started
// example does, with no relabel code: a SQL catalog named catalogName in
// DIR/catalog.db, one append of the first digits day. It returns the
// catalog URI.
func foreignLake(t *testing.T, catalogName string) string {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open(sqliteshim.ShimName, "file:"+filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog(catalogName, db, sqlcat.SQLite, iceberg.Properties{
		"warehouse": "file://" + filepath.ToSlash(filepath.Join(dir, "wh")), "init_catalog_tables": "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	icebergiotest.Append(t, icebergiotest.CreateTable(t, cat, "ns.items"), digitsDays(t)[0])
	return "sqlite://" + filepath.Join(dir, "catalog.db")
}

// TestCatalogName: a table iceberg-go filed under its default catalog name
// is found by default; under another name, the error lists what the file
// holds; the name is settable as an option or in the URI, and an output
// table filed under another name is not created a second time.
func TestCatalogName(t *testing.T) {
	ctx := context.Background()
	uri := foreignLake(t, "default")
	cat, err := OpenCatalog(ctx, uri, CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cat.Name() != DefaultCatalogName {
		t.Errorf("catalog name %q, want %q", cat.Name(), DefaultCatalogName)
	}
	p, err := cat.PlanInput(ctx, "ns.items")
	if err != nil {
		t.Fatalf("a table iceberg-go made with its defaults: %v", err)
	}
	if p.Rows != 512 {
		t.Errorf("%d rows planned, want 512", p.Rows)
	}
	cat.Close()

	// Another writer's name: given as an option or in the URI it is found.
	uri2 := foreignLake(t, "lakehouse")
	for _, tc := range []struct {
		uri, name string
	}{{uri2, "lakehouse"}, {uri2 + "?name=lakehouse", ""}, {uri2 + "?name=lakehouse", "lakehouse"}} {
		c, err := OpenCatalog(ctx, tc.uri, CatalogOptions{Name: tc.name})
		if err != nil {
			t.Fatalf("%s name %q: %v", tc.uri, tc.name, err)
		}
		if _, err := c.LoadTable(ctx, "ns.items"); err != nil {
			t.Errorf("%s name %q: %v", tc.uri, tc.name, err)
		}
		c.Close()
	}
	// Not given: the error names the table and the names the file holds.
	c, err := OpenCatalog(ctx, uri2, CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.LoadTable(ctx, "ns.items")
	if err == nil || !strings.Contains(err.Error(), `catalog name "lakehouse": ns.items`) || !strings.Contains(err.Error(), `"default"`) {
		t.Errorf("table under another catalog name: %v, want an error listing lakehouse's ns.items", err)
	}
	// An output table filed under another name is refused, not made again.
	if _, err := c.OpenOutput(ctx, "ns.items", outSchema); err == nil || !strings.Contains(err.Error(), `"lakehouse"`) {
		t.Errorf("output table under another catalog name: %v, want a refusal naming lakehouse", err)
	}
	if byName, err := c.tablesByCatalogName(ctx); err != nil || len(byName["default"]) != 0 {
		t.Errorf("after the refusal the file holds %v (%v); want nothing under default", byName, err)
	}

	// Bad names and URIs.
	for _, tc := range []struct{ uri, name, want string }{
		{uri2 + "?name=a", "b", "give one"},
		{uri2 + "?catalog=a", "", "unknown parameter"},
		{uri2 + "?name=", "", "empty"},
		{uri2, " default", "white space"},
		{"sqlite://?name=a", "", "no catalog file"},
	} {
		if c, err := OpenCatalog(ctx, tc.uri, CatalogOptions{Name: tc.name}); err == nil {
			c.Close()
			t.Errorf("OpenCatalog(%q, name %q): no error", tc.uri, tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenCatalog(%q, name %q): %v, want %q", tc.uri, tc.name, err, tc.want)
		}
	}
}
