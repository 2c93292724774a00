package icebergio

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
)

// ErrConcurrentRun is wrapped by Commit's error when another writer committed
// to the output table after this Output was opened. Nothing was committed:
// the run's rows were computed from a state of the output table that is gone
// (an incremental run's old posteriors, or the rows a full run replaces), so
// retrying the same commit could lose or duplicate rows. Rerun instead.
var ErrConcurrentRun = errors.New("another run committed to the output table first")

// Mode says how a commit's rows combine with the output table's rows.
type Mode uint8

const (
	// Append adds the commit's rows to the table: the new rows of an
	// incremental run.
	Append Mode = iota
	// Replace makes the commit's rows the whole table: a full run.
	Replace
	// Rewrite removes the data files Commit.Remove and adds Commit.Files in
	// one snapshot: an incremental run's new rows, and the output files
	// holding old rows it re-scored, rewritten.
	Rewrite
)

func (m Mode) String() string {
	switch m {
	case Append:
		return "append"
	case Replace:
		return "replace"
	case Rewrite:
		return "rewrite"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Commit is one run's output, committed as one snapshot.
type Commit struct {
	// Run is recorded in the snapshot summary. Required.
	Run Run
	// Mode is how the rows combine with the table's. Optional, default Append.
	Mode Mode
	// Files are Parquet data files with the table's columns that the caller
	// wrote (for example with shardio.WriteShard in a RunDir), as local
	// paths or file:// / gs:// URIs. They are added as they are; their column
	// statistics are read from their footers. Exactly one of Files and
	// Records is required.
	Files []string
	// Records are rows that iceberg-go writes as Parquet data files under the
	// table's location. Exactly one of Files and Records is required.
	Records []arrow.RecordBatch
	// Remove are data files of the table that a Rewrite commit removes, as
	// the table records them (OutputFile.Path). Only with Rewrite and Files.
	Remove []string
}

// Output is a relabel output table, opened at the snapshot a run starts from.
// Commit is fenced on that snapshot. An Output is for one goroutine.
type Output struct {
	cat   *Catalog
	name  string
	ident table.Identifier
	tbl   *table.Table
	// created: this Output made the table (OpenOutput found none);
	// committing: a Commit has started. Both for DropCreated.
	created    bool
	committing atomic.Bool
}

// OpenOutput loads the output table name, or creates it (and its namespace)
// with the given schema, the Arrow schema of relabel's output shards
// (schemas.OutputSchema). An existing table must have the same columns, in
// order, with the same types: a run must not append rows another run's
// readers cannot read. Two runs creating the table at once both end with the
// one that won.
func (c *Catalog) OpenOutput(ctx context.Context, name string, schema *arrow.Schema) (*Output, error) {
	ident, err := ParseIdent(name)
	if err != nil {
		return nil, err
	}
	want, err := table.ArrowSchemaToIcebergWithFreshIDs(schema, false)
	if err != nil {
		return nil, fmt.Errorf("icebergio: output table %s: schema: %w", name, err)
	}
	tbl, err := c.cat.LoadTable(ctx, ident)
	created := false
	if errors.Is(err, catalog.ErrNoSuchTable) {
		other, lerr := c.filedElsewhere(ctx, name)
		if lerr != nil {
			return nil, fmt.Errorf("icebergio: catalog %s: output table %s: %w", c.uri, name, lerr)
		}
		if len(other) > 0 {
			return nil, fmt.Errorf("icebergio: catalog %s: output table %s is not filed under catalog name %q but under %q: run with that catalog name (--catalog-name or ?name= in the URI; relabel filed its tables under \"relabel\" before the catalog name could be chosen), so that a second table of that name is not created", c.uri, name, c.name, strings.Join(other, `", "`))
		}
		tbl, created, err = c.create(ctx, ident, want)
	}
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: output table %s: %w", c.uri, name, err)
	}
	if err := sameColumns(tbl.Schema(), want); err != nil {
		return nil, fmt.Errorf("icebergio: output table %s has other columns than this run writes: %w", name, err)
	}
	return &Output{cat: c, name: name, ident: ident, tbl: tbl, created: created}, nil
}

// create creates the table (and its namespace); created is false when
// another run created it first.
func (c *Catalog) create(ctx context.Context, ident table.Identifier, sc *iceberg.Schema) (tbl *table.Table, created bool, err error) {
	ns := catalog.NamespaceFromIdent(ident)
	if err := c.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, false, err
	}
	tbl, err = c.cat.CreateTable(ctx, ident, sc, catalog.WithProperties(iceberg.Properties{
		"format-version": "2",
	}))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		tbl, err = c.cat.LoadTable(ctx, ident)
		return tbl, false, err
	}
	return tbl, err == nil, err
}

