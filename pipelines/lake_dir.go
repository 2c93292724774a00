package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/stages"
)

// Directory lakes: --incremental with a glob --input and an --output
// directory. The output directory's summary.json records, in its "lake"
// section, a manifest of the input files the output covers (path, size,
// content version: blobio.Fingerprint) and which output shard holds each
// file's rows; the state an incremental run needs, the old rows'
// posteriors, is in those shards. Keeping the manifest inside summary.json,
// which the commit renames into place last (commit.go), makes it exactly as
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
//     that drift, as it resets the one-hop spread of incremental.go;
//   - unchanged: its rows keep their stored posteriors, but for those
//     re-scored because a new row entered their K nearest neighbours
//     (incremental.go); its output shard is rewritten only then.
//
// The update itself is incremental.go's (updateIncremental), the same as
// for tables. The first run over an output directory holding no manifest is
// a full run through the pipeline that also records the manifest.

// ManifestFile is one input file an output directory covers.
type ManifestFile struct {
	Path string `json:"path"`
	blobio.Fingerprint
	// Output is the name of the output shard holding the file's rows.
	Output string `json:"output"`
	Rows   int64  `json:"rows"`
}

// coverage fingerprints the plan's input files, before they are read: a
// file rewritten while the run reads it is then seen as changed by the next
// run, never as covered.
func coverage(ctx context.Context, plan *Plan) ([]ManifestFile, error) {
	m := make([]ManifestFile, len(plan.Shards))
	for i, s := range plan.Shards {
		fp, err := blobio.FingerprintOf(ctx, s.Path)
		if err != nil {
			return nil, fmt.Errorf("relabel: --incremental: %w", err)
		}
		m[i] = ManifestFile{Path: s.Path, Fingerprint: fp, Output: resultio.OutputName(s.Path, plan.Options.Format), Rows: max(s.Rows, 0)}
	}
	return m, nil
}

// fullLake is the lake section of a full run's summary under --incremental.
func fullLake(plan *Plan, manifest []ManifestFile) *LakeSummary {
	return &LakeSummary{
		NewFiles: len(plan.Shards), NewRows: plan.Rows, ScannedFiles: len(plan.Shards), ScannedRows: plan.Rows,
		Manifest: manifest,
	}
}

// resumeCommit finishes a commit that a killed run left half done: its
// journal is in out and its temporary directory still holds the files it had
// not yet renamed (commit writes the journal only once every file, summary
// last, is in place in the temporary directory, so rolling forward publishes
// exactly what that run would have). Without it, a kill between two renames
// would leave shards of two runs and no summary, and the next incremental
// run would have no state to start from. Reports whether it finished one.
func resumeCommit(ctx context.Context, fsys blobio.FS, out string) (bool, error) {
	jpath := blobio.Join(out, journalName)
	ok, err := fsys.Exists(ctx, jpath)
	if err != nil || !ok {
		return false, err
	}
	var j journal
	if err := readJSON(ctx, fsys, jpath, &j); err != nil {
		return false, fmt.Errorf("relabel: reading %s: %w", jpath, err)
	}
	tmp := blobio.Join(out, tmpPrefix+j.Token)
	if ok, err := fsys.Exists(ctx, blobio.Join(tmp, summaryName)); err != nil {
		return false, err
	} else if !ok {
		// Its summary was published (or the directory is gone): nothing
		// to finish but the journal's removal.
		return false, fsys.Remove(ctx, jpath)
	}
	for _, name := range j.Files {
		src := blobio.Join(tmp, name)
		if ok, err := fsys.Exists(ctx, src); err != nil {
			return false, err
		} else if ok {
			if err := fsys.Rename(ctx, src, blobio.Join(out, name)); err != nil {
				return false, fmt.Errorf("relabel: finishing the interrupted commit into %s: %w", out, err)
			}
		}
	}
	return true, fsys.Remove(ctx, jpath)
}

