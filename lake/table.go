package lake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/schemas"
)

// RunTable is a run with --output-table: the pipeline writes Parquet files
// into a directory of the output table's data location, and the run commits
// them as one snapshot (replacing the table's rows), or with --incremental,
// once the table covers an input snapshot, relabels only what is new
// (runIncremental, below; the update is update.go's). A run that
// fails or is killed before the commit commits nothing: the catalog's
// pointer moves in one transaction at the end, and the files written are
// removed (or left as orphans nothing references).
func RunTable(ctx context.Context, cfg job.Config, exec job.Execute) (*resultio.Summary, error) {
	lk := cfg.Lake()
	if lk.OutputTable == "" {
		return nil, errors.New("relabel: lake.RunTable is for runs with --output-table")
	}
	t0 := time.Now()
	cat, err := icebergio.OpenCatalog(ctx, lk.Catalog, icebergio.CatalogOptions{Name: lk.CatalogName, Warehouse: lk.Warehouse})
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	plan, in, err := cfg.ResolveTable(ctx, cat)
	if err != nil {
		return nil, err
	}
	out, err := cat.OpenOutput(ctx, lk.OutputTable, schemas.OutputSchema(plan.IDKind, plan.LabelKind, plan.Shards[0].Input.Multi, nil))
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
	if lk.Incremental {
		last, ok, err := out.LastRun()
		if err != nil {
			return nil, err
		}
		switch {
		case !ok:
			progress.Notef("--incremental: output table %s covers no input snapshot yet: this first run is a full one", out.Name())
		case last.InputTable != in.Table:
			return nil, job.FlagError("output-table", fmt.Errorf("%s: its last run covered input table %s, not %s", out.Name(), last.InputTable, in.Table))
		default:
			return runIncremental(ctx, cat, out, plan, in, last, exec, t0)
		}
	}
	return fullTable(ctx, out, plan, in, exec, t0)
}

// fullTable is RunTable's full run: the pipeline writes every row into the
// run's directory of the output table, and one snapshot replaces the
// table's rows; under --incremental it also keeps the pipeline's ivf
// partitioning for the next runs.
func fullTable(ctx context.Context, out *icebergio.Output, plan *job.Job, in *icebergio.InputPlan, exec job.Execute, t0 time.Time) (*resultio.Summary, error) {
	incremental := plan.Lake().Incremental
	lake := &resultio.LakeSummary{InputTable: in.Table, OutputTable: out.Name(), InputSnapshot: in.SnapshotID}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: plan.Rows, Shards: len(plan.Shards), Rounds: plan.Rounds()})
	lake.NewFiles, lake.ScannedFiles = len(plan.Shards), len(plan.Shards)
	lake.NewRows, lake.ScannedRows = plan.Rows, plan.Rows

	tok := resultio.NewToken()
	fs, tmp, err := makeRunDir(ctx, out, tok)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, s := range plan.Shards {
		files = append(files, blobio.Join(tmp, resultio.OutputName(s.Path, shardio.Parquet)))
	}
	// Under --incremental the pipeline's ivf stages keep the partitioning
	// they fitted, and its rounds what they fitted, for the next runs
	// (keptio.KeepIVFDir, keepFit).
	dirs := job.Dirs{Tmp: tmp, Token: tok}
	keep := incremental && plan.Mode == job.ModeIVF
	if keep {
		dirs.KeepIVF = blobio.Join(tmp, "ivf-kept")
		if err := fs.MkdirAll(ctx, dirs.KeepIVF); err != nil {
			return nil, fmt.Errorf("relabel: creating %s: %w", dirs.KeepIVF, err)
		}
	}
	if incremental {
		dirs.KeepFit = blobio.Join(tmp, "fit-kept")
		if err := fs.MkdirAll(ctx, dirs.KeepFit); err != nil {
			return nil, fmt.Errorf("relabel: creating %s: %w", dirs.KeepFit, err)
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
			keptio.RemoveIVFDir(context.WithoutCancel(ctx), dirs.KeepIVF)
		}
		job.RemoveTemp(context.WithoutCancel(ctx), fs, tmp, plan)
	})
	defer func() { guard.done(committed) }()
	tPlan := time.Since(t0)
	sum, tRun, err := exec(ctx, plan, dirs)
	if err != nil {
		return nil, err
	}
	sum.Output = out.Name()
	var tState time.Duration
	if keep {
		t1 := time.Now()
		// The partitioning the pipeline fitted and probed every row in
		// (where its ivf stages wrote it down), kept in the run directory
		// for the incremental runs after this one (state.go): fitting
		// another in the launcher would read every row again and cost
		// about 11 s at 1M rows.
		st, err := keptio.KeepIVFDir(ctx, fs, dirs.KeepIVF, tmp, keptio.IVFFileName)
		if err != nil {
			return nil, err
		}
		guard.set(func() { statePath = st })
		keptio.RemoveIVFDir(ctx, dirs.KeepIVF)
		tState = time.Since(t1)
	}
	var fitPath string
	if dirs.KeepFit != "" {
		names, err := keepFit(ctx, dirs.KeepFit, tmp)
		if err != nil {
			return nil, err
		}
		keptio.RemoveFitDir(ctx, dirs.KeepFit)
		if len(names) > 0 {
			fitPath = blobio.Join(tmp, names[0])
			lake.Fit = fitPath
		}
	}
	faults.Point("table-commit")
	run := runRecord(plan, in, 0, sum.Options)
	run.State, run.Fit = statePath, fitPath
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

