package resultio

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/relabel/relabel/io/shardio"
)

// col returns rec's column named name, false when it has none (or two).
func col(rec arrow.RecordBatch, name string) (arrow.Array, bool) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, false
	}
	return rec.Column(idx[0]), true
}

// rowError names the file, row and column a value is wrong at.
func rowError(path string, row int64, col, format string, args ...any) error {
	return fmt.Errorf("resultio: %s row %d column %q: %s", path, row, col, fmt.Sprintf(format, args...))
}

// appendIDs appends an id column, whose first row is file row row, to ints
// (int64 ids) or strs (string ids). The first value decides which; every id
// must be of that type and non-null.
func appendIDs(ints []int64, strs []string, a arrow.Array, path string, row int64, col string) ([]int64, []string, error) {
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			return nil, nil, rowError(path, row+int64(i), col, "null id")
		}
		switch a := a.(type) {
		case *array.Int64:
			if strs != nil {
				return nil, nil, rowError(path, row+int64(i), col, "int64 id after string ids")
			}
			ints = append(ints, a.Value(i))
		case array.StringLike:
			if ints != nil {
				return nil, nil, rowError(path, row+int64(i), col, "string id after int64 ids")
			}
			strs = append(strs, strings.Clone(a.Value(i)))
		default:
			return nil, nil, rowError(path, row, col, "ids of type %s, want int64 or string", a.DataType())
		}
	}
	return ints, strs, nil
}

// labeler is m's labeler of a, its error naming path, row and col.
func labeler(m *shardio.ClassMap, a arrow.Array, path string, row int64, col string) (func(j int) (int32, string), error) {
	l, err := m.Labeler(a)
	if err != nil {
		return nil, rowError(path, row, col, "%v, want int32, int64 or string labels", err)
	}
	return l, nil
}

// appendLabels appends a label column as class indices, -1 for null.
func appendLabels(dst []int32, a arrow.Array, m *shardio.ClassMap, path string, row int64, col string) ([]int32, error) {
	label, err := labeler(m, a, path, row, col)
	if err != nil {
		return nil, err
	}
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			dst = append(dst, -1)
			continue
		}
		v, bad := label(i)
		if bad != "" {
			return nil, rowError(path, row+int64(i), col, "%s", bad)
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// appendGiven appends the given labels of a label or labels column, one
// offset per row; nulls (an unlabelled row, a missing annotation) are left
// out.
func appendGiven(labels, off []int32, a arrow.Array, m *shardio.ClassMap, path string, row int64, col string) ([]int32, []int32, error) {
	vals := a
	list, isList := a.(array.ListLike)
	if isList {
		vals = list.ListValues()
	}
	label, err := labeler(m, vals, path, row, col)
	if err != nil {
		return nil, nil, err
	}
	add := func(i, j int) error {
		if vals.IsNull(j) {
			return nil
		}
		v, bad := label(j)
		if bad != "" {
			return rowError(path, row+int64(i), col, "%s", bad)
		}
		labels = append(labels, v)
		return nil
	}
	for i := 0; i < a.Len(); i++ {
		if !isList {
			if err := add(i, i); err != nil {
				return nil, nil, err
			}
		} else if list.IsValid(i) {
			lo, hi := list.ValueOffsets(i)
			for j := lo; j < hi; j++ {
				if err := add(i, int(j)); err != nil {
					return nil, nil, err
				}
			}
		}
		off = append(off, int32(len(labels)))
	}
	return labels, off, nil
}

// appendFloats appends a float32 column, NaN for null.
func appendFloats(dst []float32, a arrow.Array, path string, row int64, col string) ([]float32, error) {
	f, ok := a.(*array.Float32)
	if !ok {
		return nil, rowError(path, row, col, "%s, want float32", a.DataType())
	}
	nan := float32(math.NaN())
	for i := 0; i < f.Len(); i++ {
		v := nan
		if f.IsValid(i) {
			v = f.Value(i)
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// appendBools appends a bool column, false for null.
func appendBools(dst []bool, a arrow.Array, path string, row int64, col string) ([]bool, error) {
	b, ok := a.(*array.Boolean)
	if !ok {
		return nil, rowError(path, row, col, "%s, want bool", a.DataType())
	}
	for i := 0; i < b.Len(); i++ {
		dst = append(dst, b.IsValid(i) && b.Value(i))
	}
	return dst, nil
}
