package shardio

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// countingAlloc counts the bytes allocated through it.
type countingAlloc struct {
	memory.Allocator
	n atomic.Int64
}

func (a *countingAlloc) Allocate(size int) []byte {
	a.n.Add(int64(size))
	return a.Allocator.Allocate(size)
}

func (a *countingAlloc) Reallocate(size int, b []byte) []byte {
	a.n.Add(int64(size))
	return a.Allocator.Reallocate(size, b)
}

// writeListShard writes rows rows of d-dimensional list<float32> features in
// one row group of many pages, the first nulls rows null and row empty (if
// >= 0) an empty list.
func writeListShard(t *testing.T, path string, rows, d, nulls, empty int) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "label", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(32<<10), parquet.WithMaxRowGroupLength(int64(rows)))
	w, err := pqarrow.NewFileWriter(sc, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.Int32Builder).Append(int32(i % 3))
		lb := b.Field(1).(*array.ListBuilder)
		switch {
		case i < nulls:
			lb.AppendNull()
		case i == empty:
			lb.Append(true)
		default:
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.Float32Builder)
			for j := range d {
				vb.Append(float32(i*d + j))
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// Scan learns a list column's dimension from the first non-null row,
// decoding only the pages up to it (the batches of firstDimBatch rows past
// leading nulls), not the whole unit; an empty first row is still refused
// with its row.
func TestFirstDimReadsFirstRows(t *testing.T) {
	const rows, d, nulls = 30000, 64, 3*firstDimBatch + 5
	dir := t.TempDir()
	path := filepath.Join(dir, "part-0.parquet")
	writeListShard(t, path, rows, d, nulls, -1)
	mem := &countingAlloc{Allocator: memory.DefaultAllocator}
	shards, err := Scan(context.Background(), path, ReadOptions{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	if got := shards[0].Units[0].D; got != d {
		t.Errorf("dimension %d, want %d", got, d)
	}
	column := int64(rows * d * 4)
	if got := mem.n.Load(); got > column/8 {
		t.Errorf("Scan allocated %d bytes for a features column of %d: it decoded the unit, not its first rows", got, column)
	}
	bad := filepath.Join(dir, "bad.parquet")
	writeListShard(t, bad, 1000, d, nulls, nulls)
	_, err = Scan(context.Background(), bad, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "empty feature vector") || !strings.Contains(err.Error(), "row 197") {
		t.Errorf("an empty first row: %v", err)
	}
}