// Committing reports whether a Commit has started on this Output (it may
// have landed): from then on the files it names must stay.
func (o *Output) Committing() bool { return o.committing.Load() }

// DropCreated drops the output table when this Output created it and no
// snapshot was ever committed to it, nor is a Commit under way: a run that
// fails or is stopped before its first commit leaves no empty table behind.
// The table's metadata file and its then empty data
// and metadata directories go too (DropTable only removes the catalog's
// entry; a namespace is left, it may hold other tables later). The table is
// reloaded first: one another run committed to meanwhile is kept.
func (o *Output) DropCreated(ctx context.Context) error {
	if !o.created || o.Committing() {
		return nil
	}
	tbl, err := o.cat.cat.LoadTable(ctx, o.ident)
	if err != nil {
		return fmt.Errorf("icebergio: output table %s: %w", o.name, err)
	}
	if len(tbl.Metadata().Snapshots()) > 0 {
		return nil
	}
	if err := o.cat.cat.DropTable(ctx, o.ident); err != nil {
		return fmt.Errorf("icebergio: dropping output table %s, which this run created and never committed to: %w", o.name, err)
	}
	loc := strings.TrimSuffix(tbl.Location(), "/")
	paths := []string{tbl.MetadataLocation(), loc + "/metadata", loc + "/data", loc}
	for _, p := range paths {
		p = Task{Path: p}.ReaderPath()
		fs, err := blobio.For(p)
		if err != nil {
			return err
		}
		fs.Remove(ctx, p) // a directory not empty (another writer's files) stays
	}
	return nil
}

