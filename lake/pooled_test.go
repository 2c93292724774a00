package lake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
)

// pairDays is the digits slice's four units with their labels replaced by
// 45% pair-flip noise of the truth (class c relabelled c + 1), the noise
// whose class-level structure opens the pooled start's gate; which rows
// flip is a fixed function of the id.
func pairDays(t *testing.T) []*schemas.Rows {
	truth := digitsTruth(t)
	days := digitsDays(t)
	for _, r := range days {
		r.Labels = r.Labels[:0]
		r.LabelOff = append(r.LabelOff[:0], 0)
		for _, id := range r.IDs {
			y := truth[id]
			if (uint64(id)*0x9e3779b97f4a7c15)>>54 < 461 { // 461/1024: 45%
				y = (y + 1) % 10
			}
			r.Labels = append(r.Labels, y)
			r.LabelOff = append(r.LabelOff, int32(len(r.Labels)))
		}
	}
	return days
}

// slice is rows lo..hi of r, a batch of their own (a small append).
func slice(r *schemas.Rows, lo, hi int) *schemas.Rows {
	out := &schemas.Rows{D: r.D, IDKind: r.IDKind, IDs: append([]int64(nil), r.IDs[lo:hi]...), LabelOff: []int32{0},
		Features: append([]float32(nil), r.Features[lo*r.D:hi*r.D]...)}
	for i := lo; i < hi; i++ {
		out.Labels = append(out.Labels, r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]...)
		out.LabelOff = append(out.LabelOff, int32(len(out.Labels)))
	}
	return out
}

// defaultsCase is one lake under TestLakeDefaultsStayIncremental: add
// appends rows as new input (a table's snapshot, a directory's file), run
// runs the incremental run, rows counts the output's rows, mark notes the
// output as it is and unchanged says whether it still is, and dropFit
// removes the fit file the output keeps (as an output written before fits
// were kept has none).
type defaultsCase struct {
	add       func(day int, r *schemas.Rows)
	run       func() *resultio.Summary
	rows      func() int
	mark      func()
	unchanged func() bool
	dropFit   func()
}

