package pipelines

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/stages"
)

// LakeOptions are the data-lake options of relabel run: Apache Iceberg
// tables in and out (io/icebergio), and incremental runs.
type LakeOptions struct {
	// Catalog is the Iceberg catalog's URI (sqlite:///path/catalog.db).
	Catalog string
	// Warehouse is where tables the run creates keep their files; empty: the
	// catalog's default (a "warehouse" directory beside the catalog file).
	Warehouse string
	// InputTable is the input table (ns.table), instead of Options.Input.
	InputTable string
	// OutputTable is the output table (ns.table), instead of Options.Output.
	OutputTable string
	// Incremental relabels only the rows appended to the input table since
	// the input snapshot the output table last covered (incremental.go).
	Incremental bool
}

// GroupLake is the help group of the data-lake flags.
const GroupLake = "Data lake (Apache Iceberg tables, incremental runs)"

func init() {
	Groups = slices.Insert(Groups, 1, GroupLake)
	Flags = append(Flags, lakeFlags...)
}

var lakeFlags = []Flag{
	{Name: "catalog", Group: GroupLake, Usage: "Iceberg catalog of --input-table/--output-table: sqlite:///path/catalog.db (a local SQL catalog, created if missing)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.Catalog) },
		check: func(o *Options) error {
			l := &o.Lake
			if l.Catalog == "" {
				if l.InputTable != "" || l.OutputTable != "" {
					return errors.New("is required with --input-table/--output-table")
				}
				return nil
			}
			if scheme, rest, ok := strings.Cut(l.Catalog, "://"); !ok || scheme != icebergio.SQLiteScheme || rest == "" {
				return fmt.Errorf("%q: want sqlite:///path/to/catalog.db", l.Catalog)
			}
			if l.InputTable == "" && l.OutputTable == "" {
				return errors.New("given without --input-table or --output-table")
			}
			return nil
		}},
	{Name: "warehouse", Group: GroupLake, Usage: "where tables the run creates keep their files: a directory or gs://bucket/prefix", Default: "warehouse/ beside the catalog file",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.Warehouse) },
		check: func(o *Options) error {
			if o.Lake.Warehouse != "" && o.Lake.Catalog == "" {
				return errors.New("given without --catalog")
			}
			return nil
		}},
	{Name: "input-table", Group: GroupLake, Usage: "input Iceberg table namespace.table, instead of --input (its current snapshot's data files are the shards)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.InputTable) },
		check: func(o *Options) error {
			l := &o.Lake
			if l.InputTable == "" {
				return nil
			}
			if o.Input != "" {
				return errors.New("with --input: give one input")
			}
			if _, err := icebergio.ParseIdent(l.InputTable); err != nil {
				return fmt.Errorf("%q: want namespace.table", l.InputTable)
			}
			return nil
		}},
	{Name: "output-table", Group: GroupLake, Usage: "output Iceberg table namespace.table, instead of --output: each run commits one snapshot recording the input snapshot, version, options and seed (Parquet files)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.OutputTable) },
		check: func(o *Options) error {
			l := &o.Lake
			if l.OutputTable == "" {
				return nil
			}
			if o.Output != "" {
				return errors.New("with --output: give one output (the table's Parquet files are readable as shards)")
			}
			if l.InputTable == "" {
				return errors.New("needs --input-table (the snapshot records the input table it covered)")
			}
			if _, err := icebergio.ParseIdent(l.OutputTable); err != nil {
				return fmt.Errorf("%q: want namespace.table", l.OutputTable)
			}
			if l.OutputTable == l.InputTable {
				return errors.New("is --input-table: the output must be another table")
			}
			return nil
		}},
	{Name: "incremental", Group: GroupLake, Usage: "relabel only the rows appended to --input-table since the input snapshot --output-table last covered, and the old rows they became neighbours of (the first run is a full one; nothing new: nothing committed)",
		bind: func(o *Options) flag.Value { return (*boolValue)(&o.Lake.Incremental) },
		check: func(o *Options) error {
			l := &o.Lake
			if !l.Incremental {
				return nil
			}
			if l.InputTable != "" && l.OutputTable == "" {
				return errors.New("with --input-table needs --output-table (the output table records what was covered)")
			}
			if l.OutputTable == "" {
				// Directory lakes (a manifest of covered files in the
				// output directory) are not built yet.
				return errors.New("needs --input-table and --output-table (incremental runs over a glob and an output directory are not supported yet)")
			}
			return nil
		}},
}

