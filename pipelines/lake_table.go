package pipelines

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/ivfstages"
)

// lakeRun reports whether Run takes the table path.
func lakeRun(o *options.Options) bool { return o.Lake.OutputTable != "" }

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
	// KeptPartitioning: the ivf partitioning the last run kept served this
	// one (only the new rows were probed; incremental_state.go).
	KeptPartitioning bool `json:"kept_partitioning,omitempty"`
	// RemovedFiles/AddedFiles: output data files the commit replaced/added
	// (in a directory: the output shards removed because their input files
	// are gone / the shards written).
	RemovedFiles int `json:"removed_files,omitempty"`
	AddedFiles   int `json:"added_files,omitempty"`

	// Directory lakes (lake_dir.go). ChangedFiles are covered input files
	// whose content changed (their rows relabelled as new); GoneFiles those
	// no longer matched by --input (their rows left the output, and
	// RemovedOutputs are their output shards); RewrittenFiles the unchanged
	// files' output shards written again for their re-scored rows.
	ChangedFiles   int      `json:"changed_files,omitempty"`
	GoneFiles      []string `json:"gone_files,omitempty"`
	RemovedOutputs []string `json:"removed_outputs,omitempty"`
	RewrittenFiles int      `json:"rewritten_files,omitempty"`
	// Manifest is every input file the output directory covers: the
	// state the next incremental run compares the input with.
	Manifest []ManifestFile `json:"manifest,omitempty"`
}

// planTableInput is MakePlan with --input-table and a directory output.
// The files the catalog reads through iceberg-go's scanner (deletes applied,
// columns resolved by field id) outlive the catalog here, in the plan's
// Scratch directory, which Run removes after the pipeline read them.
func planTableInput(ctx context.Context, cfg options.Options) (*Plan, error) {
	scratch, err := os.MkdirTemp("", "relabel-iceberg-")
	if err != nil {
		return nil, err
	}
	cat, err := icebergio.OpenCatalog(ctx, cfg.Lake.Catalog, icebergio.CatalogOptions{Name: cfg.Lake.CatalogName, Warehouse: cfg.Lake.Warehouse, Scratch: scratch})
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	defer cat.Close()
	p, _, err := planTable(ctx, cfg, cat)
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	p.Scratch = scratch
	return p, nil
}

// planTable plans the input table's current snapshot: its data files become
// the shards (shardio.ScanPaths) and their units the pipeline's units.
func planTable(ctx context.Context, cfg options.Options, cat *icebergio.Catalog) (*Plan, *icebergio.InputPlan, error) {
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
// (runIncremental, below; the update is incremental.go's). A run that
// fails or is killed before the commit commits nothing: the catalog's
// pointer moves in one transaction at the end, and the files written are
// removed (or left as orphans nothing references).
func runTable(ctx context.Context, cfg options.Options, exec Executor) (*Summary, error) {
	t0 := time.Now()
	cat, err := icebergio.OpenCatalog(ctx, cfg.Lake.Catalog, icebergio.CatalogOptions{Name: cfg.Lake.CatalogName, Warehouse: cfg.Lake.Warehouse})
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
	// A table this run created is dropped if the run ends before its first
	// commit (DropCreated keeps it once a commit started): on every way out,
	// a second signal's included.
	dropOut := atexit.Push(func() {
		if err := out.DropCreated(context.WithoutCancel(ctx)); err != nil {
			progress.Notef("%v", err)
		}
	})
	defer dropOut.Run()
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
			return nil, &options.Error{Flag: "output-table", Err: fmt.Errorf("%s: its last run covered input table %s, not %s", out.Name(), last.InputTable, in.Table)}
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
		files = append(files, blobio.Join(tmp, resultio.OutputName(s.Path, shardio.Parquet)))
	}
	// Under --incremental the pipeline's ivf stages keep the partitioning
	// they fitted, for the next runs (fullIVFState).
	keep := cfg.Lake.Incremental && plan.Mode == options.NeighboursIVF
	if keep {
		plan.KeepIVF = blobio.Join(tmp, "ivf-kept")
		if err := fs.MkdirAll(ctx, plan.KeepIVF); err != nil {
			return nil, fmt.Errorf("relabel: creating %s: %w", plan.KeepIVF, err)
		}
	}
	committed := false
	var statePath string
	guard := onStop(out, func() {
		for _, f := range files {
			fs.Remove(context.WithoutCancel(ctx), f)
		}
		if statePath != "" {
			fs.Remove(context.WithoutCancel(ctx), statePath)
		}
		if keep {
			ivfstages.RemoveKept(context.WithoutCancel(ctx), plan.KeepIVF)
		}
		removeAll(context.WithoutCancel(ctx), fs, tmp, plan)
	})
	defer func() { guard.done(committed) }()
	tPlan := time.Since(t0)
	sum, tRun, err := execute(ctx, fs, plan, tmp, tok, exec)
	if err != nil {
		return nil, err
	}
	sum.Output = out.Name()
	var tState time.Duration
	if keep {
		t1 := time.Now()
		st, err := fullIVFState(ctx, fs, tmp, plan)
		if err != nil {
			return nil, err
		}
		guard.set(func() { statePath = st })
		ivfstages.RemoveKept(ctx, plan.KeepIVF)
		tState = time.Since(t1)
	}
	faults.Point("table-commit")
	run := runRecord(plan, in, 0, sum.Options)
	run.State = statePath
	snap, err := out.Commit(ctx, icebergio.Commit{Run: run, Mode: icebergio.Replace, Files: files})
	if err != nil {
		return nil, err
	}
	committed = true
	for _, sh := range plan.Shards {
		fs.Remove(ctx, blobio.Join(tmp, resultio.OutputName(sh.Path, shardio.Parquet)+resultio.ReportSuffix))
	}
	lake.OutputSnapshot, lake.AddedFiles = snap, len(files)
	sum.Lake = lake
	sum.Timings = map[string]float64{"plan": tPlan.Seconds(), "pipeline": tRun.Seconds(), "total": time.Since(t0).Seconds()}
	if statePath != "" {
		sum.Timings["state"] = tState.Seconds()
	}
	return sum, nil
}

