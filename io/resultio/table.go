package resultio

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/blobio"
)

// readTable reads a whole Parquet or Arrow IPC file, told apart by its magic
// bytes. The caller releases the table. Output shards are one input shard's
// rows, small enough to hold whole; shardio's unit-by-unit reader is for the
// inputs, which are not.
func readTable(ctx context.Context, path string, mem memory.Allocator) (arrow.Table, error) {
	if mem == nil {
		panic("resultio: nil allocator")
	}
	fsys, err := blobio.For(path)
	if err != nil {
		return nil, fmt.Errorf("resultio: %w", err)
	}
	f, err := fsys.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("resultio: %w", err)
	}
	defer f.Close()
	head := make([]byte, min(f.Size(), 6))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("resultio: reading %s: %w", path, err)
	}
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		pr, err := file.NewParquetReader(blobio.Section(f))
		if err != nil {
			return nil, fmt.Errorf("resultio: %s: corrupt or truncated Parquet: %w", path, err)
		}
		defer pr.Close()
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, mem)
		if err != nil {
			return nil, fmt.Errorf("resultio: %s: %w", path, err)
		}
		tbl, err := fr.ReadTable(ctx)
		if err != nil {
			return nil, fmt.Errorf("resultio: reading %s: %w", path, err)
		}
		if tbl.Schema().Metadata().Len() > 0 {
			return tbl, nil
		}
		// ReadTable leaves the file's key-value metadata (relabel's class
		// names and options) off the table's schema; the file reader's
		// schema has it.
		defer tbl.Release()
		sc, err := fr.Schema()
		if err != nil {
			return nil, fmt.Errorf("resultio: %s: %w", path, err)
		}
		md := sc.Metadata()
		cols := make([]arrow.Column, tbl.NumCols())
		for i := range cols {
			cols[i] = *tbl.Column(i)
		}
		return array.NewTable(arrow.NewSchema(tbl.Schema().Fields(), &md), cols, tbl.NumRows()), nil
	case bytes.HasPrefix(head, []byte("ARROW1")):
		r, err := ipc.NewFileReader(blobio.Section(f), ipc.WithAllocator(mem))
		if err != nil {
			return nil, fmt.Errorf("resultio: %s: corrupt or truncated Arrow IPC file: %w", path, err)
		}
		defer r.Close()
		recs := make([]arrow.RecordBatch, 0, r.NumRecords())
		defer func() {
			for _, rec := range recs {
				rec.Release()
			}
		}()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				return nil, fmt.Errorf("resultio: reading %s: %w", path, err)
			}
			recs = append(recs, rec)
		}
		return array.NewTableFromRecords(r.Schema(), recs), nil
	}
	return nil, fmt.Errorf("resultio: %s: not a Parquet or Arrow IPC file", path)
}

// column returns the chunks of the one column named name.
func column(tbl arrow.Table, name string) ([]arrow.Array, bool) {
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, false
	}
	return tbl.Column(idx[0]).Data().Chunks(), true
}

// appendIDs appends an id column to ints (int64 ids) or strs (string ids).
// The first chunk decides which; every id must be of that type and non-null.
func appendIDs(ints []int64, strs []string, chunks []arrow.Array, path, col string) ([]int64, []string, error) {
	for _, c := range chunks {
		for i := 0; i < c.Len(); i++ {
			if c.IsNull(i) {
				return nil, nil, fmt.Errorf("resultio: %s: column %q: null id", path, col)
			}
			switch a := c.(type) {
			case *array.Int64:
				if strs != nil {
					return nil, nil, fmt.Errorf("resultio: %s: column %q: int64 ids after string ids", path, col)
				}
				ints = append(ints, a.Value(i))
			case array.StringLike:
				if ints != nil {
					return nil, nil, fmt.Errorf("resultio: %s: column %q: string ids after int64 ids", path, col)
				}
				strs = append(strs, strings.Clone(a.Value(i)))
			default:
				return nil, nil, fmt.Errorf("resultio: %s: column %q: ids of type %s, want int64 or string", path, col, c.DataType())
			}
		}
	}
	return ints, strs, nil
}

// classIndex maps class names to their indices; nil for integer labels.
func classIndex(names []string) map[string]int32 {
	if names == nil {
		return nil
	}
	m := make(map[string]int32, len(names))
	for i, n := range names {
		m[n] = int32(i)
	}
	return m
}

