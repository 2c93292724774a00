package lake

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/transforms/stages"
)

// Planning an incremental run: what it relabels, rewrites and removes,
// and whether it may run at all, computed from the stored state (the
// previous manifest, the last run's options) and the plan without reading
// rows or writing anything, the way iceberg-go's table compaction plans
// (PlanCompaction) before it executes. The execution (dir.go, table.go)
// reads the rows, runs the update (update.go) and writes (write.go) what
// the plan says.

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
func planDir(prev, now []ManifestFile) (*Summary, map[string]bool) {
	covered := map[string]ManifestFile{}
	for _, f := range prev {
		covered[f.Path] = f
	}
	lake := &Summary{Incremental: true, Manifest: now}
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
func calibration(p *pipelines.Plan, last, opts map[string]string) (stages.Calibration, error) {
	cal := p.Calibration()
	if cal.Auto {
		s, ok := last[stages.MetaCalibratedTemperature]
		t, err := strconv.ParseFloat(s, 64)
		if !ok || err != nil || !(t > 0) {
			return cal, &options.Error{Flag: "incremental", Err: fmt.Errorf("the stored posteriors record no fitted temperature (%s %q): run without --incremental to relabel everything", stages.MetaCalibratedTemperature, s)}
		}
		cal.Temperature, cal.Auto = t, false
	}
	opts[stages.MetaCalibratedTemperature] = strconv.FormatFloat(cal.Temperature, 'g', -1, 64)
	return cal, nil
}

// sameOptions refuses an incremental run whose method options differ from
// the run that produced the stored posteriors: mixing the two would give
// rows relabelled under different settings. Which options are compared is
// the flag table's (options.Compared): the neighbour mode, device and ivf
// settings may differ (an incremental run searches exactly).
func sameOptions(last, now map[string]string) error {
	if diffs := options.Changed(last, now); len(diffs) > 0 {
		return &options.Error{Flag: "incremental", Err: fmt.Errorf("with other options than the stored posteriors were made with: %s; run without --incremental to relabel everything", strings.Join(diffs, ", "))}
	}
	return nil
}

// tablePlan is what an incremental table run will do: its lake section
// (what it covers), the appended files whose rows are new, and the
// calibration it keeps.
type tablePlan struct {
	lake    *Summary
	newPath map[string]bool
	cal     stages.Calibration
}

// planTableRun plans an incremental table run, with no side effects, from
// the input table's snapshot now (full), the files appended since the
// snapshot the output covers (app), and the output's last run: nothing to
// do (lake.NothingNew) when nothing was appended; refused when the input
// moved while the run was planned, or the options (opts, the run's
// recorded ones, which get the kept temperature) differ from the last
// run's.
func planTableRun(plan *pipelines.Plan, full, app *icebergio.InputPlan, last icebergio.Run, output string, opts map[string]string) (*tablePlan, error) {
	lake := &Summary{InputTable: full.Table, OutputTable: output, InputSnapshot: app.SnapshotID, FromSnapshot: last.InputSnapshotID, Incremental: true}
	tp := &tablePlan{lake: lake, newPath: map[string]bool{}}
	if len(app.Tasks) == 0 {
		lake.NothingNew = true
		lake.InputSnapshot = last.InputSnapshotID
		return tp, nil
	}
	if app.SnapshotID != full.SnapshotID {
		return nil, fmt.Errorf("relabel: input table %s moved from snapshot %d to %d while the run was planned; nothing committed, rerun", full.Table, full.SnapshotID, app.SnapshotID)
	}
	if err := sameOptions(last.Options, opts); err != nil {
		return nil, err
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