// sameColumns compares two schemas' columns by name, type and nullability,
// ignoring field IDs (the wanted schema's are fresh).
func sameColumns(have, want *iceberg.Schema) error {
	h, err := table.SchemaToArrowSchema(have, nil, false, false)
	if err != nil {
		return err
	}
	w, err := table.SchemaToArrowSchema(want, nil, false, false)
	if err != nil {
		return err
	}
	if h.NumFields() != w.NumFields() {
		return fmt.Errorf("the table has %d columns (%s), the run writes %d (%s)", h.NumFields(), fieldNames(h), w.NumFields(), fieldNames(w))
	}
	for i := range h.NumFields() {
		hf, wf := h.Field(i), w.Field(i)
		if hf.Name != wf.Name || !arrow.TypeEqual(hf.Type, wf.Type) || hf.Nullable != wf.Nullable {
			return fmt.Errorf("column %d is %s %s (nullable %t) in the table, %s %s (nullable %t) in the run", i, hf.Name, hf.Type, hf.Nullable, wf.Name, wf.Type, wf.Nullable)
		}
	}
	return nil
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Name is the output table's dotted name.
func (o *Output) Name() string { return o.name }

// Table is the output table as last loaded or committed.
func (o *Output) Table() *table.Table { return o.tbl }

// SnapshotID is the output table's snapshot this Output is at (the one the
// next Commit is fenced on); 0 when the table has none.
func (o *Output) SnapshotID() int64 {
	if s := o.tbl.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

// DataDir is where a caller writes Parquet data files for Commit.Files, in
// the form relabel's blobio writers take (a local path, or a gs:// URI).
func (o *Output) DataDir() string {
	return Task{Path: strings.TrimSuffix(o.tbl.Location(), "/") + "/data"}.ReaderPath()
}

// LastRun returns the run recorded by the newest relabel snapshot in the
// output table's history (the current snapshot or, past snapshots committed
// by other tools such as a compaction, its nearest ancestor); ok is false when
// relabel never committed to the table.
func (o *Output) LastRun() (r Run, ok bool, err error) {
	cur := o.tbl.CurrentSnapshot()
	if cur == nil {
		return Run{}, false, nil
	}
	for _, s := range table.AncestorsOf(cur.SnapshotID, o.tbl.SnapshotByID) {
		if s.Summary == nil {
			continue
		}
		r, ok, err := runFromSummary(s.SnapshotID, s.Summary.Properties)
		if err != nil {
			return Run{}, false, fmt.Errorf("icebergio: output table %s: %w", o.name, err)
		}
		if ok {
			return r, true, nil
		}
	}
	return Run{}, false, nil
}

// Commit commits c as exactly one snapshot of the output table and returns its
// id. It is fenced on the snapshot the Output is at: if another writer
// committed since, it commits nothing and its error wraps ErrConcurrentRun.
// Any other failure (a data file that cannot be read, a record batch that
// does not match the table's columns, an error while writing) also commits
// nothing: the catalog's pointer to the table's metadata moves only at the
// end, in one catalog transaction. Data files iceberg-go wrote before a failure
// are left unreferenced under the table's location, never read; files of a
// killed run in its RunDir are removed by a later successful commit once
// older than OrphanAge (removeOrphans).
func (o *Output) Commit(ctx context.Context, c Commit) (int64, error) {
	if err := c.Run.validate(); err != nil {
		return 0, fmt.Errorf("icebergio: output table %s: %w", o.name, err)
	}
	if len(c.Remove) > 0 && (c.Mode != Rewrite || len(c.Files) == 0) {
		return 0, fmt.Errorf("icebergio: output table %s: Commit.Remove is for a Rewrite of Files", o.name)
	}
	if (len(c.Files) == 0) == (len(c.Records) == 0) {
		return 0, fmt.Errorf("icebergio: output table %s: a commit takes Files or Records (%d files, %d record batches)", o.name, len(c.Files), len(c.Records))
	}
	o.committing.Store(true)
	base := o.SnapshotID()
	txn := o.tbl.NewTransaction()
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		return 0, fmt.Errorf("icebergio: output table %s: %w", o.name, err)
	}
	props := c.Run.properties()
	var err error
	switch {
	case c.Files != nil:
		files := make([]string, len(c.Files))
		for i, f := range c.Files {
			if files[i], err = fileURI(f); err != nil {
				return 0, fmt.Errorf("icebergio: output table %s: %w", o.name, err)
			}
		}
		switch c.Mode {
		case Append:
			err = txn.AddFiles(ctx, files, props, false)
		case Replace:
			var old []string
			if old, err = o.dataFiles(ctx); err == nil {
				err = txn.ReplaceDataFiles(ctx, old, files, props)
			}
		case Rewrite:
			if len(c.Remove) == 0 {
				err = txn.AddFiles(ctx, files, props, false)
			} else {
				err = txn.ReplaceDataFiles(ctx, c.Remove, files, props)
			}
		default:
			err = fmt.Errorf("unknown mode %s", c.Mode)
		}
	default:
		sc := c.Records[0].Schema()
		for i, rec := range c.Records {
			if !rec.Schema().Equal(sc) {
				return 0, fmt.Errorf("icebergio: output table %s: record batch %d has another schema than batch 0", o.name, i)
			}
		}
		at := array.NewTableFromRecords(sc, c.Records)
		defer at.Release()
		switch c.Mode {
		case Append:
			err = txn.AppendTable(ctx, at, 1<<16, props)
		case Replace:
			err = txn.OverwriteTable(ctx, at, 1<<16, props)
		default:
			err = fmt.Errorf("unknown mode %s", c.Mode)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("icebergio: output table %s: %s: nothing committed: %w", o.name, c.Mode, err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		// iceberg-go v0.7.0 reports a failed table requirement (the fence on
		// the snapshot this run started from, or a branch created meanwhile)
		// with a plain error starting "requirement failed", no sentinel.
		if errors.Is(err, table.ErrCommitFailed) || errors.Is(err, table.ErrCommitDiverged) || strings.Contains(err.Error(), "requirement failed") {
			return 0, fmt.Errorf("icebergio: output table %s: this run started at snapshot %d, but another run committed since; nothing committed, rerun: %w (%w)", o.name, base, ErrConcurrentRun, err)
		}
		return 0, fmt.Errorf("icebergio: output table %s: commit: %w", o.name, err)
	}
	o.tbl = tbl
	o.removeOrphans(ctx)
	return o.SnapshotID(), nil
}

// OrphanAge is how old a file in one of the output table's run directories
// (RunDir) that no snapshot references must be before a commit removes it:
// what a killed run or a failed commit left (a run that fails removes its
// own files; one that is killed cannot). Three days, Iceberg's own default
// for removing orphan files: far longer than a run, so a concurrent run's
// files, not yet committed, are never taken for orphans.
const OrphanAge = 72 * time.Hour

// runDirPrefix starts the name of every run directory relabel makes under
// an output table's data location.
const runDirPrefix = "relabel-"

// runToken is what a run directory's name may carry after the table's
// UUID: a run's token (resultio.NewToken's hex).
var runToken = regexp.MustCompile(`^[0-9a-z]{8,64}$`)

// RunDir returns the directory, under the output table's data location,
// where the run named by token writes the data files it commits (and its
// kept state): relabel-<table UUID>-<token>. The name is what orphan
// clean-up goes by: it removes files only in directories so named for this
// table's UUID, so files relabel did not write (another writer's, or
// another table's sharing the location, relabel's own included) are never
// touched. token is a run's token (lower-case letters and digits, 8 to 64).
func (o *Output) RunDir(token string) (string, error) {
	if !runToken.MatchString(token) {
		return "", fmt.Errorf("icebergio: output table %s: run token %q: want 8 to 64 lower-case letters and digits", o.name, token)
	}
	return blobio.Join(o.DataDir(), o.runDirPrefix()+token), nil
}

// runDirPrefix is the start of the names of this table's run directories.
func (o *Output) runDirPrefix() string {
	return runDirPrefix + o.tbl.Metadata().TableUUID().String() + "-"
}

// ownOrphan reports whether p, a file no snapshot references (as a reader
// path), is one relabel wrote for this table: a file inside one of its run
// directories (RunDir), directly under the data location.
func (o *Output) ownOrphan(p string) bool {
	rel, ok := strings.CutPrefix(p, o.DataDir()+"/")
	if !ok {
		return false
	}
	dir, file, ok := strings.Cut(rel, "/")
	if !ok || file == "" || strings.HasPrefix(file, "../") || strings.Contains("/"+file+"/", "/../") {
		return false
	}
	tok, ok := strings.CutPrefix(dir, o.runDirPrefix())
	return ok && runToken.MatchString(tok)
}

// removeOrphans removes, after a commit, the files relabel wrote into this
// table's run directories (RunDir) that no snapshot references (iceberg-go's
// orphan planning, a dry run) and that are older than OrphanAge, except the
// ivf state and fit files relabel's snapshot summaries reference
// (SummaryState, SummaryFit), which no manifest lists. Nothing else under the location is a candidate:
// not another writer's files, nor those of another table sharing the
// location (a location set by hand, two catalogs sharing a warehouse), whose
// run directories carry their own table's UUID. When the catalog holds
// another table at or under this table's location, nothing is removed at
// all. It is housekeeping: its failure does not fail the commit, which has
// happened.
func (o *Output) removeOrphans(ctx context.Context) {
	keep := map[string]bool{}
	for _, s := range o.tbl.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		for _, key := range []string{SummaryState, SummaryFit} {
			if f := s.Summary.Properties[key]; f != "" {
				keep[filepath.Clean(Task{Path: f}.ReaderPath())] = true
			}
		}
	}
	res, err := o.tbl.DeleteOrphanFiles(ctx,
		table.WithLocation(strings.TrimSuffix(o.tbl.Location(), "/")+"/data"),
		table.WithFilesOlderThan(OrphanAge),
		table.WithDryRun(true))
	if err != nil {
		progress.Notef("output table %s: listing files older than %s that no snapshot references: %v", o.name, OrphanAge, err)
		return
	}
	var remove []string
	for _, uri := range res.OrphanFileLocations {
		p := Task{Path: uri}.ReaderPath()
		if !keep[filepath.Clean(p)] && o.ownOrphan(p) {
			remove = append(remove, p)
		}
	}
	if len(remove) == 0 {
		return
	}
	if other, err := o.cat.tablesAt(ctx, o.ident, o.tbl.Location()); err != nil || len(other) > 0 {
		why := fmt.Sprintf("the catalog also holds %s at or under its location %s", strings.Join(other, ", "), o.tbl.Location())
		if err != nil {
			why = fmt.Sprintf("the catalog's other tables' locations could not be listed: %v", err)
		}
		progress.Notef("output table %s: %d files older than %s that no snapshot references are left in place: %s", o.name, len(remove), OrphanAge, why)
		return
	}
	for _, p := range remove {
		fs, err := blobio.For(p)
		if err == nil {
			err = fs.Remove(ctx, p)
		}
		if err != nil {
			progress.Notef("output table %s: removing %s, which no snapshot references: %v", o.name, p, err)
		}
	}
}

// dataFiles lists the data files of the Output's snapshot.
func (o *Output) dataFiles(ctx context.Context) ([]string, error) {
	cur := o.tbl.CurrentSnapshot()
	if cur == nil {
		return nil, nil
	}
	tasks, err := o.tbl.Scan(table.WithSnapshotID(cur.SnapshotID)).PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(tasks))
	for i, t := range tasks {
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			// relabel's output tables are written by relabel alone;
			// rows deleted from one by another writer would come back
			// with the next run's rewrite of the file.
			return nil, fmt.Errorf("data file %s has row-level delete files: an output table is relabel's to write (rows deleted by another writer would be rewritten); compact it, or run a full run into a new table", t.File.FilePath())
		}
		paths[i] = t.File.FilePath()
	}
	return paths, nil
}

// fileURI turns a local path into the absolute file:// URI iceberg-go
// records; URIs pass through.
func fileURI(p string) (string, error) {
	if strings.Contains(p, "://") {
		return p, nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("data file %s: %w", p, err)
	}
	return "file://" + filepath.ToSlash(abs), nil
}

// DataFiles lists the data files of the snapshot the Output is at, as the
// table records them (file:// or gs:// URIs); Task{Path: f}.ReaderPath() is
// the form relabel's readers open.
func (o *Output) DataFiles(ctx context.Context) ([]string, error) {
	files, err := o.dataFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("icebergio: output table %s: %w", o.name, err)
	}
	return files, nil
}