// runDirIncremental is Run's path with --incremental and an output
// directory, called with the output's lock held. done is false when the
// directory holds no finished output with a manifest: Run then makes a full
// run, recording the manifest.
func runDirIncremental(ctx context.Context, fsys blobio.FS, plan *Plan, tok string, t0 time.Time) (sum *Summary, done bool, err error) {
	cfg := plan.Options
	out := cfg.Output
	if plan.Crowd != nil {
		return nil, true, &options.Error{Flag: "incremental", Err: errors.New("with annotators: incremental runs relabel shards of items, not annotations")}
	}
	if resumed, err := resumeCommit(ctx, fsys, out); err != nil {
		return nil, true, err
	} else if resumed {
		progress.Notef("--incremental: finished the commit an interrupted run left in %s", out)
	}
	removeStaleTemps(ctx, fsys, out) // the lock is held: no live run owns them
	var prev Summary
	if err := readJSON(ctx, fsys, blobio.Join(out, summaryName), &prev); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, true, fmt.Errorf("relabel: reading %s: %w", blobio.Join(out, summaryName), err)
		}
		progress.Notef("--incremental: %s holds no finished output yet: this first run is a full one", out)
		return nil, false, nil
	}
	if prev.Lake == nil || prev.Lake.Manifest == nil {
		progress.Notef("--incremental: %s was written without --incremental (its summary.json has no manifest): this run is a full one", out)
		return nil, false, nil
	}
	// Outputs of gone files that a killed run's commit left behind.
	for _, name := range prev.Lake.RemovedOutputs {
		if !prev.lists(name) {
			fsys.Remove(ctx, blobio.Join(out, name))
		}
	}
	opts := plan.Recorded()
	if err := sameOptions(prev.Options, opts); err != nil {
		return nil, true, err
	}
	cal, err := plan.incrementalCalibration(prev.Options, opts)
	if err != nil {
		return nil, true, err
	}
	manifest, err := coverage(ctx, plan)
	if err != nil {
		return nil, true, err
	}
	covered := map[string]ManifestFile{}
	for _, f := range prev.Lake.Manifest {
		covered[f.Path] = f
	}
	lake := &LakeSummary{Incremental: true, Manifest: manifest}
	newPath := map[string]bool{}
	present := map[string]bool{}
	for _, f := range manifest {
		present[f.Path] = true
		old, ok := covered[f.Path]
		switch {
		case !ok:
			lake.NewFiles++
			newPath[f.Path] = true
		case old.Fingerprint != f.Fingerprint || old.Output != f.Output:
			// (Another output name: --format changed; the file is
			// written again in the new one, the old shard removed.)
			lake.ChangedFiles++
			newPath[f.Path] = true
		}
	}
	writes := map[string]bool{}
	for _, f := range manifest {
		writes[f.Output] = true
	}
	for _, f := range prev.Lake.Manifest {
		if !present[f.Path] {
			lake.GoneFiles = append(lake.GoneFiles, f.Path)
		}
		if !writes[f.Output] {
			lake.RemovedOutputs = append(lake.RemovedOutputs, f.Output)
		}
	}
	base := &Summary{
		Version: Version, Input: cfg.Input, Output: out, Classes: plan.C, ClassNames: plan.ClassNames,
		Neighbours: incrementalMode(&cfg, plan.Rows), Device: plan.Device, Options: opts, Lake: lake,
	}
	if len(newPath) == 0 && len(lake.GoneFiles) == 0 {
		lake.NothingNew = true
		lake.Manifest = nil
		progress.Notef("--incremental: no input file of %s is new, changed or gone since %s was written; nothing changed", cfg.Input, out)
		base.Timings = map[string]float64{"total": time.Since(t0).Seconds()}
		return base, true, nil
	}
	sum, err = updateDir(ctx, fsys, plan, cal, &prev, base, newPath, tok, t0)
	return sum, true, err
}

// lists reports whether the summary lists name as one of its shards.
func (s *Summary) lists(name string) bool {
	for _, sh := range s.Shards {
		if sh.Output == name {
			return true
		}
	}
	return false
}

