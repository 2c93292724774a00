package lake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/schemas"
)

// Directory lakes: --incremental with a glob --input and an --output
// directory. The output directory's summary.json records, in its "lake"
// section, a manifest of the input files the output covers (path, size,
// content version: blobio.Fingerprint) and which output shard holds each
// file's rows; the state an incremental run needs, the old rows'
// posteriors, is in those shards. Keeping the manifest inside summary.json,
// which the commit renames into place last (io/resultio/outdir.go), makes it exactly as
// current as the shards: a run that was killed before its summary.json
// landed never left a manifest that describes other shards, and a plain run
// (no --incremental) over the same directory writes a summary without one,
// so the next incremental run starts over with a full run.
//
// The rule for files, by path:
//   - new (not in the manifest): its rows are new rows;
//   - changed (size or version differs): its rows are all treated as new,
//     and its output shard is written again in full;
//   - gone (in the manifest, not matched by the glob any more): its rows
//     leave the output, its output shard is removed. The old rows that had
//     them as neighbours keep their posteriors (the output records no
//     neighbour lists to find them by); a run without --incremental resets
//     that drift, as it resets the one-hop spread of update.go;
//   - unchanged: its rows keep their stored posteriors, but for those
//     re-scored because a new row entered their K nearest neighbours
//     (update.go); its output shard is rewritten only then.
//
// The update itself is update.go's (updateIncremental), the same as
// for tables. The first run over an output directory holding no manifest is
// a full run through the pipeline that also records the manifest.

