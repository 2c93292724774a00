package pipelines_test

import (
	"strings"
	"testing"

	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/schemas"
)

// TestLakeIncrementalDuplicateIDs: an append repeating ids already in the
// table is refused by --incremental as a full run refuses it, naming the id
// column and both files, and nothing is committed.
func TestLakeIncrementalDuplicateIDs(t *testing.T) {
	ctx := ctxT(t)
	days := digitsDays(t)
	l := newTestLake(t)
	cfg := l.config("ns.dup")
	cfg.Lake.Incremental = true
	l.appendRows(t, days[0])
	if _, err := pipelines.Run(ctx, cfg, embedded); err != nil {
		t.Fatal(err)
	}
	// Day 1 with its first 50 ids replaced by day 0's.
	d := *days[1]
	d.IDs = append([]int64(nil), d.IDs...)
	copy(d.IDs, days[0].IDs[:50])
	l.appendRows(t, &d)
	_, before := l.outputRows(t, "ns.dup")
	for _, incremental := range []bool{true, false} {
		c := cfg
		c.Lake.Incremental = incremental
		_, err := pipelines.Run(ctx, c, embedded)
		if err == nil || !strings.Contains(err.Error(), "duplicate id") || strings.Count(err.Error(), ".parquet") < 2 || !strings.Contains(err.Error(), schemas.ColID) {
			t.Errorf("incremental %t: %v, want a duplicate-id error naming the column and both files", incremental, err)
		}
	}
	if _, after := l.outputRows(t, "ns.dup"); after != before {
		t.Errorf("%d snapshots after the refused runs, %d before", after, before)
	}
}
