package resultio

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// ColTrueLabel is the label column a truth file is read from when it has one
// (else label): a file may carry both the given and the true labels.
const ColTrueLabel = "true_label"

// Truth is a truth file's rows: row i has id IDs[i] (or StrIDs[i]) and the
// true class Labels[i], -1 where null. Ids are not checked for repeats by
// ReadTruth; ByID checks them when it indexes the rows.
type Truth struct {
	// Path is the file read.
	Path   string
	IDs    []int64
	StrIDs []string
	Labels []int32
}

// Key is a row id as a map key: an int64 or (IsStr) a string.
type Key struct {
	Int   int64
	Str   string
	IsStr bool
}

func (k Key) String() string {
	if k.IsStr {
		return strconv.Quote(k.Str)
	}
	return strconv.FormatInt(k.Int, 10)
}

// ByID maps every id of t that has a true label to it (a null label is
// left out); a repeated id is an error naming its row.
func (t *Truth) ByID() (map[Key]int32, error) {
	out := make(map[Key]int32, len(t.Labels))
	for i, v := range t.Labels {
		if v < 0 {
			continue
		}
		var k Key
		if t.StrIDs != nil {
			k = Key{Str: t.StrIDs[i], IsStr: true}
		} else {
			k = Key{Int: t.IDs[i]}
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("resultio: %s row %d: id %s repeated", t.Path, i, k)
		}
		out[k] = v
	}
	return out, nil
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
	// Classes, when positive, bounds every true label to [0, Classes)
	// (the class count of integer labels). Optional, default unchecked.
	Classes int
	// Rows, when positive, is the number of labels the file must hold (an
	// .i32 file aligned with a dataset's rows). Optional, default
	// unchecked.
	Rows int
	// Mem allocates the Arrow buffers of a Parquet / Arrow truth file.
	// Required for those.
	Mem memory.Allocator
}

// ReadTruth reads the true labels of path: FILE.i32 (entry k the label of
// int64 id k; ReadI32) or a Parquet / Arrow IPC file with an id and a label
// column, such as the clean input of relabel noise.
func ReadTruth(ctx context.Context, path string, o TruthOptions) (*Truth, error) {
	t, err := readTruth(ctx, path, o)
	if err != nil {
		return nil, err
	}
	t.Path = path
	if o.Rows > 0 && len(t.Labels) != o.Rows {
		return nil, fmt.Errorf("resultio: %s: %d labels, want %d", path, len(t.Labels), o.Rows)
	}
	if o.Classes > 0 {
		for i, l := range t.Labels {
			if l >= int32(o.Classes) {
				return nil, fmt.Errorf("resultio: %s label %d: %d outside [0,%d)", path, i, l, o.Classes)
			}
		}
	}
	return t, nil
}

// readTruth is ReadTruth without the optional checks.
func readTruth(ctx context.Context, path string, o TruthOptions) (*Truth, error) {
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
	f, err := Open(ctx, path, o.Mem)
	if err != nil {
		return nil, err
	}
	idCol, lc := o.IDColumn, o.LabelColumn
	if idCol == "" {
		idCol = schemas.ColID
	}
	if lc == "" {
		lc = ColTrueLabel
		if _, ok := f.Column(lc); !ok {
			lc = schemas.ColLabel
		}
	}
	if _, ok := f.Column(idCol); !ok {
		return nil, fmt.Errorf("resultio: %s: no id column %q", path, idCol)
	}
	if _, ok := f.Column(lc); !ok {
		return nil, fmt.Errorf("resultio: %s: no label column %q", path, lc)
	}
	classes, err := shardio.NewClassMap(o.ClassNames, 0)
	if err != nil {
		return nil, fmt.Errorf("resultio: %s: %w", path, err)
	}
	t := &Truth{}
	err = f.Scan(ctx, func(rec arrow.RecordBatch, row int64) error {
		ids, _ := col(rec, idCol)
		labs, _ := col(rec, lc)
		var err error
		if t.IDs, t.StrIDs, err = appendIDs(t.IDs, t.StrIDs, ids, path, row, idCol); err != nil {
			return err
		}
		t.Labels, err = appendLabels(t.Labels, labs, classes, path, row, lc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}
