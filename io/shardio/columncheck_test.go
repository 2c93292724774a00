package shardio

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestColumnsOfUnequalLength: an Arrow record batch whose columns state
// different lengths (arrow-go's record accepts a column longer than the
// batch) is refused naming the file and the columns, in both Arrow
// formats, instead of reading more features than ids.
func TestColumnsOfUnequalLength(t *testing.T) {
	full := rowsRecord(t, 4)
	sc := full.Schema()
	ids := array.NewSlice(full.Column(0), 0, 1)
	defer ids.Release()
	labels := array.NewSlice(full.Column(2), 0, 1)
	defer labels.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{ids, full.Column(1), labels}, 1)
	defer rec.Release()
	dir := t.TempDir()
	for _, format := range []Format{ArrowFile, ArrowStream} {
		p := filepath.Join(dir, "uneven"+map[Format]string{ArrowFile: ".arrow", ArrowStream: ".arrows"}[format])
		writeRecordFile(t, p, format, rec)
		shards, err := Scan(context.Background(), p, ReadOptions{})
		if err != nil {
			t.Fatalf("%s: Scan: %v", p, err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		_, err = ReadUnit(context.Background(), shards[0].Units[0], ReadOptions{Classes: 2, Mem: mem})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), `column "features" has 4 rows, column "id" 1`) {
			t.Errorf("%s: %v; want an error naming the file and the columns' lengths", p, err)
		}
		mem.AssertSize(t, 0)
	}
}

// rowsRecord is a record of n rows (n <= 4) of an int64 id, three float32
// features and an int32 label in classes 0 and 1.
func rowsRecord(t *testing.T, n int) arrow.RecordBatch {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)},
		{Name: "label", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	rows := []string{`{"id": 0, "features": [1, 2, 3], "label": 0}`, `{"id": 1, "features": [4, 5, 6], "label": 1}`,
		`{"id": 2, "features": [7, 8, 9], "label": 0}`, `{"id": 3, "features": [1, 1, 1], "label": 1}`}
	return jsonRecord(t, sc, "["+strings.Join(rows[:n], ",")+"]")
}