// updateDir is runDirIncremental once something changed: it reads every
// input row, relabels the new ones (updateIncremental), writes the output
// shards that change, the other shards' reports and summary.json into a
// temporary directory, and commits them as a plain run does (commit.go).
func updateDir(ctx context.Context, fsys blobio.FS, plan *Plan, cal stages.Calibration, prev, sum *Summary, newPath map[string]bool, tok string, t0 time.Time) (*Summary, error) {
	cfg := plan.Options
	out, lake := cfg.Output, sum.Lake
	tmp := blobio.Join(out, tmpPrefix+tok)
	if err := fsys.MkdirAll(ctx, tmp); err != nil {
		return nil, fmt.Errorf("relabel: creating %s: %w", tmp, err)
	}
	// Removed on every way out, a second signal's included (internal/atexit),
	// as run.go removes a plain run's: after the commit it is empty.
	rmTmp := atexit.Push(func() { removeAll(context.WithoutCancel(ctx), fsys, tmp, plan) })
	defer rmTmp.Run()
	var newRows int64
	for _, s := range plan.Shards {
		if newPath[s.Path] {
			newRows += max(s.Rows, 0)
		}
	}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: newRows, Shards: lake.NewFiles + lake.ChangedFiles, Rounds: cfg.Rounds})
	progress.StageStarted("reading")
	rows, err := shardio.ReadAll(ctx, plan.Shards, plan.Read)
	if err != nil {
		return nil, err
	}
	d := flatten(rows, func(p string) bool { return newPath[p] })
	lake.ScannedFiles, lake.ScannedRows = len(plan.Shards), int64(d.n)
	// The stored posteriors of the unchanged files' rows.
	outName := map[string]string{}
	for _, f := range lake.Manifest {
		outName[f.Path] = f.Output
	}
	var posts []*resultio.Posteriors
	postOf := map[string]*resultio.Posteriors{}
	for _, s := range plan.Shards {
		if newPath[s.Path] {
			continue
		}
		p, err := resultio.ReadPosteriors(ctx, blobio.Join(out, outName[s.Path]), plan.ClassNames, nil)
		if err != nil {
			return nil, fmt.Errorf("relabel: --incremental: the stored posteriors of %s: %w", s.Path, err)
		}
		posts = append(posts, p)
		postOf[s.Path] = p
	}
	u, err := storedUpdate(d, posts, nil, plan, cal, cfg.Device, cfg.Input, t0, lake)
	if err != nil {
		return nil, err
	}
	res, tPlan, tRun := u.res, u.tPlan, u.tRun

	progress.StageStarted("committing")
	prevReport := map[string]resultio.ShardReport{}
	for _, sh := range prev.Shards {
		prevReport[sh.Output] = sh
	}
	meta := schemas.Metadata(Version, cfg.Seed, sum.Options, plan.ClassNames)
	so := resultio.ShardOptions{Format: cfg.Format, Meta: meta, LabelKind: plan.LabelKind, ClassNames: plan.ClassNames, IDKind: plan.IDKind}
	shardRows := make([][]int, len(d.shards))
	for i := 0; i < d.n; i++ {
		shardRows[d.shard[i]] = append(shardRows[d.shard[i]], i)
	}
	shardIdx := map[string]int{}
	for s, p := range d.shards {
		shardIdx[p] = s
	}
	var files []string
	for _, s := range plan.Shards {
		name := resultio.OutputName(s.Path, cfg.Format)
		var rs []int
		switch p := postOf[s.Path]; {
		case p == nil: // new or changed: every row, in the file's order
			rs = shardRows[shardIdx[s.Path]]
		default: // unchanged: rewritten, in its stored order, if touched
			var touched bool
			rs, touched = u.storedRows(p)
			if !touched {
				rep, ok := prevReport[name]
				if !ok {
					return nil, fmt.Errorf("relabel: %s: summary.json has no report of shard %s", out, name)
				}
				// summary.json keeps no per-shard transition sums: they are
				// summed again from the stored posteriors.
				rep.Trans = storedTrans(p, rs, d, plan.C)
				rep.Temperature = cal.Temperature
				b, _ := json.Marshal(rep)
				if err := blobio.WriteFile(ctx, fsys, blobio.Join(tmp, name+resultio.ReportSuffix), b); err != nil {
					return nil, err
				}
				continue
			}
			lake.RewrittenFiles++
		}
		c := cleanedOf(d, rs, u, cal)
		c.Shard = s.Path
		rep := resultio.Report(s.Path, name, []*schemas.Cleaned{c}, plan.C)
		rep.Temperature = cal.Temperature
		if err := resultio.WriteShard(ctx, tmp, name, []*schemas.Cleaned{c}, rep, so); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	full, err := summarise(ctx, fsys, tmp, plan, nil)
	if err != nil {
		return nil, err
	}
	full.Neighbours, full.Lake, full.Options = sum.Neighbours, lake, sum.Options
	full.Timings = map[string]float64{"plan": tPlan.Seconds(), "pipeline": tRun.Seconds(), "total": time.Since(t0).Seconds()}
	for k, v := range res.timings {
		full.Timings[k] = v
	}
	b, err := json.MarshalIndent(full, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := blobio.WriteFile(ctx, fsys, blobio.Join(tmp, summaryName), b); err != nil {
		return nil, err
	}
	if err := commit(ctx, fsys, tmp, out, files, tok); err != nil {
		return nil, err
	}
	rmTmp.Run()
	for _, name := range lake.RemovedOutputs {
		fsys.Remove(ctx, blobio.Join(out, name))
	}
	lake.AddedFiles, lake.RemovedFiles = len(files), len(lake.RemovedOutputs)
	return full, nil
}

// storedTrans is a shard report's Trans from its stored posteriors p (rows
// rs of d, in p's order).
func storedTrans(p *resultio.Posteriors, rs []int, d *incData, c int) []float64 {
	if c > resultio.MaxDenseClasses {
		return nil
	}
	t := make([]float64, c*c)
	for j, i := range rs {
		given := schemas.GivenLabel(d.labelsOf(i))
		if given < 0 {
			continue
		}
		for e := p.Off[j]; e < p.Off[j+1]; e++ {
			t[int(p.Class[e])*c+int(given)] += float64(p.Prob[e])
		}
	}
	return t
}
