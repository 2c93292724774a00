package lake

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
)

// TestIncrementalCalibration: an incremental run with --temperature auto
// keeps the temperature the stored posteriors were made with (recorded by
// the last run) and records it for the next; one whose last run recorded
// none is refused naming --incremental; a fixed temperature is used as
// given.
func TestIncrementalCalibration(t *testing.T) {
	p := job.Unscanned(options.Defaults(), 0)
	opts := map[string]string{}
	cal, err := calibration(p, map[string]string{resultio.MetaCalibratedTemperature: "0.3125"}, opts)
	if err != nil || cal.Auto || cal.Temperature != 0.3125 {
		t.Fatalf("kept calibration %+v (%v), want temperature 0.3125", cal, err)
	}
	if opts[resultio.MetaCalibratedTemperature] != "0.3125" {
		t.Errorf("recorded %q, want 0.3125", opts[resultio.MetaCalibratedTemperature])
	}
	for _, last := range []map[string]string{{}, {resultio.MetaCalibratedTemperature: "x"}, {resultio.MetaCalibratedTemperature: "0"}} {
		_, err := calibration(p, last, map[string]string{})
		var oe *options.Error
		if !errors.As(err, &oe) || oe.Flag != "incremental" {
			t.Errorf("last %v: error %v, want one naming --incremental", last, err)
		}
	}
	fixed := options.Defaults()
	fixed.Temperature = options.Some(0.4)
	cal, err = calibration(job.Unscanned(fixed, 0), map[string]string{}, opts)
	if err != nil || cal.Temperature != 0.4 || opts[resultio.MetaCalibratedTemperature] != "0.4" {
		t.Errorf("fixed temperature: %+v (%v), recorded %q", cal, err, opts[resultio.MetaCalibratedTemperature])
	}
}

// TestPlanDir: the plan of a directory lake's run, from the manifest the
// output covers and the files matched now, with no rows read: a file not
// covered is new, one whose fingerprint or output name differs is changed,
// one no longer matched is gone (its output shard removed unless a file
// matched now writes the same name), and an unchanged one is neither.
func TestPlanDir(t *testing.T) {
	file := func(path, version, output string) resultio.ManifestFile {
		return resultio.ManifestFile{Path: path, Fingerprint: blobio.Fingerprint{Size: 10, Version: version}, Output: output, Rows: 5}
	}
	prev := []resultio.ManifestFile{
		file("in/a.parquet", "1", "a.arrow"), // unchanged
		file("in/b.parquet", "1", "b.arrow"), // rewritten
		file("in/c.parquet", "1", "c.arrow"), // gone
		file("in/d.parquet", "1", "d.arrow"), // --format changed its output name
		file("in/x.parquet", "1", "e.arrow"), // gone, but e.parquet writes e.arrow
	}
	now := []resultio.ManifestFile{
		file("in/a.parquet", "1", "a.arrow"),
		file("in/b.parquet", "2", "b.arrow"),
		file("in/d.parquet", "1", "d.parquet"),
		file("in/e.parquet", "1", "e.arrow"),
	}
	lk, newPath := planDir(prev, now)
	if lk.NewFiles != 1 || lk.ChangedFiles != 2 || !lk.Incremental {
		t.Errorf("new %d, changed %d (incremental %t); want 1 new (e), 2 changed (b, d)", lk.NewFiles, lk.ChangedFiles, lk.Incremental)
	}
	wantNew := map[string]bool{"in/b.parquet": true, "in/d.parquet": true, "in/e.parquet": true}
	if !maps.Equal(newPath, wantNew) {
		t.Errorf("new paths %v, want %v", newPath, wantNew)
	}
	if want := []string{"in/c.parquet", "in/x.parquet"}; !slices.Equal(lk.GoneFiles, want) {
		t.Errorf("gone %v, want %v", lk.GoneFiles, want)
	}
	if want := []string{"c.arrow", "d.arrow"}; !slices.Equal(lk.RemovedOutputs, want) {
		t.Errorf("removed outputs %v, want %v", lk.RemovedOutputs, want)
	}
	if len(lk.Manifest) != len(now) {
		t.Errorf("manifest of %d files, want the %d matched now", len(lk.Manifest), len(now))
	}
	if lk, newPath := planDir(now, now); len(newPath) != 0 || lk.GoneFiles != nil || lk.RemovedOutputs != nil || lk.NewFiles+lk.ChangedFiles != 0 {
		t.Errorf("the same files again: %+v, new %v; want nothing to do", lk, newPath)
	}
}

