package lake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/pipelines/lake"
	"github.com/relabel/relabel/schemas"
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

// TestLakePooledFull: a table whose last run started from the pooled fit
// (pair-flip noise opens the gate) is relabelled in full by --incremental,
// since the fit is not kept: each run commits one snapshot holding every
// row, records the pooled start, and is not incremental.
func TestLakePooledFull(t *testing.T) {
	ctx := ctxT(t)
	l := newTestLake(t)
	days := pairDays(t)
	cfg := l.incremental("ns.pair")
	var total int
	for day, r := range days[:2] {
		total += r.Len()
		sum := l.appendAndRun(ctx, t, cfg, r)
		if sum.Pooled == nil || !sum.Pooled.Open || sum.Options[pipelines.MetaPooledStart] != pipelines.PooledStartOpen {
			t.Fatalf("day %d: pooled %+v, option %q: want the pooled start taken and recorded", day, sum.Pooled, sum.Options[pipelines.MetaPooledStart])
		}
		lk := lake.Of(sum)
		if lk == nil || lk.Incremental || lk.ScannedRows != int64(total) {
			t.Fatalf("day %d: lake summary %+v, want a full run over %d rows", day, lk, total)
		}
		got, snaps := l.outputRows(t, "ns.pair")
		if snaps != day+1 || len(got) != total {
			t.Fatalf("day %d: %d snapshots, %d rows; want %d, %d", day, snaps, len(got), day+1, total)
		}
	}
}

// TestLakeDirPooledFull: the same for a directory lake: the second day's
// --incremental run relabels both files in full, replacing the output's
// own files (no --overwrite needed), and its manifest covers both. A third
// run, after the first day's file is removed and a third day's added, is
// full again and removes the gone file's output, listing it, as an
// incremental run does.
func TestLakeDirPooledFull(t *testing.T) {
	ctx := ctxT(t)
	in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
	days := pairDays(t)
	cfg := dirConfig(in, out)
	total := dirDays(ctx, t, cfg, in, days[:2], func(day int, sum *pipelines.Summary, total int) {
		lk := lake.Of(sum)
		if sum.Pooled == nil || !sum.Pooled.Open || lk == nil || lk.Incremental || len(lk.Manifest) != day+1 || sum.Rows != int64(total) {
			t.Fatalf("day %d: pooled %+v, lake %+v, rows %d: want a full run from the pooled start over %d rows", day, sum.Pooled, lk, sum.Rows, total)
		}
		if got := cleanByID(t, out); len(got) != total {
			t.Fatalf("day %d: output holds %d rows, want %d", day, len(got), total)
		}
	})
	gonePath := filepath.Join(in, "day-0.parquet")
	if err := os.Remove(gonePath); err != nil {
		t.Fatal(err)
	}
	writeDay(t, filepath.Join(in, "day-2.parquet"), days[2])
	total += days[2].Len() - days[0].Len()
	sum, err := runLake(ctx, cfg, embedded)
	if err != nil {
		t.Fatalf("day 2: %v", err)
	}
	lk := lake.Of(sum)
	if lk == nil || lk.Incremental || len(lk.Manifest) != 2 || len(lk.GoneFiles) != 1 || len(lk.RemovedOutputs) != 1 || sum.Rows != int64(total) {
		t.Fatalf("day 2: lake %+v, rows %d: want a full run over %d rows listing one gone file", lk, sum.Rows, total)
	}
	if _, err := os.Stat(filepath.Join(out, lk.RemovedOutputs[0])); !os.IsNotExist(err) {
		t.Fatalf("day 2: the gone file's output %s is still there (%v)", lk.RemovedOutputs[0], err)
	}
	if got := cleanByID(t, out); len(got) != total {
		t.Fatalf("day 2: output holds %d rows, want %d", len(got), total)
	}
}

// TestLakeHeadFull: a run whose linear head still gave its component in the
// last round (a fixed share, which never switches itself off) records it
// (summary.json's head section and the head-last-round option), and the
// next --incremental run, which could not refit the head for the new rows,
// relabels in full; for a table and for a directory lake.
func TestLakeHeadFull(t *testing.T) {
	ctx := ctxT(t)
	days := digitsDays(t)
	check := func(day int, sum *pipelines.Summary, total int) {
		t.Helper()
		if sum.Head == nil || !sum.Head.Last || sum.Head.Rounds != int64(lakeRounds) || sum.Options[pipelines.MetaHeadLast] != pipelines.HeadLastOn {
			t.Fatalf("day %d: head %+v, option %q: want the head on in every round, recorded", day, sum.Head, sum.Options[pipelines.MetaHeadLast])
		}
		if lk := lake.Of(sum); lk == nil || lk.Incremental || lk.ScannedRows != int64(total) {
			t.Fatalf("day %d: lake summary %+v, want a full run over %d rows", day, lk, total)
		}
	}
	t.Run("table", func(t *testing.T) {
		l := newTestLake(t)
		cfg := l.incremental("ns.head")
		cfg.Head = options.Some("0.2")
		var total int
		for day, r := range days[:2] {
			total += r.Len()
			check(day, l.appendAndRun(ctx, t, cfg, r), total)
		}
	})
	t.Run("dir", func(t *testing.T) {
		in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
		cfg := dirConfig(in, out)
		cfg.Head = options.Some("0.2")
		dirDays(ctx, t, cfg, in, days[:2], check)
	})
}

// dirDays writes each of days as one more input file of a directory lake
// (day-N.parquet under in), runs cfg after each, and hands check the
// summary and the rows written so far; it returns their number.
func dirDays(ctx context.Context, t *testing.T, cfg options.Options, in string, days []*schemas.Rows, check func(day int, sum *pipelines.Summary, total int)) int {
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