// TestLakeDefaultsStayIncremental: with the default options (the linear
// head on, the pooled start's gate open on pair-flip noise), a lake stays
// incremental. The first run is full and keeps its fits; a rerun with
// nothing new commits nothing; a small append relabels only the new rows
// and the old rows they became neighbours of, applying the kept fits; the
// next append too (the fits carry on); and only an output whose fit file
// is gone is relabelled in full, once, keeping them again. For a table and
// for a directory lake.
func TestLakeDefaultsStayIncremental(t *testing.T) {
	ctx := ctxT(t)
	days := pairDays(t)
	const k = 10 // the default --k
	check := func(t *testing.T, c defaultsCase, headLast bool) {
		c.add(0, days[0])
		sum := c.run()
		lk := sum.Lake
		if sum.Pooled == nil || !sum.Pooled.Open || sum.Options[resultio.MetaPooledStart] != resultio.PooledStartOpen || sum.Head == nil {
			t.Fatalf("first run: pooled %+v, head %+v: want the pooled start taken and the head on (the defaults)", sum.Pooled, sum.Head)
		}
		if sum.Head.Last != headLast || (sum.Options[resultio.MetaHeadLast] == resultio.HeadLastOn) != headLast {
			t.Fatalf("first run: head %+v, option %q: want the head on in the last round %t", sum.Head, sum.Options[resultio.MetaHeadLast], headLast)
		}
		if lk == nil || lk.Incremental || lk.Fit == "" {
			t.Fatalf("first run: lake %+v, want a full run that keeps its fits", lk)
		}
		total := days[0].Len()

		c.mark()
		if lk := c.run().Lake; lk == nil || !lk.NothingNew || !c.unchanged() {
			t.Fatalf("rerun with nothing new: lake %+v, output unchanged %t: want nothing new, nothing committed", lk, c.unchanged())
		}

		for day, n := range []int{30, 20} {
			c.add(day+1, slice(days[1], 30*day, 30*day+n))
			total += n
			sum := c.run()
			lk := sum.Lake
			if lk == nil || !lk.Incremental || !lk.KeptFit || lk.Fit == "" {
				t.Fatalf("append %d: lake %+v, want an incremental run giving the kept fits", day, lk)
			}
			if lk.NewRows != int64(n) || lk.Rescored > int64(k*n) || lk.Rescored > lk.Searched || lk.ScannedRows != int64(total) {
				t.Errorf("append %d: new %d rescored %d searched %d scanned %d: want %d new, at most %d rescored among the searched, %d scanned",
					day, lk.NewRows, lk.Rescored, lk.Searched, lk.ScannedRows, n, k*n, total)
			}
			if sum.Options[resultio.MetaPooledStart] != resultio.PooledStartOpen || (sum.Options[resultio.MetaHeadLast] == resultio.HeadLastOn) != headLast {
				t.Errorf("append %d: options %v do not record how the posteriors were made", day, sum.Options)
			}
			if got := c.rows(); got != total {
				t.Errorf("append %d: the output holds %d rows, want %d", day, got, total)
			}
			t.Logf("append %d: new %d, rescored %d, total %.2fs", day, lk.NewRows, lk.Rescored, sum.Timings["total"])
		}

		// No fit file (an output written before fits were kept): one full
		// run, which keeps them again.
		c.dropFit()
		c.add(3, slice(days[1], 60, 70))
		total += 10
		if lk := c.run().Lake; lk == nil || lk.Incremental || lk.Fit == "" || lk.ScannedRows != int64(total) {
			t.Fatalf("without the fit file: lake %+v, want a full run over %d rows keeping the fits", lk, total)
		}
		c.add(4, slice(days[1], 70, 75))
		if lk := c.run().Lake; lk == nil || !lk.Incremental || !lk.KeptFit || lk.NewRows != 5 {
			t.Errorf("after the full run: lake %+v, want an incremental run over 5 new rows", lk)
		}
	}
	table := func(t *testing.T, mod func(*options.Options), headLast bool) {
		l := newTestLake(t)
		cfg := l.incremental("ns.defaults")
		mod(&cfg)
		var snaps int
		check(t, defaultsCase{
			add: func(_ int, r *schemas.Rows) { l.appendRows(t, r) },
			run: func() *resultio.Summary {
				sum, err := runLake(ctx, cfg, embedded)
				if err != nil {
					t.Fatal(err)
				}
				return sum
			},
			rows:      func() int { got, _ := l.outputRows(t, "ns.defaults"); return len(got) },
			mark:      func() { _, snaps = l.outputRows(t, "ns.defaults") },
			unchanged: func() bool { _, n := l.outputRows(t, "ns.defaults"); return n == snaps },
			dropFit: func() {
				tbl, err := l.cat.LoadTable(ctx, "ns.defaults")
				if err != nil {
					t.Fatal(err)
				}
				f := tbl.CurrentSnapshot().Summary.Properties[icebergio.SummaryFit]
				if f == "" {
					t.Fatal("the output table's snapshot names no fit file")
				}
				if err := os.Remove(icebergio.Task{Path: f}.ReaderPath()); err != nil {
					t.Fatal(err)
				}
			},
		}, headLast)
	}
	// The head switches itself off on this data: the pooled fit is kept.
	t.Run("table", func(t *testing.T) { table(t, func(*options.Options) {}, false) })
	// ivf mode's rounds in one stage (a spill directory: the embedded
	// runner's) keep their head and pooled fit too.
	t.Run("table, ivf, head 0.2", func(t *testing.T) {
		table(t, func(o *options.Options) {
			o.Neighbours, o.Head, o.SpillDir = options.NeighboursIVF, options.Some("0.2"), options.Some(t.TempDir())
		}, true)
	})
	dir := func(t *testing.T, mod func(*options.Options), headLast bool) {
		in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
		cfg := dirConfig(in, out)
		mod(&cfg)
		var before map[string][]byte
		check(t, defaultsCase{
			add: func(day int, r *schemas.Rows) { writeDay(t, filepath.Join(in, fmt.Sprintf("day-%d.parquet", day)), r) },
			run: func() *resultio.Summary {
				sum, err := runLake(ctx, cfg, embedded)
				if err != nil {
					t.Fatal(err)
				}
				return sum
			},
			rows:      func() int { return len(cleanByID(t, out)) },
			mark:      func() { before = snapshotDir(t, out) },
			unchanged: func() bool { return reflect.DeepEqual(before, snapshotDir(t, out)) },
			dropFit: func() {
				if err := os.Remove(filepath.Join(out, keptio.FitFileName)); err != nil {
					t.Fatal(err)
				}
			},
		}, headLast)
		// The kept fits make the incremental output a full run's, but for
		// the rows the one-hop update does not reach.
		inc, full := cleanByID(t, out), fullRunOf(ctx, t, cfg)
		same := 0
		for id, l := range inc {
			if full[id] == l {
				same++
			}
		}
		t.Logf("%d of %d rows agree with a full run", same, len(inc))
		if len(full) != len(inc) || float64(same) < 0.97*float64(len(inc)) {
			t.Errorf("%d of %d rows (a full run: %d) agree with a full run, want 97%%", same, len(inc), len(full))
		}
	}
	t.Run("dir", func(t *testing.T) { dir(t, func(*options.Options) {}, false) })
	// A fixed share never switches itself off: the kept head gives its
	// component in every round of every update.
	t.Run("dir, head 0.2", func(t *testing.T) { dir(t, func(o *options.Options) { o.Head = options.Some("0.2") }, true) })
	// The given-label model's fit is kept, and the rows an update
	// relabels are read through it.
	t.Run("dir, given-label bayes", func(t *testing.T) {
		dir(t, func(o *options.Options) { o.GivenLabel = options.Some(engine.GivenBayes) }, false)
	})
}