// TestOptionsChanged: an incremental run whose compared options differ
// from the stored run's is a full one, naming the option and both values;
// the same options are not.
func TestOptionsChanged(t *testing.T) {
	p := job.Unscanned(options.Defaults(), 3)
	last := p.Recorded()
	if why := optionsChanged(last, p.Recorded()); why != "" {
		t.Fatalf("the same options: %q", why)
	}
	other := options.Defaults()
	other.K++
	if why := optionsChanged(last, job.Unscanned(other, 3).Recorded()); !strings.Contains(why, "--k 11 (the last run used 10)") || !strings.Contains(why, "relabels every row again") {
		t.Errorf("another --k: %q, want a full run naming k and both values", why)
	}
}

// TestPlanTableRun: an incremental table run's plan, with no catalog: no
// appended file is nothing to do (and covers the last run's snapshot); an
// input that moved while planned is refused; otherwise the appended files' rows are new and the last
// run's fitted temperature is kept.
func TestPlanTableRun(t *testing.T) {
	p := job.Unscanned(options.Defaults(), 3)
	last := icebergio.Run{InputTable: "ns.in", InputSnapshotID: 7, Options: p.Recorded()}
	last.Options[resultio.MetaCalibratedTemperature] = "0.5"
	full := &icebergio.InputPlan{Table: "ns.in", SnapshotID: 9}
	app := &icebergio.InputPlan{Table: "ns.in", SnapshotID: 9, Tasks: []icebergio.Task{{Path: "file:///w/a.parquet"}, {Path: "/w/b.parquet"}}}

	tp, err := planTableRun(p, full, &icebergio.InputPlan{Table: "ns.in", SnapshotID: 9}, last, "ns.out", p.Recorded())
	if err != nil || !tp.lake.NothingNew || tp.lake.InputSnapshot != 7 || tp.lake.FromSnapshot != 7 {
		t.Errorf("nothing appended: %+v (%v), want nothing new covering snapshot 7", tp, err)
	}
	if _, err := planTableRun(p, &icebergio.InputPlan{Table: "ns.in", SnapshotID: 10}, app, last, "ns.out", p.Recorded()); err == nil || !strings.Contains(err.Error(), "moved from snapshot 10 to 9") {
		t.Errorf("moved input: %v, want refused", err)
	}
	opts := p.Recorded()
	tp, err = planTableRun(p, full, app, last, "ns.out", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"/w/a.parquet": true, "/w/b.parquet": true}
	if !maps.Equal(tp.newPath, want) || tp.lake.NothingNew || tp.lake.InputSnapshot != 9 || tp.lake.OutputTable != "ns.out" {
		t.Errorf("appended files: new %v, lake %+v; want %v covering snapshot 9", tp.newPath, tp.lake, want)
	}
	if tp.cal.Temperature != 0.5 || opts[resultio.MetaCalibratedTemperature] != "0.5" {
		t.Errorf("calibration %+v, recorded %q; want the last run's 0.5 kept", tp.cal, opts[resultio.MetaCalibratedTemperature])
	}
}

