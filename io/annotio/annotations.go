package annotio

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// Default column names of annotation shards.
const (
	ColID        = "id"
	ColAnnotator = "annotator"
	ColLabel     = "label"
	// ColAnnotators is the list column of an item row aligned with its labels.
	ColAnnotators = "annotators"
)

// Columns names the columns of annotation shards. Every name is required:
// DefaultColumns gives relabel's (ColID, ColAnnotator, ColLabel), and
// options' defaults start from it.
type Columns struct {
	ID, Annotator, Label string
}

// DefaultColumns names the columns ColID, ColAnnotator and ColLabel.
func DefaultColumns() Columns {
	return Columns{ID: ColID, Annotator: ColAnnotator, Label: ColLabel}
}

// check says which name is missing, if any.
func (c Columns) check() error {
	for _, n := range [][2]string{{"id", c.ID}, {"annotator", c.Annotator}, {"label", c.Label}} {
		if n[1] == "" {
			return fmt.Errorf("annotio: no %s column name (Columns; DefaultColumns has relabel's)", n[0])
		}
	}
	return nil
}

// Options configures Scan and ReadUnit. Apart from Mem it is plain data (a
// DoFn's serialized configuration).
type Options struct {
	// Columns names the columns. Required: every name (DefaultColumns).
	Columns Columns
	// Classes is the number of classes C: labels must lie in [0, C).
	// Optional, default 0: any label >= 0 (Scan's Layout.MaxLabel says
	// which C the data needs).
	Classes int
	// Mem allocates the Arrow buffers read. Optional, default
	// memory.DefaultAllocator. Not serialized.
	Mem memory.Allocator `json:"-"`
}

func (o *Options) mem() memory.Allocator {
	if o.Mem == nil {
		return memory.DefaultAllocator
	}
	return o.Mem
}

// Layout is how the annotation shards are typed (all shards agree).
type Layout struct {
	IDKind        schemas.IDKind
	AnnotatorKind schemas.IDKind
	// Rows is the number of annotations over all units whose size the
	// footers give (all but Arrow IPC streams).
	Rows int64
}

// Batch is the annotations of one unit, in file order: row k is item IDs[k]
// (StrIDs[k] for string ids, whose key is IDs[k] = schemas.Key(StrIDs[k])),
// annotator Annotators[k] (StrAnnotators[k] likewise) and label Labels[k],
// a class in [0, C).
type Batch struct {
	Shard         string
	Offset        int64
	IDKind        schemas.IDKind
	IDs           []int64
	StrIDs        []string
	AnnotatorKind schemas.IDKind
	Annotators    []int64
	StrAnnotators []string
	Labels        []int32
}

// Len is the number of annotations.
func (b *Batch) Len() int { return len(b.IDs) }

// Scan expands pattern (a blobio glob), checks every file's columns (id and
// annotator int64 or utf8, label int32 or int64; all files alike) and returns
// the units of work. Files of 0 rows are left out; none with rows is an
// error.
func Scan(ctx context.Context, pattern string, opts Options) ([]Unit, Layout, error) {
	var lay Layout
	fs, err := blobio.For(pattern)
	if err != nil {
		return nil, lay, fmt.Errorf("annotio: %w", err)
	}
	paths, err := fs.Glob(ctx, pattern)
	if err != nil {
		return nil, lay, fmt.Errorf("annotio: %w", err)
	}
	if len(paths) == 0 {
		return nil, lay, fmt.Errorf("annotio: no files match %s", pattern)
	}
	cols := opts.Columns
	if err := cols.check(); err != nil {
		return nil, lay, err
	}
	var units []Unit
	first := ""
	for _, p := range paths {
		sc, us, err := scanFile(ctx, p, opts.mem())
		if err != nil {
			return nil, lay, err
		}
		l, err := resolve(p, sc, cols)
		if err != nil {
			return nil, lay, err
		}
		if first == "" {
			first, lay.IDKind, lay.AnnotatorKind = p, l.IDKind, l.AnnotatorKind
		} else if l.IDKind != lay.IDKind {
			return nil, lay, columnError(p, cols.ID, "ids are %s, but %s has %s ids", kindName(l.IDKind), first, kindName(lay.IDKind))
		} else if l.AnnotatorKind != lay.AnnotatorKind {
			return nil, lay, columnError(p, cols.Annotator, "annotators are %s, but %s has %s annotators", kindName(l.AnnotatorKind), first, kindName(lay.AnnotatorKind))
		}
		for _, u := range us {
			lay.Rows += max(u.Rows, 0)
		}
		units = append(units, us...)
	}
	if len(units) == 0 {
		return nil, lay, fmt.Errorf("annotio: no rows in any of the %d files matching %s", len(paths), pattern)
	}
	return units, lay, nil
}

func kindName(k schemas.IDKind) string {
	if k == schemas.IDString {
		return "string"
	}
	return "int64"
}

