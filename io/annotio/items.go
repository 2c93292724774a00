package annotio

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// ItemAnnotators are the annotators column of one unit of item shards:
// row i's annotators are Key/Name[Off[i]:Off[i+1]], aligned with its
// labels list (Name only for string annotator ids).
type ItemAnnotators struct {
	Kind schemas.IDKind
	Off  []int32
	Key  []int64
	Name []string
}

// HasColumn reports whether the file at path has a column named column
// (an item shard's annotators column is used when present).
func HasColumn(ctx context.Context, path, column string) (bool, error) {
	sc, _, err := scanFile(ctx, path, memory.DefaultAllocator)
	if err != nil {
		return false, err
	}
	return len(sc.FieldIndices(column)) > 0, nil
}

// ReadItemAnnotators reads the annotators list column (list, large_list or
// fixed_size_list of int64 or utf8) of unit u. A null list reads as no
// annotators; a null entry is an error naming the row.
func ReadItemAnnotators(ctx context.Context, u shardio.Unit, column string, mem memory.Allocator) (ia *ItemAnnotators, err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	au := Unit{Path: u.Path, Format: u.Format, Index: u.Index, Offset: u.Offset, Rows: u.Rows}
	c, err := readColumns(ctx, au, []string{column}, mem)
	if err != nil {
		return nil, err
	}
	defer c.release()
	defer corrupt(u.Path, &err)
	ia = &ItemAnnotators{Off: make([]int32, 1, c.rows()+1)}
	row := u.Offset
	for _, chunk := range c.cols[0] {
		l, ok := chunk.(array.ListLike)
		if !ok {
			return nil, columnError(u.Path, column, "type %s, want a list of int64 or utf8 (aligned with the labels)", chunk.DataType())
		}
		vals := l.ListValues()
		switch vals.DataType().ID() {
		case arrow.INT64:
			ia.Kind = schemas.IDInt64
		case arrow.STRING, arrow.LARGE_STRING:
			ia.Kind = schemas.IDString
		default:
			return nil, columnError(u.Path, column, "type %s, want a list of int64 or utf8 (aligned with the labels)", chunk.DataType())
		}
		for i := 0; i < l.Len(); i++ {
			if !l.IsNull(i) {
				start, end := l.ValueOffsets(i)
				for j := start; j < end; j++ {
					if vals.IsNull(int(j)) {
						return nil, rowError(u.Path, row, column, "null annotator at position %d", j-start)
					}
					switch v := vals.(type) {
					case *array.Int64:
						ia.Key = append(ia.Key, v.Value(int(j)))
					case array.StringLike:
						s := strings.Clone(v.Value(int(j)))
						ia.Name = append(ia.Name, s)
						ia.Key = append(ia.Key, schemas.Key(s))
					}
				}
			}
			ia.Off = append(ia.Off, int32(len(ia.Key)))
			row++
		}
	}
	return ia, nil
}
