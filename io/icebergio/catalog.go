package icebergio

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/relabel/relabel/io/icebergio/catalogname"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	// gs:// warehouses: iceberg-go's GCS file IO registers itself here, and
	// only GCS (not the S3 and Azure SDKs) is linked in.
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"
)

// SQLiteScheme, DefaultCatalogName: see package catalogname, which holds
// the name rules without iceberg-go (the Beam-free options package checks
// flags with them).
const (
	SQLiteScheme       = catalogname.SQLiteScheme
	DefaultCatalogName = catalogname.DefaultCatalogName
)

// CatalogOptions configures OpenCatalog.
type CatalogOptions struct {
	// Name is the catalog's name. Optional, default DefaultCatalogName, or
	// the URI's ?name= parameter; given both, they must agree. relabel
	// before this option filed its output tables under "relabel".
	Name string
	// Warehouse is where tables created through this catalog keep their data
	// and metadata: a local directory, a file:// URI or a gs://bucket/prefix
	// URI. Optional, default the directory "warehouse" beside the SQLite
	// catalog file. Tables that already exist keep their own location.
	Warehouse string
	// Scratch is the local directory where data files that must be read
	// through iceberg-go's scanner (Task.Scanned: row-level deletes, renamed
	// columns) are written; the caller removes it. Optional, default a new
	// temporary directory that Close removes.
	Scratch string
	// Properties are passed to iceberg-go's catalog and file IO, for example
	// "gcs.endpoint" to reach a GCS emulator. Optional.
	Properties map[string]string
}

// Catalog is an open Iceberg catalog. It is safe for concurrent use.
type Catalog struct {
	uri  string
	name string
	cat  catalog.Catalog
	db   *sql.DB
	// props are a SQL catalog's file IO properties, for reading the
	// metadata of tables filed under other catalog names.
	props iceberg.Properties

	mu           sync.Mutex
	scratch      string // CatalogOptions.Scratch, or a temporary directory once needed
	ownScratch   bool   // scratch is a temporary directory Close removes
	scannedFiles map[string]scannedFile
	scannedNames map[string]bool
}

// OpenCatalog opens the catalog named by uri: a local SQL catalog in one
// SQLite file, sqlite:///path/catalog.db (created with its directory if it
// does not exist yet, so that the first scheduled run in an empty directory
// needs no setup step), or a REST catalog, rest://HOST[:PORT]/PATH (HTTPS)
// or an http:// or https:// URL, authenticated from the environment
// (RESTAuthEnv). Glue and Hive catalogs, which iceberg-go also has, are not
// offered: relabel has nothing to test them against.
func OpenCatalog(ctx context.Context, uri string, opts CatalogOptions) (*Catalog, error) {
	path, name, err := catalogname.ParseCatalogURI(uri, opts.Name)
	if err != nil {
		return nil, err
	}
	if catalogname.IsREST(uri) {
		return openREST(ctx, uri, path, name, opts)
	}
	// Messages name the catalog by its URI, never with a credential in it.
	uri = catalogname.Redact(uri)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: %w", uri, err)
	}
	wh := opts.Warehouse
	if wh == "" {
		wh = filepath.Join(filepath.Dir(path), "warehouse")
	}
	wh, err = warehouseURI(wh)
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: %w", uri, err)
	}

	// A busy timeout lets several relabel processes share one catalog file:
	// a writer waits for another's short catalog transaction instead of
	// failing with "database is locked". A catalog file relabel creates is
	// put in WAL mode as well (readers then never wait on a writer); one
	// that exists keeps the journal mode its owner chose, since WAL mode
	// persists in the file and changes what its other writers (and
	// their backups, which must then copy the -wal file too) see. They are
	// DSN parameters so that every pooled connection gets them (iceberg-go's
	// NewCatalog leaves the connection settings to the caller). The _pragma
	// form is modernc.org/sqlite's, the driver sqliteshim picks on linux,
	// darwin and windows.
	dsn := "file:" + path + "?_pragma=busy_timeout(30000)"
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		dsn += "&_pragma=journal_mode(WAL)"
	}
	db, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: %w", uri, err)
	}
	props := iceberg.Properties{}
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" && strings.HasPrefix(wh, "gs://") {
		// The Cloud Storage client (and so blobio, which reads the data
		// files) talks to an emulator named by STORAGE_EMULATOR_HOST;
		// iceberg-go's GCS file IO takes the endpoint as a property
		// instead, so one variable points both at the same server.
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		props[iceio.GCSEndpoint] = strings.TrimSuffix(host, "/") + "/storage/v1/"
		props[iceio.GCSNoAuth] = "true"
	}
	maps.Copy(props, opts.Properties)
	props["warehouse"] = wh
	props["init_catalog_tables"] = "true"
	cat, err := sqlcat.NewCatalog(name, db, sqlcat.SQLite, props)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("icebergio: catalog %s: %w", uri, err)
	}
	removeDeadScratch()
	return &Catalog{uri: uri, name: name, cat: cat, db: db, props: props, scratch: opts.Scratch,
		scannedFiles: map[string]scannedFile{}, scannedNames: map[string]bool{}}, nil
}

// Name is the catalog name the catalog was opened under.
func (c *Catalog) Name() string { return c.name }

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

// URI is the catalog's URI as given to OpenCatalog, with any userinfo or
// credential-like query value redacted (catalogname.Redact): the form
// messages name it by.
func (c *Catalog) URI() string { return c.uri }

// Close releases the catalog's connections and removes its
// temporary scratch directory (the files planned tasks were Scanned into: a
// caller closes the catalog after the run that read them).
func (c *Catalog) Close() error {
	c.mu.Lock()
	if c.ownScratch {
		os.RemoveAll(c.scratch)
		c.scratch, c.ownScratch = "", false
	}
	c.mu.Unlock()
	if c.db == nil {
		return nil // a REST catalog holds only an HTTP client
	}
	return c.db.Close() // the SQL catalog holds no resources beyond its *sql.DB
}

