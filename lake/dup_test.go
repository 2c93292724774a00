package lake_test

import (
	"strings"
	"testing"

	"github.com/relabel/relabel/schemas"
)

// TestLakeIncrementalDuplicateIDs: an append repeating ids already in the
// table is refused by --incremental as a full run refuses it, naming the id
// column and both files, and nothing is committed.
func TestLakeIncrementalDuplicateIDs(t *testing.T) {
	ctx := ctxT(t)
	days := digitsDays(t)
	l := newTestLake(t)
	cfg := l.incremental("ns.dup")
	l.appendAndRun(ctx, t, cfg, days[0])
	// Day 1 with its first 50 ids replaced by day 0's.
	d := *days[1]
	d.IDs = append([]int64(nil), d.IDs...)
	copy(d.IDs, days[0].IDs[:50])
	l.appendRows(t, &d)
	_, before := l.outputRows(t, "ns.dup")
	_, err := runLake(ctx, cfg, embedded)
	if err == nil || !strings.Contains(err.Error(), "duplicate id") || strings.Count(err.Error(), ".parquet") < 2 || !strings.Contains(err.Error(), schemas.ColID) {
		t.Errorf("incremental: %v, want a duplicate-id error naming the column and both files", err)
	}
	// A full run refuses too, with the same message, every time: the
	// stats stage finds the duplicate and the neighbour stage reports it
	// (it used to race with a stage failing on the candidates' side input,
	// "got 0 values", which it then sometimes reported instead).
	full := cfg
	full.Lake.Incremental = false
	for try := range 5 {
		_, err := runLake(ctx, full, embedded)
		if err == nil || !strings.Contains(err.Error(), "duplicate id") || strings.Count(err.Error(), ".parquet") < 2 || !strings.Contains(err.Error(), schemas.ColID) {
			t.Errorf("full run %d: %v, want a duplicate-id error naming the column and both files", try, err)
		}
	}
	if _, after := l.outputRows(t, "ns.dup"); after != before {
		t.Errorf("%d snapshots after the refused runs, %d before", after, before)
	}
}