// labelOf reads element i of a label array as a class index: integers as they
// are (classes nil: integer labels), strings through classes (the class
// names); -1 for null.
func labelOf(c arrow.Array, i int, classes map[string]int32, path, col string) (int32, error) {
	if c.IsNull(i) {
		return -1, nil
	}
	var s string
	switch a := c.(type) {
	case *array.Int32, *array.Int64:
		if classes != nil {
			return 0, fmt.Errorf("resultio: %s: column %q holds integers but the output has string labels", path, col)
		}
		if a, ok := a.(*array.Int32); ok {
			return checkLabel(int64(a.Value(i)), path, col)
		}
		return checkLabel(a.(*array.Int64).Value(i), path, col)
	case array.StringLike:
		s = a.Value(i)
	case *array.Dictionary:
		d, ok := a.Dictionary().(array.StringLike)
		if !ok {
			return 0, fmt.Errorf("resultio: %s: column %q of type %s", path, col, c.DataType())
		}
		s = d.Value(a.GetValueIndex(i))
	default:
		return 0, fmt.Errorf("resultio: %s: column %q of type %s, want int32, int64 or string labels", path, col, c.DataType())
	}
	if classes == nil {
		return 0, fmt.Errorf("resultio: %s: column %q holds strings but the output has integer labels", path, col)
	}
	v, ok := classes[s]
	if !ok {
		return 0, fmt.Errorf("resultio: %s: column %q: label %q is not one of the output's classes", path, col, s)
	}
	return v, nil
}

func checkLabel(v int64, path, col string) (int32, error) {
	if v < 0 || v > math.MaxInt32 {
		return 0, fmt.Errorf("resultio: %s: column %q: label %d outside [0, 2^31)", path, col, v)
	}
	return int32(v), nil
}

// appendLabels appends a label column as class indices, -1 for null.
func appendLabels(dst []int32, chunks []arrow.Array, classes map[string]int32, path, col string) ([]int32, error) {
	for _, c := range chunks {
		for i := 0; i < c.Len(); i++ {
			v, err := labelOf(c, i, classes, path, col)
			if err != nil {
				return nil, err
			}
			dst = append(dst, v)
		}
	}
	return dst, nil
}

// appendGiven appends the given labels of a label or labels column, one
// offset per row; nulls (an unlabelled row, a missing annotation) are left
// out.
func appendGiven(labels, off []int32, chunks []arrow.Array, classes map[string]int32, path, col string) ([]int32, []int32, error) {
	for _, c := range chunks {
		list, isList := c.(array.ListLike)
		for i := 0; i < c.Len(); i++ {
			if !isList {
				v, err := labelOf(c, i, classes, path, col)
				if err != nil {
					return nil, nil, err
				}
				if v >= 0 {
					labels = append(labels, v)
				}
			} else if list.IsValid(i) {
				lo, hi := list.ValueOffsets(i)
				for j := lo; j < hi; j++ {
					v, err := labelOf(list.ListValues(), int(j), classes, path, col)
					if err != nil {
						return nil, nil, err
					}
					if v >= 0 {
						labels = append(labels, v)
					}
				}
			}
			off = append(off, int32(len(labels)))
		}
	}
	return labels, off, nil
}

// appendFloats appends a float32 column, NaN for null.
func appendFloats(dst []float32, chunks []arrow.Array, path, col string) ([]float32, error) {
	for _, c := range chunks {
		a, ok := c.(*array.Float32)
		if !ok {
			return nil, fmt.Errorf("resultio: %s: column %q is %s, want float32", path, col, c.DataType())
		}
		for i := 0; i < a.Len(); i++ {
			v := float32(math.NaN())
			if a.IsValid(i) {
				v = a.Value(i)
			}
			dst = append(dst, v)
		}
	}
	return dst, nil
}

// appendBools appends a bool column, false for null.
func appendBools(dst []bool, chunks []arrow.Array, path, col string) ([]bool, error) {
	for _, c := range chunks {
		b, ok := c.(*array.Boolean)
		if !ok {
			return nil, fmt.Errorf("resultio: %s: column %q is %s, want bool", path, col, c.DataType())
		}
		for i := 0; i < b.Len(); i++ {
			dst = append(dst, b.IsValid(i) && b.Value(i))
		}
	}
	return dst, nil
}