// lakeRun reports whether Run takes the table path.
func (o *Options) lakeRun() bool { return o.Lake.OutputTable != "" }

// LakeSummary is what a table run (or an incremental directory run) adds to
// the summary: what it covered and what it read, wrote and committed.
type LakeSummary struct {
	InputTable  string `json:"input_table,omitempty"`
	OutputTable string `json:"output_table,omitempty"`
	// InputSnapshot is the input snapshot covered; FromSnapshot, for an
	// incremental run, the one the previous run had covered.
	InputSnapshot  int64 `json:"input_snapshot,omitempty"`
	FromSnapshot   int64 `json:"from_snapshot,omitempty"`
	OutputSnapshot int64 `json:"output_snapshot,omitempty"`
	Incremental    bool  `json:"incremental"`
	// NothingNew: nothing was appended since the covered snapshot; nothing
	// was committed.
	NothingNew bool `json:"nothing_new,omitempty"`
	// NewFiles are the input files relabelled as new (all of them in a full
	// run), NewRows their rows; ScannedFiles/ScannedRows what was read for
	// the neighbour search (an incremental run reads every file's features
	// once).
	NewFiles     int   `json:"new_files"`
	NewRows      int64 `json:"new_rows"`
	ScannedFiles int   `json:"scanned_files"`
	ScannedRows  int64 `json:"scanned_rows"`
	// Rescored are old rows re-scored because a new row entered their K
	// nearest neighbours; Searched the old rows whose neighbours were
	// searched again to find them.
	Rescored int64 `json:"rescored,omitempty"`
	Searched int64 `json:"searched,omitempty"`
	// RemovedFiles/AddedFiles: output data files the commit replaced/added.
	RemovedFiles int `json:"removed_files,omitempty"`
	AddedFiles   int `json:"added_files,omitempty"`
}

// planTableInput is MakePlan with --input-table and a directory output.
func planTableInput(ctx context.Context, cfg Options) (*Plan, error) {
	cat, err := icebergio.OpenCatalog(ctx, cfg.Lake.Catalog, icebergio.CatalogOptions{Warehouse: cfg.Lake.Warehouse})
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	p, _, err := planTable(ctx, cfg, cat)
	return p, err
}

// planTable plans the input table's current snapshot: its data files become
// the shards (shardio.ScanPaths) and their units the pipeline's units.
func planTable(ctx context.Context, cfg Options, cat *icebergio.Catalog) (*Plan, *icebergio.InputPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	in, err := cat.PlanInput(ctx, cfg.Lake.InputTable)
	if err != nil {
		return nil, nil, err
	}
	if len(in.Tasks) == 0 {
		return nil, nil, fmt.Errorf("relabel: input table %s snapshot %d has no data files", in.Table, in.SnapshotID)
	}
	paths := make([]string, len(in.Tasks))
	for i, t := range in.Tasks {
		paths[i] = t.ReaderPath()
	}
	cfg.Input = fmt.Sprintf("%s@%d", in.Table, in.SnapshotID)
	ro := shardio.ReadOptions{Columns: cfg.Columns}
	shards, skipped, err := shardio.ScanPaths(ctx, paths, ro)
	if err != nil {
		return nil, nil, err
	}
	p, err := planShards(ctx, cfg, ro, shards, skipped)
	if err != nil {
		return nil, nil, err
	}
	return p, in, nil
}

