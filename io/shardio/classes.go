package shardio

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/relabel/relabel/schemas"
)

// ClassMap maps label values to class indices: integer labels (int32,
// int64) as they are, checked against the number of classes; string labels
// (plain or dictionary-encoded) through the sorted class names. It is the
// one label decoder of relabel's files: the input shards here, and the
// outputs, truth files and report through io/resultio and io/reportio.
type ClassMap struct {
	classes int64
	names   []string
	index   map[string]int32
}

// NewClassMap returns the map of string labels names (class i is names[i];
// each once),
// or, when names is nil, of integer labels in [0, classes); classes <= 0
// bounds them only by [0, 2^31), for a reader that does not know the count
// (an output whose metadata does not record it).
func NewClassMap(names []string, classes int) (*ClassMap, error) {
	m := &ClassMap{classes: int64(classes), names: names}
	if names == nil {
		if classes <= 0 {
			m.classes = math.MaxInt32 + 1
		}
		return m, nil
	}
	m.index = make(map[string]int32, len(names))
	for i, s := range names {
		if _, dup := m.index[s]; dup {
			return nil, fmt.Errorf("shardio: class names: %q given twice", s)
		}
		m.index[s] = int32(i)
	}
	return m, nil
}

// newClassMap is the map of an input's labels: its kind says which of
// opts.Classes and opts.ClassNames applies, and each is required then.
func newClassMap(path string, in schemas.Input, opts *ReadOptions) (*ClassMap, error) {
	if in.LabelKind != schemas.LabelString {
		if opts.Classes <= 0 {
			return nil, &InputError{Path: path, Row: -1, Column: in.LabelName,
				Msg: fmt.Sprintf("integer labels need the number of classes (ReadOptions.Classes = %d)", opts.Classes)}
		}
		return NewClassMap(nil, opts.Classes)
	}
	if len(opts.ClassNames) == 0 {
		return nil, &InputError{Path: path, Row: -1, Column: in.LabelName,
			Msg: "string labels need the class names (ReadOptions.ClassNames; ScanClassNames collects them)"}
	}
	// A run's classes are its names in byte order (schemas.ParseClassNames).
	for i := 1; i < len(opts.ClassNames); i++ {
		if opts.ClassNames[i-1] > opts.ClassNames[i] {
			return nil, fmt.Errorf("shardio: ReadOptions.ClassNames not sorted: %q before %q", opts.ClassNames[i-1], opts.ClassNames[i])
		}
	}
	return NewClassMap(opts.ClassNames, 0)
}

// Labeler returns the mapping of the values of a (a label array, or the
// child array of a list of annotations) to class indices: the class, or a
// message saying why the value is not a class. Nulls are the caller's.
func (m *ClassMap) Labeler(a arrow.Array) (func(j int) (int32, string), error) {
	intClass := func(v int64) (int32, string) {
		if m.names != nil {
			return 0, fmt.Sprintf("integer label %d, but the classes are named (string labels)", v)
		}
		if v < 0 || v >= m.classes {
			return 0, fmt.Sprintf("label %d outside [0,%d)", v, m.classes)
		}
		return int32(v), ""
	}
	strClass := func(s string) (int32, string) {
		if m.names == nil {
			return 0, fmt.Sprintf("string label %q, but the labels are integers", s)
		}
		c, ok := m.index[s]
		if !ok {
			return 0, fmt.Sprintf("label %q not in the class set (%d classes)", s, len(m.names))
		}
		return c, ""
	}
	switch a := a.(type) {
	case *array.Int32:
		return func(j int) (int32, string) { return intClass(int64(a.Value(j))) }, nil
	case *array.Int64:
		return func(j int) (int32, string) { return intClass(a.Value(j)) }, nil
	case array.StringLike:
		return func(j int) (int32, string) { return strClass(a.Value(j)) }, nil
	case *array.Dictionary:
		dict, ok := a.Dictionary().(array.StringLike)
		if !ok {
			return nil, fmt.Errorf("dictionary of %s", a.Dictionary().DataType())
		}
		// Map each dictionary entry once, not each row.
		cls := make([]int32, dict.Len())
		for k := range cls {
			cls[k] = -1
			if dict.IsValid(k) {
				if c, ok := m.index[dict.Value(k)]; ok {
					cls[k] = c
				}
			}
		}
		return func(j int) (int32, string) {
			k := a.GetValueIndex(j)
			if cls[k] < 0 {
				return strClass(dict.Value(k))
			}
			return cls[k], ""
		}, nil
	}
	return nil, fmt.Errorf("labels of type %s", a.DataType())
}
