package lake_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestLakeDeletedRowsNotRelabelled: rows deleted from the input table by a
// merge-on-read delete (position delete files) are neither relabelled nor
// written by a table run; the others all are.
func TestLakeDeletedRowsNotRelabelled(t *testing.T) {
	ctx := ctxT(t)
	days := digitsDays(t)
	l := newTestLake(t)
	l.appendRows(t, days[0])
	l.appendRows(t, days[1])
	txn := l.tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{"write.delete.mode": "merge-on-read"}); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Delete(context.Background(), iceberg.LessThan(iceberg.Reference("id"), int64(100)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := runLake(ctx, l.config("ns.out"), embedded); err != nil {
		t.Fatal(err)
	}
	got, _ := l.outputRows(t, "ns.out")
	if want := days[0].Len() + days[1].Len() - 100; len(got) != want {
		t.Errorf("%d rows written, want %d", len(got), want)
	}
	for id := range got {
		if id < 100 {
			t.Fatalf("deleted id %d relabelled and written", id)
		}
	}
}