// runTable is Run with --output-table: the pipeline writes Parquet files
// into a directory of the output table's data location, and the run commits
// them as one snapshot (replacing the table's rows), or with --incremental,
// once the table covers an input snapshot, relabels only what is new
// (incremental.go). A run that fails or is killed before the commit commits
// nothing: the catalog's pointer moves in one transaction at the end, and
// the files written are removed (or left as orphans nothing references).
func runTable(ctx context.Context, cfg Options, exec Executor) (*Summary, error) {
	t0 := time.Now()
	cat, err := icebergio.OpenCatalog(ctx, cfg.Lake.Catalog, icebergio.CatalogOptions{Warehouse: cfg.Lake.Warehouse})
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	plan, in, err := planTable(ctx, cfg, cat)
	if err != nil {
		return nil, err
	}
	plan.Options.Format = shardio.Parquet // Iceberg data files
	out, err := cat.OpenOutput(ctx, cfg.Lake.OutputTable, schemas.OutputSchema(plan.IDKind, plan.LabelKind, plan.Shards[0].Input.Multi, nil))
	if err != nil {
		return nil, err
	}
	lake := &LakeSummary{InputTable: in.Table, OutputTable: out.Name(), InputSnapshot: in.SnapshotID}
	if cfg.Lake.Incremental {
		last, ok, err := out.LastRun()
		if err != nil {
			return nil, err
		}
		switch {
		case !ok:
			progress.Notef("--incremental: output table %s covers no input snapshot yet: this first run is a full one", out.Name())
		case last.InputTable != in.Table:
			return nil, &OptionError{Flag: "output-table", Err: fmt.Errorf("%s: its last run covered input table %s, not %s", out.Name(), last.InputTable, in.Table)}
		default:
			return runIncremental(ctx, cat, out, plan, in, last, t0)
		}
	}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: plan.Rows, Shards: len(plan.Shards), Rounds: plan.Options.Rounds})
	lake.NewFiles, lake.ScannedFiles = len(plan.Shards), len(plan.Shards)
	lake.NewRows, lake.ScannedRows = plan.Rows, plan.Rows

	tok := token()
	fs, tmp, err := runDir(ctx, out, tok)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, s := range plan.Shards {
		files = append(files, blobio.Join(tmp, stages.OutputName(s.Path, shardio.Parquet)))
	}
	committed := false
	defer func() {
		if !committed {
			for _, f := range files {
				fs.Remove(context.WithoutCancel(ctx), f)
			}
			removeAll(context.WithoutCancel(ctx), fs, tmp, plan)
		}
	}()
	tPlan := time.Since(t0)
	sum, tRun, err := execute(ctx, fs, plan, tmp, exec)
	if err != nil {
		return nil, err
	}
	sum.Output = out.Name()
	faults.Point("table-commit")
	snap, err := out.Commit(ctx, icebergio.Commit{Run: runRecord(plan, in, 0), Mode: icebergio.Replace, Files: files})
	if err != nil {
		return nil, err
	}
	committed = true
	for _, sh := range plan.Shards {
		fs.Remove(ctx, blobio.Join(tmp, stages.OutputName(sh.Path, shardio.Parquet)+resultio.ReportSuffix))
	}
	lake.OutputSnapshot, lake.AddedFiles = snap, len(files)
	sum.Lake = lake
	sum.Timings = map[string]float64{"plan": tPlan.Seconds(), "pipeline": tRun.Seconds(), "total": time.Since(t0).Seconds()}
	return sum, nil
}

// runDir makes a run's own directory under the output table's data location.
func runDir(ctx context.Context, out *icebergio.Output, tok string) (blobio.FS, string, error) {
	dir := blobio.Join(out.DataDir(), "relabel-"+tok)
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, "", err
	}
	if err := fs.MkdirAll(ctx, dir); err != nil {
		return nil, "", fmt.Errorf("relabel: creating %s: %w", dir, err)
	}
	return fs, dir, nil
}

// runRecord is what a run's snapshot summary records.
func runRecord(plan *Plan, in *icebergio.InputPlan, from int64) icebergio.Run {
	return icebergio.Run{
		InputTable: in.Table, InputSnapshotID: in.SnapshotID,
		Incremental: from != 0, FromSnapshotID: from,
		Version: Version, Seed: plan.Options.Seed, Options: plan.OptionMap(),
	}
}
