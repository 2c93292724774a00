package crowdstages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/shardio"
)

// writeItemsWithAnnotators writes n items as one Arrow IPC file: ids 100+i,
// d features (small values; bad at row badRow, dimension 2), labels i % C
// and (i+1) % C by annotators "a<i%3>" and "b<i%5>".
func writeItemsWithAnnotators(t *testing.T, path string, d, n, badRow int, bad float32) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.FixedSizeListOf(int32(d), arrow.PrimitiveTypes.Float32)},
		{Name: "labels", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "annotators", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(100 + int64(i))
		fb := b.Field(1).(*array.FixedSizeListBuilder)
		fb.Append(true)
		for j := 0; j < d; j++ {
			v := float32(i%7) + float32(j)/10
			if i == badRow && j == 2 {
				v = bad
			}
			fb.ValueBuilder().(*array.Float32Builder).Append(v)
		}
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{int32(i % testC), int32((i + 1) % testC)}, nil)
		ab := b.Field(3).(*array.ListBuilder)
		ab.Append(true)
		ab.ValueBuilder().(*array.StringBuilder).AppendValues([]string{fmt.Sprintf("a%d", i%3), fmt.Sprintf("b%d", i%5)}, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(sc))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// annStringsFn lists a bucket's annotations as "item row label".
type annStringsFn struct{}

func (annStringsFn) ProcessElement(_ int, a AnnRows, emit func(string)) {
	for k := range a.Item {
		emit(fmt.Sprintf("%d %d %d", a.Item[k], a.Row[k], a.Label[k]))
	}
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*annStringsFn)(nil)).Elem())
}

// TestReadItemAnnotatorsMaxAbs: the annotators column's read checks the
// features as the items' own read does (stages.Read, with the plan's
// shardio.ReadOptions): under the bound of unscaled features
// (shardio.MaxAbsForDistances, --no-standardise) a finite value whose
// square overflows float32 is an error naming the file, row and column;
// without the bound the same unit reads, every annotation of it emitted.
func TestReadItemAnnotatorsMaxAbs(t *testing.T) {
	const d, n, badRow = 4, 30, 17
	path := filepath.Join(t.TempDir(), "items.arrow")
	writeItemsWithAnnotators(t, path, d, n, badRow, 1e37)
	_, _, units, err := shardio.FileUnits(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(maxAbs float32, want []any) error {
		p, s := beam.NewPipelineWithRoot()
		anns := ReadItemAnnotators(s, beam.CreateList(s, units), shardio.ReadOptions{D: d, Classes: testC, MaxAbsFeature: maxAbs}, "annotators", 2)
		equals(s, beam.ParDo(s, &annStringsFn{}, anns), want)
		return ptest.Run(p)
	}
	var want []any
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("%d %d %d", 100+i, i, i%testC), fmt.Sprintf("%d %d %d", 100+i, i, (i+1)%testC))
	}
	if err := read(0, want); err != nil {
		t.Errorf("without the bound: %v", err)
	}
	err = read(shardio.MaxAbsForDistances(d), want)
	where := fmt.Sprintf("%s row %d column \"features\"", path, badRow)
	if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), "--no-standardise") {
		t.Errorf("a feature of 1e37 under the bound for d = %d: %v, want an error naming %s and --no-standardise", d, err, where)
	}
}
