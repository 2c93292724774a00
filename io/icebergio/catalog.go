package icebergio

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	// gs:// warehouses: iceberg-go's GCS file IO registers itself here, and
	// only GCS (not the S3 and Azure SDKs) is linked in.
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"
)

// SQLiteScheme is the URI scheme of a local SQL catalog kept in one SQLite
// file: sqlite:///abs/path/catalog.db, or sqlite://rel/path/catalog.db
// relative to the working directory.
const SQLiteScheme = "sqlite"

// CatalogOptions configures OpenCatalog.
type CatalogOptions struct {
	// Warehouse is where tables created through this catalog keep their data
	// and metadata: a local directory, a file:// URI or a gs://bucket/prefix
	// URI. Optional, default the directory "warehouse" beside the SQLite
	// catalog file. Tables that already exist keep their own location.
	Warehouse string
	// Properties are passed to iceberg-go's catalog and file IO, for example
	// "gcs.endpoint" to reach a GCS emulator. Optional.
	Properties map[string]string
}

// Catalog is an open Iceberg catalog. It is safe for concurrent use.
type Catalog struct {
	uri string
	cat catalog.Catalog
	db  *sql.DB
}

// OpenCatalog opens the catalog named by uri, creating a SQLite catalog file
// (and its directory) that does not exist yet, so that the first scheduled run
// in an empty directory needs no setup step. Only sqlite:// URIs are
// supported: a REST, Glue or Hive catalog would be a few lines more through
// catalog.Load, but relabel has no test server for them.
func OpenCatalog(ctx context.Context, uri string, opts CatalogOptions) (*Catalog, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || scheme != SQLiteScheme || rest == "" {
		return nil, fmt.Errorf("icebergio: catalog %q: want sqlite:///path/to/catalog.db", uri)
	}
	path := rest
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: %w", uri, err)
	}
	wh := opts.Warehouse
	if wh == "" {
		wh = filepath.Join(filepath.Dir(path), "warehouse")
	}
	wh, err := warehouseURI(wh)
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: %w", uri, err)
	}

	// WAL and a busy timeout let several relabel processes share one catalog
	// file: a writer waits for another's short catalog transaction instead of
	// failing with "database is locked". They are DSN parameters so that every
	// pooled connection gets them (iceberg-go's NewCatalog leaves the
	// connection settings to the caller). The _pragma form is modernc.org/sqlite's,
	// the driver sqliteshim picks on linux, darwin and windows.
	dsn := "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: %w", uri, err)
	}
	props := iceberg.Properties{}
	maps.Copy(props, opts.Properties)
	props["warehouse"] = wh
	props["init_catalog_tables"] = "true"
	cat, err := sqlcat.NewCatalog("relabel", db, sqlcat.SQLite, props)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("icebergio: catalog %s: %w", uri, err)
	}
	return &Catalog{uri: uri, cat: cat, db: db}, nil
}

// warehouseURI turns a local directory into an absolute file:// URI, which
// iceberg-go needs to pick its local file IO; URIs pass through.
func warehouseURI(wh string) (string, error) {
	if strings.Contains(wh, "://") {
		return strings.TrimSuffix(wh, "/"), nil
	}
	abs, err := filepath.Abs(wh)
	if err != nil {
		return "", fmt.Errorf("warehouse %s: %w", wh, err)
	}
	return "file://" + filepath.ToSlash(abs), nil
}

// URI is the catalog's URI as given to OpenCatalog.
func (c *Catalog) URI() string { return c.uri }

// Close releases the catalog's database connections.
func (c *Catalog) Close() error {
	return c.db.Close() // the SQL catalog holds no resources beyond its *sql.DB
}

// Iceberg returns the underlying iceberg-go catalog, for what this package
// does not wrap (creating input tables, maintenance).
func (c *Catalog) Iceberg() catalog.Catalog { return c.cat }

// ParseIdent parses a dotted table name, "ns.items" or "a.b.items": the last
// part is the table, the others its namespace, which must not be empty.
func ParseIdent(name string) (table.Identifier, error) {
	parts := strings.Split(name, ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("icebergio: table %q: want namespace.table", name)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("icebergio: table %q: empty name part", name)
		}
	}
	return table.Identifier(parts), nil
}

// LoadTable loads a table by its dotted name.
func (c *Catalog) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	ident, err := ParseIdent(name)
	if err != nil {
		return nil, err
	}
	tbl, err := c.cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: table %s: %w", c.uri, name, err)
	}
	return tbl, nil
}