// TestLakeChangedOptionFull: an incremental run under other options than
// the stored posteriors were made with (here a changed default: the last
// run read the given labels as votes) relabels every row once, and the
// runs after it are incremental again.
func TestLakeChangedOptionFull(t *testing.T) {
	ctx := ctxT(t)
	days := digitsDays(t)
	in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
	cfg := dirConfig(in, out)
	cfg.Rounds = 3
	old := cfg
	old.GivenLabel = options.Some(engine.GivenVote)
	total := 0
	run := func(day int, o options.Options) *resultio.LakeSummary {
		writeDay(t, filepath.Join(in, fmt.Sprintf("day-%d.parquet", day)), days[day])
		total += days[day].Len()
		sum, err := runLake(ctx, o, embedded)
		if err != nil {
			t.Fatalf("day %d: %v", day, err)
		}
		if sum.Rows != int64(total) || sum.Lake == nil {
			t.Fatalf("day %d: %d rows, lake %+v; want %d rows", day, sum.Rows, sum.Lake, total)
		}
		return sum.Lake
	}
	run(0, old)
	if lk := run(1, old); !lk.Incremental {
		t.Fatalf("day 1, the same options: lake %+v, want incremental", lk)
	}
	if lk := run(2, cfg); lk.Incremental {
		t.Errorf("day 2, --given-label bayes after vote: lake %+v, want a full run", lk)
	}
	if lk := run(3, cfg); !lk.Incremental || lk.NewRows != int64(days[3].Len()) {
		t.Errorf("day 3, the same options again: lake %+v, want incremental over %d new rows", lk, days[3].Len())
	}
}

// dirDays writes each of days as one more input file of a directory lake
// (day-N.parquet under in), runs cfg after each, and hands check the
// summary and the rows written so far; it returns their number.
func dirDays(ctx context.Context, t *testing.T, cfg options.Options, in string, days []*schemas.Rows, check func(day int, sum *resultio.Summary, total int)) int {
	t.Helper()
	var total int
	for day, r := range days {
		writeDay(t, filepath.Join(in, fmt.Sprintf("day-%d.parquet", day)), r)
		total += r.Len()
		sum, err := runLake(ctx, cfg, embedded)
		if err != nil {
			t.Fatalf("day %d: %v", day, err)
		}
		check(day, sum, total)
	}
	return total
}
