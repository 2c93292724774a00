package lake

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
)

// Planning an incremental run: what it relabels, rewrites and removes,
// and whether it may run at all, computed from the stored state (the
// previous manifest, the last run's options) and the plan without reading
// rows or writing anything, the way iceberg-go's table compaction plans
// (PlanCompaction) before it executes. The execution (dir.go, table.go)
// reads the rows, runs the update (update.go) and writes (write.go) what
// the plan says. Which files an update writes depends on which rows it
// touched: planTableFiles and planDirFiles plan that second step, again
// without I/O, between the update and the writes.

// planDir compares a directory lake's input files now with the manifest
// the output covers (prev), by path:
//   - new (not in prev): its rows are new rows;
//   - changed (fingerprint or output name differs): its rows are all new;
//   - gone (in prev, not now): its rows leave the output;
//   - unchanged: its rows keep their stored posteriors.
//
// It returns the run's lake section (the counts, the gone files, the
// output shards to remove, now as the manifest) and the paths whose rows
// are new.
func planDir(prev, now []resultio.ManifestFile) (*resultio.LakeSummary, map[string]bool) {
	covered := map[string]resultio.ManifestFile{}
	for _, f := range prev {
		covered[f.Path] = f
	}
	lake := &resultio.LakeSummary{Incremental: true, Manifest: now}
	newPath := map[string]bool{}
	present := map[string]bool{}
	writes := map[string]bool{}
	for _, f := range now {
		present[f.Path] = true
		writes[f.Output] = true
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
	for _, f := range prev {
		if !present[f.Path] {
			lake.GoneFiles = append(lake.GoneFiles, f.Path)
		}
		if !writes[f.Output] {
			lake.RemovedOutputs = append(lake.RemovedOutputs, f.Output)
		}
	}
	return lake, newPath
}

// calibration is an incremental run's calibration: the
// temperature the stored posteriors were made with, which the files it
// rewrites keep too, so that every file of the output agrees. With
// --temperature auto that is the temperature the table's full run fitted
// (last, the last run's options, records it), not one refitted to today's
// rows; a full run refits it. It also records the temperature in opts (the
// run's summary options) for the next run.
func calibration(p *job.Job, last, opts map[string]string) (resultio.Calibration, error) {
	cal := p.Calibration()
	if cal.Auto {
		s, ok := last[resultio.MetaCalibratedTemperature]
		t, err := strconv.ParseFloat(s, 64)
		if !ok || err != nil || !(t > 0) {
			return cal, job.FlagError("incremental", fmt.Errorf("the stored posteriors record no fitted temperature (%s %q): run without --incremental to relabel everything", resultio.MetaCalibratedTemperature, s))
		}
		cal.Temperature, cal.Auto = t, false
	}
	opts[resultio.MetaCalibratedTemperature] = strconv.FormatFloat(cal.Temperature, 'g', -1, 64)
	return cal, nil
}

// optionsChanged says why an incremental run is a full one when its
// compared options differ from those of the run that made the stored
// posteriors ("" when they are the same): rows relabelled under the new
// settings must not sit beside rows relabelled under the old ones. Which
// options are compared is the flag table's (job.Changed): the
// neighbour mode, device and ivf settings may differ (an incremental run
// searches exactly). A changed default (a newer relabel's) reads the same
// way as a changed flag, so a scheduled run goes on, once in full.
func optionsChanged(last, now map[string]string) string {
	if diffs := job.Changed(last, now); len(diffs) > 0 {
		return fmt.Sprintf("with other options than the stored posteriors were made with (%s): this run relabels every row again", strings.Join(diffs, ", "))
	}
	return ""
}

// tablePlan is what an incremental table run will do: its lake section
// (what it covers), the appended files whose rows are new, and the
// calibration it keeps.
type tablePlan struct {
	lake    *resultio.LakeSummary
	newPath map[string]bool
	cal     resultio.Calibration
}

// planTableRun plans an incremental table run, with no side effects, from
// the input table's snapshot now (full), the files appended since the
// snapshot the output covers (app), and the output's last run: nothing to
// do (lake.NothingNew) when nothing was appended; refused when the input
// moved while the run was planned, or the options (opts, the run's
// recorded ones, which get the kept temperature) differ from the last
// run's.
func planTableRun(plan *job.Job, full, app *icebergio.InputPlan, last icebergio.Run, output string, opts map[string]string) (*tablePlan, error) {
	lake := &resultio.LakeSummary{InputTable: full.Table, OutputTable: output, InputSnapshot: app.SnapshotID, FromSnapshot: last.InputSnapshotID, Incremental: true}
	tp := &tablePlan{lake: lake, newPath: map[string]bool{}}
	if len(app.Tasks) == 0 {
		lake.NothingNew = true
		lake.InputSnapshot = last.InputSnapshotID
		return tp, nil
	}
	if app.SnapshotID != full.SnapshotID {
		return nil, fmt.Errorf("relabel: input table %s moved from snapshot %d to %d while the run was planned; nothing committed, rerun", full.Table, full.SnapshotID, app.SnapshotID)
	}
	var err error
	if tp.cal, err = calibration(plan, last.Options, opts); err != nil {
		return nil, err
	}
	for _, t := range app.Tasks {
		tp.newPath[t.ReaderPath()] = true
	}
	return tp, nil
}

// planTableFiles chooses the files an incremental table run writes, with
// no side effects: one per new input file (its rows), and every stored
// output file (outFiles, posts its posteriors) holding a row the update
// touched, rewritten whole, as files of at most maxRewriteRows rows.
// remove are the stored files the rewritten ones replace.
func planTableFiles(d *incData, posts []*resultio.Posteriors, outFiles []string, u *update, c int) (jobs []*outFile, remove []string) {
	add := func(name string, rs []int, count func(int) bool) {
		jobs = append(jobs, &outFile{name: name, rows: rs, count: count, changedFrom: make([]int64, c), changedTo: make([]int64, c)})
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
	rescored := func(i int) bool { _, ok := u.res.pos[i]; return ok }
	for f, p := range posts {
		rs, touched := u.storedRows(p)
		if !touched {
			continue
		}
		remove = append(remove, outFiles[f])
		name := path.Base(strings.ReplaceAll(icebergio.Task{Path: outFiles[f]}.ReaderPath(), "\\", "/"))
		if len(rs) <= maxRewriteRows {
			add(name, rs, rescored)
			continue
		}
		stem := strings.TrimSuffix(name, path.Ext(name))
		for part, lo := 0, 0; lo < len(rs); part, lo = part+1, lo+maxRewriteRows {
			add(fmt.Sprintf("%s-%05d%s", stem, part, path.Ext(name)), rs[lo:min(lo+maxRewriteRows, len(rs))], rescored)
		}
	}
	return jobs, remove
}

// planDirFiles chooses, with no side effects, what a directory lake's
// incremental run writes for each input shard: a new or changed file
// (postOf has none) every row, in the file's order; an unchanged one, in its
// stored order, rewritten if the update touched a row of it, else its
// report only.
func planDirFiles(shards []shardio.Shard, d *incData, postOf map[string]*resultio.Posteriors, u *update, format shardio.Format) []dirFile {
	shardRows := make([][]int, len(d.shards))
	for i := 0; i < d.n; i++ {
		shardRows[d.shard[i]] = append(shardRows[d.shard[i]], i)
	}
	shardIdx := map[string]int{}
	for s, p := range d.shards {
		shardIdx[p] = s
	}
	files := make([]dirFile, len(shards))
	for k, s := range shards {
		f := dirFile{input: s.Path, name: resultio.OutputName(s.Path, format), stored: postOf[s.Path]}
		if f.stored == nil {
			f.rows = shardRows[shardIdx[s.Path]]
		} else {
			var touched bool
			f.rows, touched = u.storedRows(f.stored)
			f.reportOnly = !touched
		}
		files[k] = f
	}
	return files
}
