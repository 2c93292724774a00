package stages

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// writeShards writes statsBatches(n, batch, d) as two input shards of dir
// (a.parquet: its rows of shard a in row groups of batch rows; b.arrow: the
// rest, one record batch each), and returns their units as Scan finds them.
func writeShards(t *testing.T, dir string, n, batch, d int) ([]shardio.Unit, []schemas.Rows) {
	t.Helper()
	ctx := context.Background()
	batches := statsBatches(t, n, batch, d)
	byShard := map[string][]*schemas.Rows{}
	for i := range batches {
		b := &batches[i]
		byShard[b.Shard] = append(byShard[b.Shard], b)
	}
	for shard, f := range map[string]shardio.Format{"a.parquet": shardio.Parquet, "b.parquet": shardio.ArrowFile} {
		name := strings.TrimSuffix(shard, ".parquet") + f.Ext()
		if err := shardio.WriteInput(ctx, blobio.Local{}, filepath.Join(dir, name), f, byShard[shard], schemas.LabelInt32, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	shards, err := shardio.Scan(ctx, filepath.Join(dir, "*"), shardio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var units []shardio.Unit
	for _, s := range shards {
		units = append(units, s.Units...)
	}
	return units, batches
}

// rowIDs emits the ids of a batch.
func rowIDs(r schemas.Rows, emit func(int64)) {
	for _, id := range r.IDs {
		emit(id)
	}
}

// rowLabels emits "id:label" for every row of a batch.
func rowLabels(r schemas.Rows, emit func(string)) {
	for i, id := range r.IDs {
		emit(fmt.Sprintf("%d:%d", id, r.Labels[r.LabelOff[i]]))
	}
}

func init() {
	register.Function2x0(rowIDs)
	register.Function2x0(rowLabels)
	register.Emitter1[int64]()
}

// TestRead reads 70 rows written as a Parquet file (row groups of 12) and an
// Arrow file: one batch per unit, every id once with its label, the same
// again with ReadAgain.
func TestRead(t *testing.T) {
	const n, batch, d = 70, 12, 3
	units, batches := writeShards(t, t.TempDir(), n, batch, d)
	var ids []int64
	var labels []string
	for _, b := range batches {
		var ls []string
		rowLabels(b, func(s string) { ls = append(ls, s) })
		ids, labels = append(ids, b.IDs...), append(labels, ls...)
	}
	slices.Sort(ids)
	opts := shardio.ReadOptions{Columns: schemas.Columns{ID: "id", Features: "features", Label: "label"}, D: d, Classes: 4}
	p, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, units)
	for _, rows := range []beam.PCollection{Read(s, col, opts), ReadAgain(s, col, opts)} {
		passert.Count(s, rows, "batches", len(units))
		passert.EqualsList(s, beam.ParDo(s, rowIDs, rows), ids)
		passert.EqualsList(s, beam.ParDo(s, rowLabels, rows), labels)
	}
	ptest.RunAndValidate(t, p)
	if len(units) != (n/2+batch-1)/batch+(n-n/2+batch-1)/batch {
		t.Errorf("%d units, want one per batch", len(units))
	}
}

// TestReadRejects: a shard whose labels lie outside the class set fails the
// pipeline with an error naming the file, the row and the column.
func TestReadRejects(t *testing.T) {
	dir := t.TempDir()
	units, _ := writeShards(t, dir, 40, 10, 2)
	opts := shardio.ReadOptions{Columns: schemas.Columns{ID: "id", Features: "features", Label: "label"}, D: 2, Classes: 2}
	p, s := beam.NewPipelineWithRoot()
	Read(s, beam.CreateList(s, units), opts)
	err := ptest.Run(p)
	if err == nil {
		t.Fatal("labels of 4 classes read as 2: no error")
	}
	// Both files hold such labels: whichever failed first is named.
	if !strings.Contains(err.Error(), filepath.Join(dir, "a.parquet")) && !strings.Contains(err.Error(), filepath.Join(dir, "b.arrow")) {
		t.Errorf("error names neither file: %v", err)
	}
	for _, want := range []string{" row ", `column "label"`, "outside [0,2)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
