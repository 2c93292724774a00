package shardio

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/relabel/relabel/schemas"
)

// ScanClassNames reads only the label column of every unit of shards and
// returns the string class set, sorted: the class names when the user gave
// none. Null labels and annotations are left out.
func ScanClassNames(ctx context.Context, shards []Shard, opts ReadOptions) ([]string, error) {
	return scanClassNames(ctx, shards, opts, func(Unit, int64) {})
}

// scanClassNames is ScanClassNames, calling seen for every label it visits.
func scanClassNames(ctx context.Context, shards []Shard, opts ReadOptions, seen func(u Unit, row int64)) ([]string, error) {
	set := map[string]struct{}{}
	err := scanLabels(ctx, shards, &opts, true, func(u Unit, row int64, col string, a arrow.Array, j int) error {
		seen(u, row)
		switch a := a.(type) {
		case array.StringLike:
			v := a.Value(j)
			if _, ok := set[v]; !ok {
				if !utf8.ValidString(v) {
					return rowError(u.Path, row, col, "label %q is not valid UTF-8", v)
				}
				set[strings.Clone(v)] = struct{}{} // v points into an Arrow buffer
			}
		case *array.Dictionary:
			v := a.Dictionary().(array.StringLike).Value(a.GetValueIndex(j))
			if _, ok := set[v]; !ok {
				if !utf8.ValidString(v) {
					return rowError(u.Path, row, col, "label %q is not valid UTF-8", v)
				}
				set[strings.Clone(v)] = struct{}{}
			}
		default:
			return rowError(u.Path, row, col, "labels of type %s", a.DataType())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(set) == 0 {
		return nil, noLabels(shards)
	}
	return sortedKeys(set), nil
}

// Labels is what one pass over the label column finds.
type Labels struct {
	// Classes is one more than the largest integer label (integer labels).
	Classes int
	// Names is the sorted string class set (string labels).
	Names []string
	// Labelled are the rows holding at least one non-null label or
	// annotation.
	Labelled int64
}

// ScanLabels reads only the label column of every unit of shards, once:
// ScanClassNames for string labels, ScanNumClasses for integer labels (and
// CheckClasses when limit > 0), and CountLabelled, in one pass, so that
// planning reads the label column no more than before the count was
// needed.
func ScanLabels(ctx context.Context, shards []Shard, opts ReadOptions, limit int) (Labels, error) {
	var l Labels
	last, lastRow := "", int64(-1)
	seen := func(u Unit, row int64) {
		// A row's annotations are visited one after another: count it once.
		if row != lastRow || u.Path != last {
			l.Labelled++
			last, lastRow = u.Path, row
		}
	}
	var err error
	if len(shards) > 0 && shards[0].Input.LabelKind == schemas.LabelString {
		l.Names, err = scanClassNames(ctx, shards, opts, seen)
	} else {
		l.Classes, err = scanNumClasses(ctx, shards, opts, limit, seen)
	}
	if err != nil {
		return Labels{}, err
	}
	return l, nil
}

// ScanNumClasses reads only the label column of every unit of shards and
// returns one more than the largest integer label: the number of classes
// when the user gave none. A negative label is an error.
func ScanNumClasses(ctx context.Context, shards []Shard, opts ReadOptions) (int, error) {
	return scanNumClasses(ctx, shards, opts, 0, func(Unit, int64) {})
}

// CheckClasses reads only the label column of every unit of shards and checks
// that every integer label is a class index in [0, c), naming the file, row
// and column of the first that is not: the check a run with --classes makes
// before its pipeline starts. Input whose labels are all null is an error.
func CheckClasses(ctx context.Context, shards []Shard, opts ReadOptions, c int) error {
	_, err := scanNumClasses(ctx, shards, opts, c, func(Unit, int64) {})
	return err
}

// scanNumClasses is ScanNumClasses, refusing labels >= limit when limit > 0,
// calling seen for every label it visits.
func scanNumClasses(ctx context.Context, shards []Shard, opts ReadOptions, limit int, seen func(u Unit, row int64)) (int, error) {
	max := int64(-1)
	err := scanLabels(ctx, shards, &opts, false, func(u Unit, row int64, col string, a arrow.Array, j int) error {
		seen(u, row)
		var v int64
		switch a := a.(type) {
		case *array.Int32:
			v = int64(a.Value(j))
		case *array.Int64:
			v = a.Value(j)
		default:
			return rowError(u.Path, row, col, "labels of type %s", a.DataType())
		}
		if v < 0 {
			return rowError(u.Path, row, col, "label %d is negative", v)
		}
		if v >= 1<<31-1 {
			return rowError(u.Path, row, col, "label %d too large for a class index", v)
		}
		if limit > 0 && v >= int64(limit) {
			return rowError(u.Path, row, col, "label %d outside [0,%d) (--classes %d)", v, limit, limit)
		}
		max = maxInt64(max, v)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if max < 0 {
		return 0, noLabels(shards)
	}
	return int(max + 1), nil
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// scanLabels calls visit for every non-null label or annotation of shards,
// with the array holding it and its index there. wantString says which labels
// the caller handles: strings, or integers.
func scanLabels(ctx context.Context, shards []Shard, opts *ReadOptions, wantString bool,
	visit func(u Unit, row int64, col string, a arrow.Array, j int) error) error {
	for _, s := range shards {
		isString := s.Input.LabelKind == schemas.LabelString
		if isString != wantString {
			return &InputError{Path: s.Path, Row: -1, Column: s.Input.LabelName,
				Msg: fmt.Sprintf("labels are %s", s.Input.LabelKind)}
		}
		for _, u := range s.Units {
			if err := ctx.Err(); err != nil {
				return err
			}
			c, err := readColumns(ctx, u, opts, func(in schemas.Input) []int { return []int{in.Label} }, -1)
			if err != nil {
				return err
			}
			// Corrupt data can make arrow-go's accessors panic (a string
			// array whose offsets pass its reader: testdata/fuzz/
			// FuzzArrowStream/2aad852dcb68e59b): an error naming the file.
			err = func() (err error) {
				defer corrupt(u.Path, &err)
				return visitLabels(u, c, visit)
			}()
			c.release()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func visitLabels(u Unit, c *columns, visit func(u Unit, row int64, col string, a arrow.Array, j int) error) error {
	row := u.Offset
	col := c.in.LabelName
	for _, chunk := range c.chunks[0] {
		if !c.in.Multi {
			for i := 0; i < chunk.Len(); i++ {
				if chunk.IsValid(i) {
					if err := visit(u, row, col, chunk, i); err != nil {
						return err
					}
				}
				row++
			}
			continue
		}
		list := chunk.(array.ListLike)
		vals := list.ListValues()
		for i := 0; i < list.Len(); i++ {
			if list.IsValid(i) {
				start, end := list.ValueOffsets(i)
				for j := int(start); j < int(end); j++ {
					if vals.IsValid(j) {
						if err := visit(u, row, col, vals, j); err != nil {
							return err
						}
					}
				}
			}
			row++
		}
	}
	return nil
}

// noLabels is the error for input whose labels are all null: relabelling
// starts from labels, so it cannot run.
func noLabels(shards []Shard) error {
	if len(shards) == 1 {
		return fmt.Errorf("shardio: %s: no labels (every label is null); relabelling needs labelled rows to start from", shards[0].Path)
	}
	return fmt.Errorf("shardio: no labels in the %d shards %s ... %s (every label is null); relabelling needs labelled rows to start from",
		len(shards), shards[0].Path, shards[len(shards)-1].Path)
}

// CountLabelled reads only the label column of every unit of shards and
// returns the rows with at least one non-null label (or annotation): the
// rows an item's kNN-generated labels can come from, which bound how many
// neighbours a run may ask for (pipelines' checkPlan). ScanLabels counts
// them in the pass that finds the class set.
func CountLabelled(ctx context.Context, shards []Shard, opts ReadOptions) (int64, error) {
	l, err := ScanLabels(ctx, shards, opts, 0)
	return l.Labelled, err
}