// resolve checks the three columns of sc.
func resolve(path string, sc *arrow.Schema, c Columns) (Layout, error) {
	var l Layout
	kind := func(name string, k *schemas.IDKind) error {
		idx := sc.FieldIndices(name)
		switch len(idx) {
		case 0:
			return columnError(path, name, "missing")
		case 1:
		default:
			return columnError(path, name, "appears %d times", len(idx))
		}
		switch t := sc.Field(idx[0]).Type; t.ID() {
		case arrow.INT64:
			*k = schemas.IDInt64
		case arrow.STRING, arrow.LARGE_STRING:
			*k = schemas.IDString
		default:
			return columnError(path, name, "type %s, want int64, utf8 or large_utf8", t)
		}
		return nil
	}
	if err := kind(c.ID, &l.IDKind); err != nil {
		return l, err
	}
	if err := kind(c.Annotator, &l.AnnotatorKind); err != nil {
		return l, err
	}
	idx := sc.FieldIndices(c.Label)
	switch len(idx) {
	case 0:
		return l, columnError(path, c.Label, "missing")
	case 1:
	default:
		return l, columnError(path, c.Label, "appears %d times", len(idx))
	}
	switch t := sc.Field(idx[0]).Type; t.ID() {
	case arrow.INT32, arrow.INT64:
	default:
		return l, columnError(path, c.Label, "type %s, want int32 or int64", t)
	}
	return l, nil
}

// ReadUnit reads one unit. A null id, annotator or label, or a label outside
// [0, opts.Classes) (< 0 when Classes is 0), is an error naming the row.
func ReadUnit(ctx context.Context, u Unit, opts Options) (b *Batch, err error) {
	defer corrupt(u.Path, &err)
	cols := opts.Columns
	if err := cols.check(); err != nil {
		return nil, err
	}
	c, err := readColumns(ctx, u, []string{cols.ID, cols.Annotator, cols.Label}, opts.mem())
	if err != nil {
		return nil, err
	}
	defer c.release()
	n := c.rows()
	if u.Rows >= 0 && n != u.Rows {
		return nil, fileError(u.Path, nil, "%s unit %d has %d rows, its footer said %d", u.Format, u.Index, n, u.Rows)
	}
	b = &Batch{Shard: u.Path, Offset: u.Offset}
	if b.IDKind, b.IDs, b.StrIDs, err = readKeys(u, cols.ID, "id", c.cols[0], n); err != nil {
		return nil, err
	}
	if b.AnnotatorKind, b.Annotators, b.StrAnnotators, err = readKeys(u, cols.Annotator, "annotator", c.cols[1], n); err != nil {
		return nil, err
	}
	b.Labels = make([]int32, 0, n)
	row := u.Offset
	check := func(v int64) error {
		if v < 0 || (opts.Classes > 0 && v >= int64(opts.Classes)) {
			if opts.Classes > 0 {
				return rowError(u.Path, row, cols.Label, "label %d outside [0,%d)", v, opts.Classes)
			}
			return rowError(u.Path, row, cols.Label, "label %d is negative", v)
		}
		if v > 1<<30 {
			return rowError(u.Path, row, cols.Label, "label %d too large", v)
		}
		return nil
	}
	for _, chunk := range c.cols[2] {
		for i := 0; i < chunk.Len(); i++ {
			if chunk.IsNull(i) {
				return nil, rowError(u.Path, row, cols.Label, "null label")
			}
			var v int64
			switch a := chunk.(type) {
			case *array.Int32:
				v = int64(a.Value(i))
			case *array.Int64:
				v = a.Value(i)
			default:
				return nil, rowError(u.Path, row, cols.Label, "values of type %s", chunk.DataType())
			}
			if err := check(v); err != nil {
				return nil, err
			}
			b.Labels = append(b.Labels, int32(v))
			row++
		}
	}
	return b, nil
}

// readKeys reads an int64 or string id column: keys (schemas.Key of the
// strings) and the strings.
func readKeys(u Unit, col, what string, chunks []arrow.Array, n int64) (schemas.IDKind, []int64, []string, error) {
	keys := make([]int64, 0, n)
	var strs []string
	kind := schemas.IDInt64
	row := u.Offset
	for _, chunk := range chunks {
		switch a := chunk.(type) {
		case *array.Int64:
			for i, v := range a.Int64Values() {
				if a.IsNull(i) {
					return 0, nil, nil, rowError(u.Path, row, col, "null %s", what)
				}
				keys = append(keys, v)
				row++
			}
		case array.StringLike:
			kind = schemas.IDString
			if strs == nil {
				strs = make([]string, 0, n)
			}
			for i := 0; i < a.Len(); i++ {
				if a.IsNull(i) {
					return 0, nil, nil, rowError(u.Path, row, col, "null %s", what)
				}
				s := strings.Clone(a.Value(i)) // a.Value points into a buffer released after reading
				if !utf8.ValidString(s) {
					return 0, nil, nil, rowError(u.Path, row, col, "%s %q is not valid UTF-8", what, s)
				}
				strs = append(strs, s)
				keys = append(keys, schemas.Key(s))
				row++
			}
		default:
			return 0, nil, nil, rowError(u.Path, row, col, "values of type %s, want int64 or utf8", chunk.DataType())
		}
	}
	return kind, keys, strs, nil
}

// MaxLabel reads every unit's labels and returns the largest (-1 when
// there are none): label-only mode's class count is one more, unless given.
func MaxLabel(ctx context.Context, units []Unit, opts Options) (int32, error) {
	top := int32(-1)
	for _, u := range units {
		b, err := ReadUnit(ctx, u, opts)
		if err != nil {
			return 0, err
		}
		for _, l := range b.Labels {
			top = max(top, l)
		}
	}
	return top, nil
}
