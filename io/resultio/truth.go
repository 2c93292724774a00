package resultio

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/schemas"
)

// ColTrueLabel is the label column a truth file is read from when it has one
// (else label): a file may carry both the given and the true labels.
const ColTrueLabel = "true_label"

// Truth is a truth file's rows: row i has id IDs[i] (or StrIDs[i]) and the
// true class Labels[i], -1 where null. Ids are not checked for repeats: the
// caller matches them to its rows.
type Truth struct {
	IDs    []int64
	StrIDs []string
	Labels []int32
}

// TruthOptions says how ReadTruth reads a truth file.
type TruthOptions struct {
	// IDColumn is the id column of a Parquet / Arrow truth file. Optional,
	// default "id".
	IDColumn string
	// LabelColumn is its label column. Optional, default true_label when
	// the file has one, else label.
	LabelColumn string
	// ClassNames is the class set of string labels, which maps them to
	// class indices; nil for integer labels. An .i32 file's labels must be
	// indices into it.
	ClassNames []string
	// Mem allocates the Arrow buffers of a Parquet / Arrow truth file.
	// Required for those.
	Mem memory.Allocator
}

// ReadTruth reads the true labels of path: FILE.i32 (entry k the label of
// int64 id k; ReadI32) or a Parquet / Arrow IPC file with an id and a label
// column, such as the clean input of relabel noise.
func ReadTruth(ctx context.Context, path string, o TruthOptions) (*Truth, error) {
	if strings.HasSuffix(strings.ToLower(path), ".i32") {
		labels, err := ReadI32(ctx, path)
		if err != nil {
			return nil, err
		}
		t := &Truth{IDs: make([]int64, len(labels)), Labels: labels}
		for k, v := range labels {
			if v < 0 || (o.ClassNames != nil && int(v) >= len(o.ClassNames)) {
				return nil, fmt.Errorf("resultio: %s: label of id %d is %d, outside the class set", path, k, v)
			}
			t.IDs[k] = int64(k)
		}
		return t, nil
	}
	tbl, err := readTable(ctx, path, o.Mem)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	idCol, col := o.IDColumn, o.LabelColumn
	if idCol == "" {
		idCol = schemas.ColID
	}
	if col == "" {
		col = ColTrueLabel
		if _, ok := column(tbl, col); !ok {
			col = schemas.ColLabel
		}
	}
	ids, ok := column(tbl, idCol)
	if !ok {
		return nil, fmt.Errorf("resultio: %s: no id column %q", path, idCol)
	}
	labs, ok := column(tbl, col)
	if !ok {
		return nil, fmt.Errorf("resultio: %s: no label column %q", path, col)
	}
	t := &Truth{}
	if t.IDs, t.StrIDs, err = appendIDs(nil, nil, ids, path, idCol); err != nil {
		return nil, err
	}
	if t.Labels, err = appendLabels(nil, labs, classIndex(o.ClassNames), path, col); err != nil {
		return nil, err
	}
	return t, nil
}
