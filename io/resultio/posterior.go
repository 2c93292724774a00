package resultio

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// Posteriors are the ids and stored posteriors of one output file, in file
// order: what an incremental run needs of the rows an earlier run relabelled
// (their states, which it does not recompute).
type Posteriors struct {
	Path string
	// IDs are the rows' int64 ids, nil when the ids are strings (StrIDs).
	IDs    []int64
	StrIDs []string
	// Row i's top-C0 posterior, most probable first, is
	// Class/Prob[Off[i]:Off[i+1]], classes as indices.
	Off   []int32
	Class []int32
	Prob  []float32
}

// Len is the number of rows.
func (p *Posteriors) Len() int { return len(p.Off) - 1 }

// Key is row i's id as the pipeline keys it (schemas.Key for string ids).
func (p *Posteriors) Key(i int) int64 {
	if p.StrIDs != nil {
		return schemas.Key(p.StrIDs[i])
	}
	return p.IDs[i]
}

// ReadPosteriors reads the id and posterior columns of one output file
// (Parquet or Arrow IPC, local or blobio path). classNames maps string
// classes to indices (nil for integer labels).
func ReadPosteriors(ctx context.Context, path string, classNames []string, mem memory.Allocator) (*Posteriors, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	f, err := Open(ctx, path, mem)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{schemas.ColID, schemas.ColPosterior} {
		if _, ok := f.Column(name); !ok {
			return nil, fmt.Errorf("resultio: %s: no column %q: not an output of relabel run", path, name)
		}
	}
	classes, err := shardio.NewClassMap(classNames, 0)
	if err != nil {
		return nil, fmt.Errorf("resultio: %s: %w", path, err)
	}
	p := &Posteriors{Path: path, Off: []int32{0}}
	const pc = schemas.ColPosterior
	err = f.Scan(ctx, func(rec arrow.RecordBatch, row int64) error {
		ids, _ := col(rec, schemas.ColID)
		var err error
		if p.IDs, p.StrIDs, err = appendIDs(p.IDs, p.StrIDs, ids, path, row, schemas.ColID); err != nil {
			return err
		}
		post, _ := col(rec, pc)
		l, ok := post.(*array.List)
		if !ok {
			return rowError(path, row, pc, "of type %s, want a list of (class, prob)", post.DataType())
		}
		st, ok := l.ListValues().(*array.Struct)
		if !ok || st.NumField() != 2 {
			return rowError(path, row, pc, "of type %s, want a list of (class, prob)", post.DataType())
		}
		probs, ok := st.Field(1).(*array.Float32)
		if !ok {
			return rowError(path, row, pc, "prob of type %s, want float32", st.Field(1).DataType())
		}
		label, err := labeler(classes, st.Field(0), path, row, pc)
		if err != nil {
			return err
		}
		for i := 0; i < l.Len(); i++ {
			if !l.IsNull(i) {
				lo, hi := l.ValueOffsets(i)
				for e := int(lo); e < int(hi); e++ {
					if st.Field(0).IsNull(e) {
						return rowError(path, row+int64(i), pc, "null class")
					}
					c, bad := label(e)
					if bad != "" {
						return rowError(path, row+int64(i), pc, "%s", bad)
					}
					p.Class = append(p.Class, c)
					p.Prob = append(p.Prob, probs.Value(e))
				}
			}
			p.Off = append(p.Off, int32(len(p.Class)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.Len() != len(p.IDs)+len(p.StrIDs) {
		return nil, fmt.Errorf("resultio: %s: %d posteriors for %d ids", path, p.Len(), len(p.IDs)+len(p.StrIDs))
	}
	return p, nil
}