// coverage fingerprints the plan's input files, before they are read: a
// file rewritten while the run reads it is then seen as changed by the next
// run, never as covered. The files are hashed on every core: a scheduled
// run's input is often hundreds of small files.
func coverage(ctx context.Context, plan *job.Job) ([]resultio.ManifestFile, error) {
	m := make([]resultio.ManifestFile, len(plan.Shards))
	err := pool.EachIndexErr(len(plan.Shards), 0, func(i int) error {
		s := plan.Shards[i]
		fp, err := blobio.FingerprintOf(ctx, s.Path)
		if err != nil {
			return fmt.Errorf("relabel: --incremental: %w", err)
		}
		m[i] = resultio.ManifestFile{Path: s.Path, Fingerprint: fp, Output: resultio.OutputName(s.Path, plan.Format()), Rows: max(s.Rows, 0)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// fullLake is the lake section of a full run's summary under --incremental.
func fullLake(plan *job.Job, manifest []resultio.ManifestFile) *resultio.LakeSummary {
	return &resultio.LakeSummary{
		NewFiles: len(plan.Shards), NewRows: plan.Rows, ScannedFiles: len(plan.Shards), ScannedRows: plan.Rows,
		Manifest: manifest,
	}
}

// RunDir is a run with --incremental and an output directory: under the
// output's lock (job.Open), it finishes a commit a killed run left half
// done, compares the input files with the manifest of the output's
// summary.json (planDir) and relabels what is new, changed or gone
// (updateDir); with no manifest to start from it is a full run (exec,
// through job.Session.Full) that records one and keeps its rounds' fits
// (fit.go).
func RunDir(ctx context.Context, cfg job.Config, exec job.Execute) (*resultio.Summary, error) {
	if l := cfg.Lake(); !l.Incremental || l.OutputTable != "" {
		return nil, errors.New("relabel: lake.RunDir is for --incremental runs into an output directory")
	}
	t0 := time.Now()
	plan, err := cfg.Resolve(ctx)
	if err != nil {
		return nil, err
	}
	s, err := job.Open(ctx, plan, t0)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	sum, done, gone, err := runDirIncremental(ctx, s)
	if done || err != nil {
		return sum, err
	}
	var manifest []resultio.ManifestFile
	if gone != nil {
		manifest = gone.Manifest // planDir's: the input's files now
	} else if manifest, err = coverage(ctx, plan); err != nil {
		return nil, err
	}
	var lk *resultio.LakeSummary
	sum, err = s.Full(ctx, exec, job.FullRun{
		Finish: func(sum *resultio.Summary) {
			lk = fullLake(plan, manifest)
			if gone != nil {
				lk.GoneFiles, lk.RemovedOutputs, lk.RemovedFiles = gone.GoneFiles, gone.RemovedOutputs, len(gone.RemovedOutputs)
			}
			sum.Lake = lk
		},
		Keep: func(ctx context.Context, kept, tmp string) ([]string, error) {
			// The rounds' fits, for the incremental runs after this one
			// (fit.go): committed with the shards, named in the
			// manifest's section.
			names, err := keepFit(ctx, kept, tmp)
			if len(names) > 0 {
				lk.Fit = names[0]
			}
			return names, err
		},
		// The ivf partitioning, for the incremental runs after this one
		// to probe their new rows in (state.go).
		KeepIVF: func(name string) { lk.IVF = name },
		// Relabelling every row again (gone: the manifest said what to
		// redo) replaces the output's own files, as an incremental run
		// does.
		Overwrite: gone != nil,
	})
	if err != nil || gone == nil {
		return sum, err
	}
	// As updateDir: the outputs of input files gone since the last run go
	// once the new summary, which lists them as removed, is committed; a
	// crash between leaves them to the next run's clean-up.
	for _, name := range gone.RemovedOutputs {
		s.FS.Remove(ctx, blobio.Join(plan.Output(), name))
	}
	return sum, nil
}

// runDirIncremental is RunDir's incremental path, called with the output's
// lock held. Nothing new, changed or gone: nothing to do, whatever the last
// run fitted. done is false when the directory holds no finished output
// with a manifest, or when something is new and the last run's posteriors
// need a fit it did not keep (fullAgain): RunDir then makes a full run,
// recording the manifest and keeping the fits. In the second case gone
// holds the input files gone since the last run and their outputs, which
// the full run lists and removes.
func runDirIncremental(ctx context.Context, s *job.Session) (sum *resultio.Summary, done bool, gone *resultio.LakeSummary, err error) {
	plan, fsys := s.Job, s.FS
	out := plan.Output()
	if plan.Crowd != nil {
		return nil, true, nil, job.FlagError("incremental", errors.New("with annotators: incremental runs relabel shards of items, not annotations"))
	}
	if resumed, err := s.Resume(ctx); err != nil {
		return nil, true, nil, err
	} else if resumed {
		progress.Notef("--incremental: finished the commit an interrupted run left in %s", out)
	}
	prev, found, err := s.Previous(ctx)
	if err != nil {
		return nil, true, nil, err
	} else if !found {
		progress.Notef("--incremental: %s holds no finished output yet: this first run is a full one", out)
		return nil, false, nil, nil
	}
	if prev.Lake == nil || prev.Lake.Manifest == nil {
		progress.Notef("--incremental: %s was written without --incremental (its summary.json has no manifest): this run is a full one", out)
		return nil, false, nil, nil
	}
	// Outputs of gone files that a killed run's commit left behind.
	for _, name := range prev.Lake.RemovedOutputs {
		if !lists(prev, name) {
			fsys.Remove(ctx, blobio.Join(out, name))
		}
	}
	manifest, err := coverage(ctx, plan)
	if err != nil {
		return nil, true, nil, err
	}
	lake, newPath := planDir(prev.Lake.Manifest, manifest)
	opts := plan.Recorded()
	base := &resultio.Summary{
		Version: job.Version, Input: plan.Input(), Output: out, Classes: plan.C, ClassNames: plan.ClassNames,
		Neighbours: incrementalMode(plan, plan.Rows), Device: plan.Device, Options: opts, Lake: lake,
	}
	if len(newPath) == 0 && len(lake.GoneFiles) == 0 {
		// Whatever the last run fitted: nothing to relabel.
		lake.NothingNew = true
		lake.Manifest = nil
		progress.Notef("--incremental: no input file of %s is new, changed or gone since %s was written; nothing changed", plan.Input(), out)
		base.Timings = map[string]float64{"total": time.Since(s.Start).Seconds()}
		return base, true, nil, nil
	}
	var fit *keptio.Fit
	if prev.Lake.Fit != "" {
		if fit, err = keptio.ReadFitFile(ctx, blobio.Join(out, prev.Lake.Fit)); err != nil {
			progress.Notef("--incremental: the fits the last run kept are not read (%v)", err)
		}
	}
	if why := fullAgain(prev.Options, fit, plan.Read.D, plan.C); why != "" {
		// Every output file is relabelled again, so the output's own
		// files are replaced, as an incremental run replaces them; the
		// outputs of files gone since go, as updateDir removes them.
		progress.Notef("--incremental: %s", why)
		return nil, false, lake, nil
	}
	if why := optionsChanged(prev.Options, opts); why != "" {
		progress.Notef("--incremental: %s", why)
		return nil, false, lake, nil
	}
	cal, err := calibration(plan, prev.Options, opts)
	if err != nil {
		return nil, true, nil, err
	}
	// The kept fits stay the full run's (fit.go): the new summary names
	// the same file (and records how the posteriors were made: updateDir).
	if fit != nil {
		lake.Fit = prev.Lake.Fit
	}
	// So does the kept partitioning: each run probes the rows it does not
	// hold (extend), the same probes whichever run makes them.
	var kept *keptio.IVF
	if prev.Lake.IVF != "" {
		if kept, err = keptio.ReadIVF(ctx, blobio.Join(out, prev.Lake.IVF)); err != nil {
			progress.Notef("--incremental: the partitioning the last full run kept is not read (%v): partitioning again", err)
			kept = nil
		} else {
			lake.IVF = prev.Lake.IVF
		}
	}
	sum, err = updateDir(ctx, s, cal, fit, kept, prev, base, lake, newPath)
	return sum, true, nil, err
}

// lists reports whether sum lists name as one of its shards.
func lists(sum *resultio.Summary, name string) bool {
	for _, sh := range sum.Shards {
		if sh.Output == name {
			return true
		}
	}
	return false
}

// updateDir is runDirIncremental once something changed: it reads every
// input row, relabels the new ones (updateIncremental) in the partitioning
// the full run kept (kept; nil: exact mode, or partitioned again), writes
// the output shards that change and summary.json (summed from every shard's
// report, kept in memory) into a temporary directory, and commits them as a
// plain run does (io/resultio's protocol).
func updateDir(ctx context.Context, sess *job.Session, cal resultio.Calibration, fit *keptio.Fit, kept *keptio.IVF, prev *resultio.Summary, sum *resultio.Summary, lake *resultio.LakeSummary, newPath map[string]bool) (*resultio.Summary, error) {
	plan, fsys, t0 := sess.Job, sess.FS, sess.Start
	out := plan.Output()
	tmp, rmTmp, err := sess.Temp(ctx)
	if err != nil {
		return nil, err
	}
	defer rmTmp.Run()
	var newRows int64
	for _, s := range plan.Shards {
		if newPath[s.Path] {
			newRows += max(s.Rows, 0)
		}
	}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: newRows, Shards: lake.NewFiles + lake.ChangedFiles, Rounds: plan.Rounds()})
	progress.StageStarted("reading")
	// The stored posteriors of the unchanged files' rows, read while the
	// input is (a small update reads every input file and every output
	// file), on every core: a scheduled run's input is often hundreds of
	// small files.
	outName := map[string]string{}
	for _, f := range lake.Manifest {
		outName[f.Path] = f.Output
	}
	var old []string
	for _, s := range plan.Shards {
		if !newPath[s.Path] {
			old = append(old, s.Path)
		}
	}
	posts := make([]*resultio.Posteriors, len(old))
	postsDone := make(chan error, 1)
	postsCtx, stopPosts := context.WithCancel(ctx)
	defer stopPosts()
	go func() {
		postsDone <- pool.EachIndexErr(len(old), 0, func(i int) error {
			p, err := resultio.ReadPosteriors(postsCtx, blobio.Join(out, outName[old[i]]), plan.ClassNames, nil)
			if err != nil {
				return fmt.Errorf("relabel: --incremental: the stored posteriors of %s: %w", old[i], err)
			}
			posts[i] = p
			return nil
		})
	}()
	rows, err := shardio.ReadAll(ctx, plan.Shards, plan.Read)
	if err != nil {
		stopPosts() // the input's error is the one to report
	}
	if perr := <-postsDone; err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	d := flatten(rows, func(p string) bool { return newPath[p] })
	lake.ScannedFiles, lake.ScannedRows = len(plan.Shards), int64(d.n)
	postOf := map[string]*resultio.Posteriors{}
	for i, path := range old {
		postOf[path] = posts[i]
	}
	u, err := storedUpdate(d, posts, kept, fit, plan, cal, plan.Input(), t0, lake)
	if err != nil {
		return nil, err
	}
	res, tPlan, tRun := u.res, u.tPlan, u.tRun

	progress.StageStarted("committing")
	prevReport := map[string]resultio.ShardReport{}
	for _, sh := range prev.Shards {
		prevReport[sh.Output] = sh
	}
	meta := schemas.Metadata(job.Version, plan.Seed(), sum.Options, plan.ClassNames)
	carryFit(prev.Options, sum.Options)
	so := resultio.ShardOptions{Format: plan.Format(), Meta: meta, LabelKind: plan.LabelKind, ClassNames: plan.ClassNames, IDKind: plan.IDKind}
	// Each planned file is written on its own (a report, or a shard
	// from its rows): on every core, since a small update rewrites the
	// output of every input file holding a re-scored row.
	planned := planDirFiles(plan.Shards, d, postOf, u, plan.Format())
	wrote := make([]bool, len(planned))
	// The reports stay in memory for the summary: a small update's commit
	// would otherwise create, read back and remove a file for each.
	reports := make([]resultio.ShardReport, len(planned))
	if err := pool.EachIndexErr(len(planned), 0, func(i int) error {
		f := planned[i]
		if f.reportOnly {
			rep, ok := prevReport[f.name]
			if !ok {
				return fmt.Errorf("relabel: %s: summary.json has no report of shard %s", out, f.name)
			}
			// summary.json keeps no per-shard transition sums: they are
			// summed again from the stored posteriors.
			rep.Trans = storedTrans(f.stored, f.rows, d, plan.C)
			rep.Temperature = cal.Temperature
			reports[i] = rep
			return nil
		}
		c := cleanedOf(d, f.rows, u, cal)
		c.Shard = f.input
		rep := resultio.Report(f.input, f.name, []*schemas.Cleaned{c}, plan.C)
		rep.Temperature = cal.Temperature
		if err := resultio.WriteShard(ctx, tmp, f.name, []*schemas.Cleaned{c}, nil, so); err != nil {
			return err
		}
		reports[i] = rep
		wrote[i] = true
		return nil
	}); err != nil {
		return nil, err
	}
	var files []string
	byName := make(map[string]resultio.ShardReport, len(planned))
	for i, f := range planned {
		byName[f.name] = reports[i]
		if !wrote[i] {
			continue
		}
		if f.stored != nil {
			lake.RewrittenFiles++
		}
		files = append(files, f.name)
	}
	full, err := sess.SummariseReports(ctx, tmp, byName)
	if err != nil {
		return nil, err
	}
	full.Neighbours, full.Lake, full.Options = sum.Neighbours, lake, sum.Options
	full.Timings = map[string]float64{"plan": tPlan.Seconds(), "pipeline": tRun.Seconds(), "total": time.Since(t0).Seconds()}
	for k, v := range res.timings {
		full.Timings[k] = v
	}
	if err := sess.Publish(ctx, tmp, files, full); err != nil {
		return nil, err
	}
	rmTmp.Run()
	for _, name := range lake.RemovedOutputs {
		fsys.Remove(ctx, blobio.Join(out, name))
	}
	lake.AddedFiles, lake.RemovedFiles = len(files), len(lake.RemovedOutputs)
	return full, nil
}
