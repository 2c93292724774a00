package lake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines/ivfstages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// writeDay writes r as the input file path (Parquet).
func writeDay(t testing.TB, path string, r *schemas.Rows) {
	t.Helper()
	fs, err := blobio.For(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll(context.Background(), blobio.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if err := shardio.WriteInput(context.Background(), fs, path, shardio.Parquet, []*schemas.Rows{r}, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// dirConfig is an incremental run over the directory lake in/*.parquet.
func dirConfig(in, out string) options.Options {
	o := options.Defaults()
	o.Rounds = lakeRounds // the defaults' L: see testLake.config
	o.Input, o.Output = blobio.Join(in, "*.parquet"), out
	o.Lake.Incremental = true
	return o
}

// fullRunOf runs cfg (a dirConfig) as one full run over its whole input
// into a fresh directory, the same options and seed but not incremental,
// and returns its clean labels by id.
func fullRunOf(ctx context.Context, t testing.TB, cfg options.Options) map[int64]int32 {
	t.Helper()
	cfg.Lake.Incremental = false
	cfg.Output = filepath.Join(t.TempDir(), "full")
	if _, err := runLake(ctx, cfg, embedded); err != nil {
		t.Fatal(err)
	}
	return cleanByID(t, cfg.Output)
}

// cleanByID reads an output directory whole: clean label by id.
func cleanByID(t testing.TB, dir string) map[int64]int32 {
	t.Helper()
	o, err := resultio.ReadOutput(context.Background(), dir, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int32{}
	for i, id := range o.IDs {
		if _, dup := got[id]; dup {
			t.Fatalf("%s: id %d twice", dir, id)
		}
		got[id] = o.Clean[i]
	}
	return got
}

// snapshotDir returns the bytes of every file directly in dir, by name.
func snapshotDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func readSummary(t testing.TB, dir string) resultio.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s resultio.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLakeDirIncrementalDigits: the digits slice lands in a directory as
// four daily files; an incremental run after each relabels only the new
// file's rows (and the old rows they became neighbours of), leaves the
// output shards it did not need to touch byte for byte as they were, and
// after the last day the output's cleaned accuracy is within
// incrementalOneSeed of one full run. A rerun changes nothing and says so.
func TestLakeDirIncrementalDigits(t *testing.T) {
	ctx := ctxT(t)
	truth := digitsTruth(t)
	in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
	days := digitsDays(t)
	cfg := dirConfig(in, out)
	var total int64
	var temp string // the temperature day 0 fitted, which every day keeps
	for day, r := range days {
		before := map[string][]byte{}
		if day > 0 {
			before = snapshotDir(t, out)
		}
		writeDay(t, filepath.Join(in, fmt.Sprintf("day-%d.parquet", day)), r)
		total += int64(r.Len())
		sum, err := runLake(ctx, cfg, embedded)
		if err != nil {
			t.Fatalf("day %d: %v", day, err)
		}
		lk := sum.Lake
		if lk == nil || lk.NothingNew || lk.Incremental != (day > 0) {
			t.Fatalf("day %d: lake summary %+v, want a (first: full) run", day, lk)
		}
		if lk.NewFiles != 1 || lk.ChangedFiles != 0 || lk.NewRows != int64(r.Len()) || lk.ScannedRows != total || len(lk.Manifest) != day+1 {
			t.Errorf("day %d: new files %d changed %d rows %d scanned %d manifest %d; want 1, 0, %d, %d, %d",
				day, lk.NewFiles, lk.ChangedFiles, lk.NewRows, lk.ScannedRows, len(lk.Manifest), r.Len(), total, day+1)
		}
		if sum.Rows != total {
			t.Errorf("day %d: summary counts %d rows, want %d", day, sum.Rows, total)
		}
		// The shards written are the new day's and the rewritten ones; every
		// other shard is untouched.
		after := snapshotDir(t, out)
		var rewritten int
		for name, b := range before {
			if filepath.Ext(name) != ".arrow" {
				continue
			}
			if !bytes.Equal(after[name], b) {
				rewritten++
			}
		}
		if day > 0 && (rewritten != lk.RewrittenFiles || lk.AddedFiles != 1+rewritten) {
			t.Errorf("day %d: %d old shards differ, summary says %d rewritten, %d written", day, rewritten, lk.RewrittenFiles, lk.AddedFiles)
		}
		if day > 0 && lk.Rescored == 0 && rewritten != 0 {
			t.Errorf("day %d: no row re-scored, yet %d old shards rewritten", day, rewritten)
		}
		got := readSummary(t, out)
		if got.Rows != total || len(got.Shards) != day+1 || len(got.Lake.Manifest) != day+1 {
			t.Errorf("day %d: summary.json has %d rows, %d shards, manifest of %d", day, got.Rows, len(got.Shards), len(got.Lake.Manifest))
		}
		// --temperature auto: day 0 fits the temperature, the incremental
		// days keep it in every shard (their stored posteriors were made
		// with it).
		if day == 0 {
			temp = got.Options["calibrated-temperature"]
		}
		if got.Options["temperature"] != "auto" || temp == "" || got.Options["calibrated-temperature"] != temp {
			t.Errorf("day %d: temperature %q, calibrated %q; want auto, day 0's %q", day, got.Options["temperature"], got.Options["calibrated-temperature"], temp)
		}
		for _, sh := range got.Shards {
			if fmt.Sprint(sh.Temperature) != temp {
				t.Errorf("day %d: shard %s made with temperature %v, want %s", day, sh.Output, sh.Temperature, temp)
			}
		}
		t.Logf("day %d: new %d rescored %d (searched %d), shards rewritten %d, total %.2fs", day, lk.NewRows, lk.Rescored, lk.Searched, rewritten, sum.Timings["total"])
	}
	inc := cleanByID(t, out)

	// Rerun: nothing new, nothing changed.
	before := snapshotDir(t, out)
	sum, err := runLake(ctx, cfg, embedded)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Lake == nil || !sum.Lake.NothingNew {
		t.Errorf("rerun: %+v, want nothing new", sum.Lake)
	}
	if after := snapshotDir(t, out); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("rerun changed the output directory")
	}

	// One full run over the whole directory.
	ai, af := accuracy(t, inc, truth), accuracy(t, fullRunOf(ctx, t, cfg), truth)
	t.Logf("cleaned accuracy: incremental %.4f, full %.4f", ai, af)
	// One seed: a loose bound that catches a broken incremental run; the
	// 0.3 point bar holds for the mean over seeds (TestLakeDirIncrementalAccuracy).
	if math.Abs(ai-af) > incrementalOneSeedGiven {
		t.Errorf("incremental accuracy %.4f, full %.4f: more than %.1f point apart", ai, af, 100*incrementalOneSeedGiven)
	}
}

// incrementalOneSeed bounds one seed's gap between the incremental and the
// full run's cleaned accuracy on the digits days. The two runs draw
// differently (an incremental day rescores a subset, with its own rounds), so
// one seed's gap is noisy: over seeds 1-5 it ranged from -.22 to +.39 point
// with every class in EM (--min-class-mass 0) and from -.11 to +.33 at the
// default 0.01, means .12 and .14 (docs/PERFORMANCE.md). The incremental bar, 0.3
// point, is held by the mean over seeds: TestLakeDirIncrementalAccuracy.
const incrementalOneSeed = 0.005

// The given-label model's bounds on the same days. Its transition is fitted
// over every row a full run relabels; an incremental run updates the kept
// fit with the rows it relabels (mixture.FitGivenPrior) but leaves the
// other rows' posteriors as the last fit made them, and on these days each
// append is 30-75% of the table (a daily 1% append moves the fit little:
// TestLakeDefaultsStayIncremental, docs/PERFORMANCE.md's mode costs). Over
// seeds 1-5 the gap was .50 to .61 point, mean .52 (kept fit alone: 1.2
// points; refitted on the relabelled rows alone: .34 on seed 1).
const (
	incrementalOneSeedGiven = 0.007
	incrementalMeanGiven    = 0.006
	incrementalMeanVote     = 0.003
)

// TestLakeDirIncrementalAccuracy: over five seeds, the mean cleaned accuracy
// of the digits days relabelled incrementally (a directory lake, four daily
// files) is within 0.3 point of the mean of one full run per seed with the
// given labels read as votes, each seed within
// incrementalOneSeed; with the given-label model, within its own bounds.
func TestLakeDirIncrementalAccuracy(t *testing.T) {
	ctx := ctxT(t)
	truth := digitsTruth(t)
	days := digitsDays(t)
	for _, m := range []struct {
		given     engine.GivenModel
		one, mean float64
	}{
		{engine.GivenVote, incrementalOneSeed, incrementalMeanVote},
		{engine.GivenBayes, incrementalOneSeedGiven, incrementalMeanGiven},
	} {
		var sumInc, sumFull float64
		seeds := []uint64{1, 2, 3, 4, 5}
		for _, seed := range seeds {
			in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
			cfg := dirConfig(in, out)
			cfg.Seed = seed
			cfg.GivenLabel = options.Some(m.given)
			for day, r := range days {
				writeDay(t, filepath.Join(in, fmt.Sprintf("day-%d.parquet", day)), r)
				if _, err := runLake(ctx, cfg, embedded); err != nil {
					t.Fatalf("%v seed %d day %d: %v", m.given, seed, day, err)
				}
			}
			ai, af := accuracy(t, cleanByID(t, out), truth), accuracy(t, fullRunOf(ctx, t, cfg), truth)
			t.Logf("%v seed %d: cleaned accuracy incremental %.4f, full %.4f", m.given, seed, ai, af)
			if math.Abs(ai-af) > m.one {
				t.Errorf("%v seed %d: incremental accuracy %.4f, full %.4f: more than %.1f point apart", m.given, seed, ai, af, 100*m.one)
			}
			sumInc += ai
			sumFull += af
		}
		n := float64(len(seeds))
		mi, mf := sumInc/n, sumFull/n
		t.Logf("%v, mean over %d seeds: incremental %.4f, full %.4f", m.given, len(seeds), mi, mf)
		if math.Abs(mi-mf) > m.mean {
			t.Errorf("%v: mean incremental accuracy %.4f, full %.4f: more than %.1f point apart", m.given, mi, mf, 100*m.mean)
		}
	}
}

// TestLakeDirChangedAndGone: a covered file rewritten with other labels is
// relabelled whole as new rows (its output shard replaced), and a file that
// leaves the directory takes its rows out of the output. The result of each
// step equals that of an identical run from scratch over the same steps
// (deterministic), and ids are never duplicated.
func TestLakeDirChangedAndGone(t *testing.T) {
	ctx := ctxT(t)
	in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
	days := digitsDays(t)
	cfg := dirConfig(in, out)
	for day := 0; day < 3; day++ {
		writeDay(t, filepath.Join(in, fmt.Sprintf("day-%d.parquet", day)), days[day])
	}
	if _, err := runLake(ctx, cfg, embedded); err != nil {
		t.Fatal(err)
	}
	before := cleanByID(t, out)
	old := snapshotDir(t, out)

	// Day 1's file is rewritten: the same rows, every label moved to the
	// next class.
	changed := *days[1]
	changed.Labels = slices.Clone(days[1].Labels)
	for i, l := range changed.Labels {
		changed.Labels[i] = (l + 1) % 10
	}
	writeDay(t, filepath.Join(in, "day-1.parquet"), &changed)
	sum, err := runLake(ctx, cfg, embedded)
	if err != nil {
		t.Fatal(err)
	}
	lk := sum.Lake
	if lk.NewFiles != 0 || lk.ChangedFiles != 1 || lk.NewRows != int64(changed.Len()) || len(lk.GoneFiles) != 0 {
		t.Errorf("changed file: new %d changed %d rows %d gone %d; want 0, 1, %d, 0", lk.NewFiles, lk.ChangedFiles, lk.NewRows, len(lk.GoneFiles), changed.Len())
	}
	after := cleanByID(t, out)
	if len(after) != len(before) {
		t.Errorf("changed file: %d rows, want %d", len(after), len(before))
	}
	if bytes.Equal(old["day-1.arrow"], snapshotDir(t, out)["day-1.arrow"]) {
		t.Errorf("changed file: its output shard was not written again")
	}
	o, err := resultio.ReadOutput(ctx, out, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	givenMoved := 0
	for i, id := range o.IDs {
		if id >= changed.IDs[0] && id <= changed.IDs[len(changed.IDs)-1] && o.Given[o.GivenOff[i]] == changed.Labels[slices.Index(changed.IDs, id)] {
			givenMoved++
		}
	}
	if givenMoved != changed.Len() {
		t.Errorf("changed file: %d of its %d rows carry the new given label in the output", givenMoved, changed.Len())
	}

	// Day 2's file leaves the directory.
	if err := os.Remove(filepath.Join(in, "day-2.parquet")); err != nil {
		t.Fatal(err)
	}
	sum, err = runLake(ctx, cfg, embedded)
	if err != nil {
		t.Fatal(err)
	}
	lk = sum.Lake
	if len(lk.GoneFiles) != 1 || lk.RemovedFiles != 1 || lk.NewRows != 0 {
		t.Errorf("gone file: gone %v removed %d new rows %d; want 1, 1, 0", lk.GoneFiles, lk.RemovedFiles, lk.NewRows)
	}
	got := cleanByID(t, out)
	if want := days[0].Len() + days[1].Len(); len(got) != want {
		t.Errorf("gone file: output has %d rows, want %d", len(got), want)
	}
	for _, id := range days[2].IDs {
		if _, ok := got[id]; ok {
			t.Fatalf("gone file: its row %d is still in the output", id)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "day-2.arrow")); !os.IsNotExist(err) {
		t.Errorf("gone file: its output shard is still there (%v)", err)
	}
	if s := readSummary(t, out); len(s.Shards) != 2 || len(s.Lake.Manifest) != 2 {
		t.Errorf("gone file: summary lists %d shards, manifest of %d; want 2, 2", len(s.Shards), len(s.Lake.Manifest))
	}
}

// TestLakeDirChangedOptions: an incremental run under method options other
// than the ones the stored posteriors were made with is a full one, for the
// two that summary.json once left out (--draws, --active-tol) too; the
// recorded options are the flag table's.
func TestLakeDirChangedOptions(t *testing.T) {
	ctx := ctxT(t)
	in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
	days := digitsDays(t)
	cfg := dirConfig(in, out)
	cfg.Rounds = 2
	writeDay(t, filepath.Join(in, "day-0.parquet"), days[0])
	if _, err := runLake(ctx, cfg, embedded); err != nil {
		t.Fatal(err)
	}
	got := readSummary(t, out)
	for _, f := range options.Flags {
		if _, ok := got.Options[f.Name]; ok != (f.Record != options.Unrecorded && f.Group != options.GroupCrowd) {
			t.Errorf("summary.json records --%s: %t; its flag entry says %v", f.Name, ok, f.Record)
		}
	}
	writeDay(t, filepath.Join(in, "day-1.parquet"), days[1])
	changed := cfg
	changed.Draws, changed.ActiveTol = mixture.IID, 0.05
	sum, err := runLake(ctx, changed, embedded)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(days[0].Len() + days[1].Len())
	if sum.Lake == nil || sum.Lake.Incremental || sum.Rows != total || sum.Options["draws"] != "iid" || sum.Options["active-tol"] != "0.05" {
		t.Errorf("changed --draws and --active-tol: lake %+v, %d rows, options %v; want a full run over %d rows under them", sum.Lake, sum.Rows, sum.Options, total)
	}
}

// TestOptionConstants: the options' package spells a constant of a
// package it must not import (it brings Beam): the local rounds' bound.
// (The catalog's rules are shared through io/icebergio/catalogname.)
func TestOptionConstants(t *testing.T) {
	if options.DefaultLocalRoundsMiB<<20 != ivfstages.LocalRoundsBytes {
		t.Errorf("options.DefaultLocalRoundsMiB %d MiB, ivfstages.LocalRoundsBytes %d", options.DefaultLocalRoundsMiB, ivfstages.LocalRoundsBytes)
	}
}