// makeRunDir makes a run's own directory under the output table's data
// location (icebergio's RunDir: the only place whose unreferenced files a
// later commit's orphan clean-up may remove).
func makeRunDir(ctx context.Context, out *icebergio.Output, tok string) (blobio.FS, string, error) {
	dir, err := out.RunDir(tok)
	if err != nil {
		return nil, "", err
	}
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
func runRecord(plan *job.Job, in *icebergio.InputPlan, from int64, opts map[string]string) icebergio.Run {
	return icebergio.Run{
		InputTable: in.Table, InputSnapshotID: in.SnapshotID,
		Incremental: from != 0, FromSnapshotID: from,
		Version: job.Version, Seed: plan.Seed(), Options: opts,
	}
}

// runIncremental is RunTable's incremental path, once the output table
// covers a snapshot of the input table (last): nothing to do when nothing
// was appended, whatever the last run fitted; a full run (fullTable) when
// the last run's posteriors need a fit it did not keep (fullAgain) or were
// made under other options (optionsChanged); else the update.
func runIncremental(ctx context.Context, cat *icebergio.Catalog, out *icebergio.Output, plan *job.Job, full *icebergio.InputPlan, last icebergio.Run, exec job.Execute, t0 time.Time) (*resultio.Summary, error) {
	app, err := cat.PlanAppendedSince(ctx, full.Table, last.InputSnapshotID)
	if err != nil {
		return nil, err
	}
	var fit *keptio.Fit
	if len(app.Tasks) > 0 {
		if last.Fit != "" {
			if fit, err = keptio.ReadFitFile(ctx, last.Fit); err != nil {
				progress.Notef("--incremental: the fits the last run kept are not read (%v)", err)
			}
		}
		why := fullAgain(last.Options, fit, plan.Read.D, plan.C)
		if why == "" {
			why = optionsChanged(last.Options, plan.Recorded())
		}
		if why != "" {
			progress.Notef("--incremental: %s", why)
			return fullTable(ctx, out, plan, full, exec, t0)
		}
	}
	plan = plan.WithMode(incrementalMode(plan, plan.Rows))
	sum := &resultio.Summary{
		Version: job.Version, Input: plan.Input(), Output: out.Name(), Classes: plan.C, ClassNames: plan.ClassNames,
		Neighbours: plan.Mode, Device: plan.Device, Options: plan.Recorded(),
		ChangedFrom: make([]int64, plan.C), ChangedTo: make([]int64, plan.C),
	}
	tp, err := planTableRun(plan, full, app, last, out.Name(), sum.Options)
	if err != nil {
		return nil, err
	}
	lake, newPath, cal := tp.lake, tp.newPath, tp.cal
	sum.Lake = lake
	if lake.NothingNew {
		progress.Notef("--incremental: nothing appended to %s since snapshot %d, which %s covers; nothing committed", full.Table, last.InputSnapshotID, out.Name())
		sum.Timings = map[string]float64{"total": time.Since(t0).Seconds()}
		return sum, nil
	}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: app.Rows, Shards: len(app.Tasks), Rounds: plan.Rounds()})
	progress.StageStarted("reading")
	// The stored posteriors of the old rows and the kept ivf state are read
	// while the input is (the launcher would otherwise wait on one reader
	// at a time).
	storedDone := readStored(ctx, out, plan, last)
	rows, err := shardio.ReadAll(ctx, plan.Shards, plan.Read)
	st := <-storedDone
	if err != nil {
		return nil, err
	}
	if st.err != nil {
		return nil, st.err
	}
	outFiles, posts, kept := st.files, st.posts, st.kept
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
	u, err := storedUpdate(d, posts, kept, fit, plan, cal, fmt.Sprintf("input table %s", full.Table), t0, lake)
	if err != nil {
		return nil, err
	}
	res, tPlan, tRun := u.res, u.tPlan, u.tRun

	// Write: one file per new input file, and every output file holding a
	// re-scored row, rewritten whole (split into files of at most
	// maxRewriteRows rows, written in parallel).
	progress.StageStarted("committing")
	tWrite := time.Now()
	fs, tmp, err := makeRunDir(ctx, out, resultio.NewToken())
	if err != nil {
		return nil, err
	}
	var files []string
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
		guard.set(func() { statePath = blobio.Join(tmp, keptio.IVFFileName) })
	}
	meta := schemas.Metadata(job.Version, plan.Seed(), sum.Options, plan.ClassNames)
	jobs, remove := planTableFiles(d, posts, outFiles, u, plan.C)
	for _, f := range jobs {
		f.path = blobio.Join(tmp, f.name)
		guard.set(func() { files = append(files, f.path) })
	}
	// The files and the kept state, on the run's workers.
	err = pool.EachIndexErr(len(jobs)+1, max(1, plan.Workers), func(j int) error {
		if j < len(jobs) {
			return jobs[j].write(ctx, fs, d, u, cal, plan, meta)
		}
		if res.state != nil {
			_, err := keptio.WriteIVF(ctx, fs, tmp, res.state)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, f := range jobs {
		f.addTo(sum)
	}
	tCommit := time.Now()
	faults.Point("table-commit")
	// The kept fits stay the full run's: this snapshot names the same file
	// and records how the posteriors were made, for the next run.
	carryFit(last.Options, sum.Options)
	if fit != nil {
		lake.Fit = last.Fit
	}
	run := runRecord(plan, app, last.InputSnapshotID, sum.Options)
	run.State, run.Fit = statePath, lake.Fit
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

// storedTable is what an incremental table run reads of the output table:
// its data files, their posteriors, and the ivf state the last run kept
// (nil: none, or not usable).
type storedTable struct {
	files []string
	posts []*resultio.Posteriors
	kept  *keptio.IVF
	err   error
}

// readStored reads the output table's stored state in the background; the
// channel yields it once read.
func readStored(ctx context.Context, out *icebergio.Output, plan *job.Job, last icebergio.Run) <-chan storedTable {
	done := make(chan storedTable, 1)
	go func() {
		var st storedTable
		defer func() { done <- st }()
		if st.files, st.err = out.DataFiles(ctx); st.err != nil {
			return
		}
		st.posts = make([]*resultio.Posteriors, len(st.files))
		for f, file := range st.files {
			if st.posts[f], st.err = resultio.ReadPosteriors(ctx, icebergio.Task{Path: file}.ReaderPath(), plan.ClassNames, nil); st.err != nil {
				return
			}
		}
		if last.State != "" && plan.Mode == job.ModeIVF {
			var err error
			if st.kept, err = keptio.ReadIVF(ctx, last.State); err != nil {
				// The state only saves time: without it the run partitions
				// every row, as before states were kept.
				progress.Notef("--incremental: the kept ivf partitioning is not used (%v): partitioning all %d rows again", err, plan.Rows)
			}
		}
	}()
	return done
}
