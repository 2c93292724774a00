package resultio

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
	tbl, err := readTable(ctx, path, mem)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	p := &Posteriors{Path: path, Off: []int32{0}}
	ids, ok := column(tbl, schemas.ColID)
	if !ok {
		return nil, fmt.Errorf("resultio: %s: no column %q: not an output of relabel run", path, schemas.ColID)
	}
	if p.IDs, p.StrIDs, err = appendIDs(nil, nil, ids, path, schemas.ColID); err != nil {
		return nil, err
	}
	post, ok := column(tbl, schemas.ColPosterior)
	if !ok {
		return nil, fmt.Errorf("resultio: %s: no column %q: not an output of relabel run", path, schemas.ColPosterior)
	}
	classes := classIndex(classNames)
	for _, ch := range post {
		l, ok := ch.(*array.List)
		if !ok {
			return nil, fmt.Errorf("resultio: %s: column %q of type %s, want a list of (class, prob)", path, schemas.ColPosterior, ch.DataType())
		}
		st, ok := l.ListValues().(*array.Struct)
		if !ok || st.NumField() != 2 {
			return nil, fmt.Errorf("resultio: %s: column %q of type %s, want a list of (class, prob)", path, schemas.ColPosterior, ch.DataType())
		}
		probs, ok := st.Field(1).(*array.Float32)
		if !ok {
			return nil, fmt.Errorf("resultio: %s: column %q: prob of type %s, want float32", path, schemas.ColPosterior, st.Field(1).DataType())
		}
		for i := 0; i < l.Len(); i++ {
			if !l.IsNull(i) {
				lo, hi := l.ValueOffsets(i)
				for e := int(lo); e < int(hi); e++ {
					c, err := labelOf(st.Field(0), e, classes, path, schemas.ColPosterior)
					if err != nil {
						return nil, err
					}
					p.Class = append(p.Class, c)
					p.Prob = append(p.Prob, probs.Value(e))
				}
			}
			p.Off = append(p.Off, int32(len(p.Class)))
		}
	}
	if p.Len() != len(p.IDs)+len(p.StrIDs) {
		return nil, fmt.Errorf("resultio: %s: %d posteriors for %d ids", path, p.Len(), len(p.IDs)+len(p.StrIDs))
	}
	return p, nil
}