// Iceberg returns the underlying iceberg-go catalog, for what this package
// does not wrap (creating input tables, maintenance).
func (c *Catalog) Iceberg() catalog.Catalog { return c.cat }

// ParseIdent parses a dotted table name, "ns.items" or "a.b.items": the last
// part is the table, the others its namespace, which must not be empty.
func ParseIdent(name string) (table.Identifier, error) {
	parts, err := catalogname.SplitIdent(name)
	if err != nil {
		return nil, err
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
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("icebergio: catalog %s (catalog name %q): table %s: %w; %s", c.uri, c.name, name, err, c.holds(ctx))
	}
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: table %s: %w", c.uri, name, err)
	}
	return tbl, nil
}

// holds says which tables the catalog file holds under which catalog names,
// for the error of a table not found: the usual cause is a table another
// writer filed under another catalog name.
func (c *Catalog) holds(ctx context.Context) string {
	byName, err := c.tablesByCatalogName(ctx)
	if err != nil {
		return fmt.Sprintf("(listing the catalog file's tables: %v)", err)
	}
	if len(byName) == 0 {
		return "the catalog file holds no tables"
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		tables := byName[n]
		const most = 10
		more := ""
		if len(tables) > most {
			more = fmt.Sprintf(" and %d more", len(tables)-most)
			tables = tables[:most]
		}
		parts = append(parts, fmt.Sprintf("catalog name %q: %s%s", n, strings.Join(tables, ", "), more))
	}
	if c.db == nil {
		return "the catalog holds " + strings.TrimPrefix(strings.Join(parts, "; "), fmt.Sprintf("catalog name %q: ", c.name))
	}
	return "the catalog file holds " + strings.Join(parts, "; ") + " (choose the catalog name with --catalog-name or ?name= in the catalog URI)"
}

// tablesByCatalogName lists the catalog file's tables (namespace.table) by
// the catalog name they are filed under. It reads iceberg-go's SQL catalog
// table directly: the catalog API lists one catalog name's tables only.
func (c *Catalog) tablesByCatalogName(ctx context.Context) (map[string][]string, error) {
	if c.db == nil {
		return c.listTables(ctx)
	}
	rows, err := c.db.QueryContext(ctx, "SELECT catalog_name, table_namespace, table_name FROM iceberg_tables ORDER BY catalog_name, table_namespace, table_name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var cn, ns, tn string
		if err := rows.Scan(&cn, &ns, &tn); err != nil {
			return nil, err
		}
		out[cn] = append(out[cn], ns+"."+tn)
	}
	return out, rows.Err()
}

// filedElsewhere returns the other catalog names the catalog file holds
// table name under: an output table that relabel would otherwise create a
// second time, under this catalog's name, beside the one earlier runs wrote.
func (c *Catalog) filedElsewhere(ctx context.Context, name string) ([]string, error) {
	byName, err := c.tablesByCatalogName(ctx)
	if err != nil {
		return nil, err
	}
	var other []string
	for n, tables := range byName {
		if n != c.name && slices.Contains(tables, name) {
			other = append(other, n)
		}
	}
	slices.Sort(other)
	return other, nil
}

// tablesAt lists the tables of the catalog, other than self, whose location
// is loc or lies under it: tables whose files share a directory tree with
// self's, which orphan clean-up must then leave alone. For a SQL catalog
// every catalog name in the file counts (two catalog names may share one
// warehouse); a table whose location cannot be read counts as shared.
func (c *Catalog) tablesAt(ctx context.Context, self table.Identifier, loc string) ([]string, error) {
	loc = strings.TrimSuffix(loc, "/")
	under := func(l string) bool {
		l = strings.TrimSuffix(l, "/")
		return l == loc || strings.HasPrefix(l, loc+"/")
	}
	var out []string
	if c.db == nil {
		byName, err := c.listTables(ctx)
		if err != nil {
			return nil, err
		}
		for _, name := range byName[c.name] {
			ident, err := ParseIdent(name)
			if err != nil || slices.Equal(ident, self) {
				continue
			}
			tbl, err := c.cat.LoadTable(ctx, ident)
			if err != nil {
				return nil, fmt.Errorf("table %s: %w", name, err)
			}
			if under(tbl.Location()) {
				out = append(out, name)
			}
		}
		return out, nil
	}
	rows, err := c.db.QueryContext(ctx, "SELECT catalog_name, table_namespace, table_name, metadata_location FROM iceberg_tables")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type entry struct{ cat, name, meta string }
	var entries []entry
	selfNS, selfName := strings.Join(self[:len(self)-1], "."), self[len(self)-1]
	for rows.Next() {
		var cn, ns, tn string
		var meta sql.NullString
		if err := rows.Scan(&cn, &ns, &tn, &meta); err != nil {
			return nil, err
		}
		if cn == c.name && ns == selfNS && tn == selfName {
			continue
		}
		entries = append(entries, entry{cn, ns + "." + tn, meta.String})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, e := range entries {
		shown := e.name
		if e.cat != c.name {
			shown = fmt.Sprintf("%s (catalog name %q)", e.name, e.cat)
		}
		if e.meta == "" {
			continue // created, never committed: no files
		}
		tbl, err := table.NewFromLocation(ctx, nil, e.meta, iceio.LoadFSFunc(c.props, e.meta), nil)
		if err != nil {
			return nil, fmt.Errorf("table %s: metadata %s: %w", shown, e.meta, err)
		}
		if under(tbl.Location()) {
			out = append(out, shown)
		}
	}
	return out, nil
}