// fullIVFState keeps the ivf partitioning of a full table run under
// --incremental in the run directory dir, for the incremental runs after it
// (incremental_state.go), and returns the file's path. The partitioning is
// the one the pipeline fitted and probed every row in (plan.KeepIVF, where
// its ivf stages wrote it down): fitting another in the launcher read every
// row again and cost about 11 s at 1M rows (issue 34).
func fullIVFState(ctx context.Context, fs blobio.FS, dir string, plan *Plan) (string, error) {
	k, err := ivfstages.ReadKept(ctx, plan.KeepIVF)
	if err != nil {
		return "", fmt.Errorf("relabel: --incremental: %w", err)
	}
	o := &plan.Options
	st := &ivfState{seed: o.Seed, metric: o.Metric, nprobe: k.NProbe, fitRows: k.Rows, model: &k.Model, mean: k.Mean, std: k.Std,
		keys: k.Keys, probes: k.Probes}
	return keepIVFState(ctx, fs, dir, st)
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
// opts are the run's summary options (the resolved options and the fitted
// temperature).
func runRecord(plan *Plan, in *icebergio.InputPlan, from int64, opts map[string]string) icebergio.Run {
	return icebergio.Run{
		InputTable: in.Table, InputSnapshotID: in.SnapshotID,
		Incremental: from != 0, FromSnapshotID: from,
		Version: Version, Seed: plan.Options.Seed, Options: opts,
	}
}

// runIncremental is runTable's incremental path, once the output table
// covers a snapshot of the input table (last).
func runIncremental(ctx context.Context, cat *icebergio.Catalog, out *icebergio.Output, plan *Plan, full *icebergio.InputPlan, last icebergio.Run, t0 time.Time) (*Summary, error) {
	cfg := plan.Options
	app, err := cat.PlanAppendedSince(ctx, full.Table, last.InputSnapshotID)
	if err != nil {
		return nil, err
	}
	lake := &LakeSummary{InputTable: full.Table, OutputTable: out.Name(), InputSnapshot: app.SnapshotID, FromSnapshot: last.InputSnapshotID, Incremental: true}
	plan.Mode = incrementalMode(&cfg, plan.Rows)
	sum := &Summary{
		Version: Version, Input: cfg.Input, Output: out.Name(), Classes: plan.C, ClassNames: plan.ClassNames,
		Neighbours: plan.Mode, Device: plan.Device, Options: plan.Recorded(),
		ChangedFrom: make([]int64, plan.C), ChangedTo: make([]int64, plan.C), Lake: lake,
	}
	if len(app.Tasks) == 0 {
		lake.NothingNew = true
		lake.InputSnapshot = last.InputSnapshotID
		progress.Notef("--incremental: nothing appended to %s since snapshot %d, which %s covers; nothing committed", full.Table, last.InputSnapshotID, out.Name())
		sum.Timings = map[string]float64{"total": time.Since(t0).Seconds()}
		return sum, nil
	}
	if app.SnapshotID != full.SnapshotID {
		return nil, fmt.Errorf("relabel: input table %s moved from snapshot %d to %d while the run was planned; nothing committed, rerun", full.Table, full.SnapshotID, app.SnapshotID)
	}
	if err := sameOptions(last.Options, sum.Options); err != nil {
		return nil, err
	}
	cal, err := plan.incrementalCalibration(last.Options, sum.Options)
	if err != nil {
		return nil, err
	}
	newPath := map[string]bool{}
	for _, t := range app.Tasks {
		newPath[t.ReaderPath()] = true
	}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: app.Rows, Shards: len(app.Tasks), Rounds: cfg.Rounds})
	progress.StageStarted("reading")
	// The stored posteriors of the old rows and the kept ivf state are read
	// while the input is (the launcher would otherwise wait on one reader
	// at a time).
	var (
		outFiles   []string
		posts      []*resultio.Posteriors
		kept       *ivfState
		storedErr  error
		storedDone = make(chan struct{})
	)
	go func() {
		defer close(storedDone)
		if outFiles, storedErr = out.DataFiles(ctx); storedErr != nil {
			return
		}
		posts = make([]*resultio.Posteriors, len(outFiles))
		for f, file := range outFiles {
			if posts[f], storedErr = resultio.ReadPosteriors(ctx, icebergio.Task{Path: file}.ReaderPath(), plan.ClassNames, nil); storedErr != nil {
				return
			}
		}
		if last.State != "" && plan.Mode == options.NeighboursIVF {
			var err error
			if kept, err = readIVFState(ctx, last.State); err != nil {
				// The state only saves time: without it the run partitions
				// every row, as before states were kept.
				progress.Notef("--incremental: the kept ivf partitioning is not used (%v): partitioning all %d rows again", err, plan.Rows)
			}
		}
	}()
	rows, err := shardio.ReadAll(ctx, plan.Shards, plan.Read)
	<-storedDone
	if err != nil {
		return nil, err
	}
	if storedErr != nil {
		return nil, storedErr
	}
	// A full run's stats stage refuses duplicate ids; so must this path,
	// which never runs it (an append repeating ids would be committed).
	if err := checkUniqueIDs(rows, plan.IDColumn); err != nil {
		return nil, err
	}
	d := flatten(rows, func(p string) bool { return newPath[p] })
	lake.ScannedFiles, lake.ScannedRows = len(plan.Shards), int64(d.n)
	for _, s := range plan.Shards {
		if newPath[s.Path] {
			lake.NewFiles++
		}
	}
	if lake.NewFiles != len(app.Tasks) {
		return nil, fmt.Errorf("relabel: input table %s: %d appended files planned, %d found among the snapshot's files", full.Table, len(app.Tasks), lake.NewFiles)
	}
	u, err := storedUpdate(d, posts, kept, plan, cal, cfg.Device, fmt.Sprintf("input table %s", full.Table), t0, lake)
	if err != nil {
		return nil, err
	}
	res, tPlan, tRun := u.res, u.tPlan, u.tRun

	// Write: one file per new input file, and every output file holding a
	// re-scored row, rewritten whole (split into files of at most
	// maxRewriteRows rows, written in parallel).
	progress.StageStarted("committing")
	tWrite := time.Now()
	fs, tmp, err := runDir(ctx, out, token())
	if err != nil {
		return nil, err
	}
	var files, remove []string
	var statePath string
	committed := false
	guard := onStop(out, func() {
		for _, f := range append(files, statePath) {
			if f != "" {
				fs.Remove(context.WithoutCancel(ctx), f)
			}
		}
		fs.Remove(context.WithoutCancel(ctx), tmp)
	})
	defer func() { guard.done(committed) }()
	if res.state != nil {
		guard.set(func() { statePath = blobio.Join(tmp, ivfStateName) })
	}
	meta := schemas.Metadata(Version, cfg.Seed, sum.Options, plan.ClassNames)
	// A file to write: rows, and whether a row counts in the summary (a new
	// or re-scored one).
	type outFile struct {
		path  string
		rows  []int
		count func(i int) bool
		// What the file adds to the summary.
		n, changed             int64
		changedFrom, changedTo []int64
	}
	var jobs []*outFile
	add := func(name string, rs []int, count func(int) bool) {
		p := blobio.Join(tmp, name)
		guard.set(func() { files = append(files, p) })
		jobs = append(jobs, &outFile{path: p, rows: rs, count: count, changedFrom: make([]int64, plan.C), changedTo: make([]int64, plan.C)})
	}
	write := func(f *outFile) error {
		c := cleanedOf(d, f.rows, u, cal)
		for j, i := range f.rows {
			if !f.count(i) {
				continue
			}
			f.n++
			if c.Changed[j] {
				f.changed++
				f.changedFrom[schemas.GivenLabel(d.labelsOf(i))]++
				f.changedTo[c.CleanLabel[j]]++
			}
		}
		return shardio.WriteShard(ctx, fs, f.path, shardio.Parquet, []*schemas.Cleaned{c}, meta, plan.LabelKind, plan.ClassNames, plan.IDKind, nil)
	}
	byShard := make([][]int, len(d.shards))
	for i := 0; i < d.n; i++ {
		if d.isNew[i] {
			byShard[d.shard[i]] = append(byShard[d.shard[i]], i)
		}
	}
	for s, rs := range byShard {
		if len(rs) == 0 {
			continue
		}
		add(resultio.OutputName(d.shards[s], shardio.Parquet), rs, func(int) bool { return true })
	}
	for f, p := range posts {
		rs, touched := u.storedRows(p)
		if !touched {
			continue
		}
		remove = append(remove, outFiles[f])
		name := path.Base(strings.ReplaceAll(icebergio.Task{Path: outFiles[f]}.ReaderPath(), "\\", "/"))
		rescored := func(i int) bool { _, ok := res.pos[i]; return ok }
		if len(rs) <= maxRewriteRows {
			add(name, rs, rescored)
			continue
		}
		stem := strings.TrimSuffix(name, path.Ext(name))
		for part, lo := 0, 0; lo < len(rs); part, lo = part+1, lo+maxRewriteRows {
			add(fmt.Sprintf("%s-%05d%s", stem, part, path.Ext(name)), rs[lo:min(lo+maxRewriteRows, len(rs))], rescored)
		}
	}
	// The files and the kept state, on the run's workers.
	err = pool.EachIndexErr(len(jobs)+1, max(1, cfg.WorkerCount()), func(j int) error {
		if j < len(jobs) {
			return write(jobs[j])
		}
		if res.state != nil {
			_, err := keepIVFState(ctx, fs, tmp, res.state)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, f := range jobs {
		sum.Rows += f.n
		sum.Changed += f.changed
		for c := range plan.C {
			sum.ChangedFrom[c] += f.changedFrom[c]
			sum.ChangedTo[c] += f.changedTo[c]
		}
	}
	tCommit := time.Now()
	faults.Point("table-commit")
	run := runRecord(plan, app, last.InputSnapshotID, sum.Options)
	run.State = statePath
	snap, err := out.Commit(ctx, icebergio.Commit{Run: run, Mode: icebergio.Rewrite, Files: files, Remove: remove})
	if err != nil {
		return nil, err
	}
	committed = true
	lake.OutputSnapshot, lake.AddedFiles, lake.RemovedFiles = snap, len(files), len(remove)
	sum.Timings = map[string]float64{"plan": tPlan.Seconds(), "pipeline": tRun.Seconds(), "total": time.Since(t0).Seconds(),
		"write": tCommit.Sub(tWrite).Seconds(), "commit": time.Since(tCommit).Seconds()}
	for k, v := range res.timings {
		sum.Timings[k] = v
	}
	return sum, nil
}

// maxRewriteRows bounds the rows of an output file an incremental run
// rewrites: a larger one (a full run writes one output file per input file)
// is rewritten as several, which are written in parallel, and which the
// next runs rewrite only where they hold re-scored rows.
var maxRewriteRows = 1 << 18