// TestPlanTableFiles: the files an incremental table run writes, chosen
// from the rows the update touched with no I/O: the new rows' file, and
// each stored file holding a touched row rewritten whole, split past
// maxRewriteRows, with only the touched rows counted; an untouched stored
// file is neither written nor removed.
func TestPlanTableFiles(t *testing.T) {
	defer func(n int) { maxRewriteRows = n }(maxRewriteRows)
	maxRewriteRows = 2
	d := &incData{n: 7, keys: []int64{10, 11, 12, 13, 14, 15, 16},
		shards: []string{"/in/old.parquet", "/in/new.parquet"},
		shard:  []int32{0, 0, 0, 0, 0, 1, 1},
		isNew:  []bool{false, false, false, false, false, true, true}}
	u := &update{keyRow: map[int64]int{10: 0, 11: 1, 12: 2, 13: 3, 14: 4, 15: 5, 16: 6},
		res: &incResult{pos: map[int]int{5: 0, 6: 1, 1: 2}}} // row 1 (id 11) re-scored
	posts := []*resultio.Posteriors{
		{IDs: []int64{10, 11, 12}, Off: make([]int32, 4)},
		{IDs: []int64{13, 14}, Off: make([]int32, 3)},
	}
	outFiles := []string{"file:///w/data/a.parquet", "/w/data/b.parquet"}
	jobs, remove := planTableFiles(d, posts, outFiles, u, 3)
	type want struct {
		name    string
		rows    []int
		counted []int
	}
	wants := []want{
		{resultio.OutputName("/in/new.parquet", shardio.Parquet), []int{5, 6}, []int{5, 6}},
		{"a-00000.parquet", []int{0, 1}, []int{1}},
		{"a-00001.parquet", []int{2}, nil},
	}
	if len(jobs) != len(wants) {
		t.Fatalf("%d files planned, want %d", len(jobs), len(wants))
	}
	for k, w := range wants {
		f := jobs[k]
		var counted []int
		for _, i := range f.rows {
			if f.count(i) {
				counted = append(counted, i)
			}
		}
		if f.name != w.name || !slices.Equal(f.rows, w.rows) || !slices.Equal(counted, w.counted) || len(f.changedFrom) != 3 {
			t.Errorf("file %d: %s rows %v counted %v, want %s rows %v counted %v", k, f.name, f.rows, counted, w.name, w.rows, w.counted)
		}
	}
	if !slices.Equal(remove, outFiles[:1]) {
		t.Errorf("removed %v, want %v (only the file holding a touched row)", remove, outFiles[:1])
	}
}

// TestPlanDirFiles: what a directory lake's incremental run writes per
// input file: a new or changed file every row in its order, an unchanged
// one in its stored order, rewritten when a row of it was touched, else
// its report only.
func TestPlanDirFiles(t *testing.T) {
	d := &incData{n: 7, keys: []int64{10, 11, 12, 13, 14, 15, 16},
		shards: []string{"/in/old.parquet", "/in/new.parquet", "/in/other.parquet"},
		shard:  []int32{0, 0, 0, 1, 1, 2, 2}}
	u := &update{keyRow: map[int64]int{10: 0, 11: 1, 12: 2, 13: 3, 14: 4, 15: 5, 16: 6},
		res: &incResult{pos: map[int]int{3: 0, 4: 1, 0: 2}}} // row 0 (id 10) re-scored
	old := &resultio.Posteriors{IDs: []int64{12, 10, 11}, Off: make([]int32, 4)}
	other := &resultio.Posteriors{IDs: []int64{15, 16}, Off: make([]int32, 3)}
	shards := []shardio.Shard{{Path: "/in/old.parquet"}, {Path: "/in/new.parquet"}, {Path: "/in/other.parquet"}}
	files := planDirFiles(shards, d, map[string]*resultio.Posteriors{"/in/old.parquet": old, "/in/other.parquet": other}, u, shardio.Parquet)
	wants := []dirFile{
		{input: "/in/old.parquet", rows: []int{2, 0, 1}, stored: old},
		{input: "/in/new.parquet", rows: []int{3, 4}},
		{input: "/in/other.parquet", rows: []int{5, 6}, stored: other, reportOnly: true},
	}
	if len(files) != len(wants) {
		t.Fatalf("%d files planned, want %d", len(files), len(wants))
	}
	for k, w := range wants {
		f := files[k]
		if f.input != w.input || f.name != resultio.OutputName(w.input, shardio.Parquet) || !slices.Equal(f.rows, w.rows) || f.stored != w.stored || f.reportOnly != w.reportOnly {
			t.Errorf("file %d: %+v, want %+v", k, f, w)
		}
	}
}
