package schemas

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Columns names the input columns. Empty fields take the defaults ColID,
// ColFeatures, ColLabel and ColLabels.
type Columns struct {
	ID, Features, Label, Labels string
}

// withDefaults fills the empty names with the defaults: ResolveInput, the
// entry every reader of item columns goes through, resolves them once.
func (c Columns) withDefaults() Columns {
	if c.ID == "" {
		c.ID = ColID
	}
	if c.Features == "" {
		c.Features = ColFeatures
	}
	if c.Label == "" {
		c.Label = ColLabel
	}
	if c.Labels == "" {
		c.Labels = ColLabels
	}
	return c
}

// Input is an input schema checked against the contract: where the columns
// are and how they are typed.
type Input struct {
	// ID, Features and Label are field indices in the schema; Label is the
	// single-label or the list-of-labels column, as Multi says.
	ID, Features, Label int
	// IDName, FeaturesName and LabelName are the column names used.
	IDName, FeaturesName, LabelName string
	IDKind                          IDKind
	LabelKind                       LabelKind
	// Multi is true for a list column of annotations.
	Multi bool
	// Float64 is true when features are stored as float64 (converted to
	// float32 on reading).
	Float64 bool
	// D is the dimension of fixed_size_list features; 0 for variable-size
	// lists, whose dimension is only known from the data.
	D int
}

// ColumnError is a problem with one input column as a whole (missing, wrong
// type); readers add the file name.
type ColumnError struct {
	Column string
	Msg    string
}

func (e *ColumnError) Error() string { return fmt.Sprintf("column %q: %s", e.Column, e.Msg) }

// Accepted input types, for the messages.
const (
	idTypes      = "int64, utf8 or large_utf8"
	featureTypes = "fixed_size_list, list or large_list of float32 or float64"
	labelTypes   = "int32, int64, utf8, large_utf8 or dictionary<utf8>"
)

// ResolveInput finds and checks the input columns of s. The label column is
// c.Label when present, else c.Labels (a list of annotations); but when only
// c.Labels was named by the caller, the list column is preferred.
func ResolveInput(s *arrow.Schema, c Columns) (Input, error) {
	preferList := c.Labels != "" && c.Label == ""
	c = c.withDefaults()
	var in Input
	var err error
	if in.ID, err = field(s, c.ID); err != nil {
		return in, err
	}
	in.IDName = c.ID
	switch s.Field(in.ID).Type.ID() {
	case arrow.INT64:
		in.IDKind = IDInt64
	case arrow.STRING, arrow.LARGE_STRING:
		in.IDKind = IDString
	default:
		return in, wrongType(c.ID, s.Field(in.ID).Type, idTypes)
	}

	if in.Features, err = field(s, c.Features); err != nil {
		return in, err
	}
	in.FeaturesName = c.Features
	ft := s.Field(in.Features).Type
	elem, ok := listElem(ft)
	if !ok {
		return in, wrongType(c.Features, ft, featureTypes)
	}
	switch elem.ID() {
	case arrow.FLOAT32:
	case arrow.FLOAT64:
		in.Float64 = true
	default:
		return in, wrongType(c.Features, ft, featureTypes)
	}
	if fsl, ok := ft.(*arrow.FixedSizeListType); ok {
		if fsl.Len() <= 0 {
			return in, &ColumnError{c.Features, fmt.Sprintf("fixed_size_list of size %d", fsl.Len())}
		}
		in.D = int(fsl.Len())
	}

	single, errSingle := field(s, c.Label)
	multi, errMulti := field(s, c.Labels)
	switch {
	case errSingle == nil && (errMulti != nil || !preferList):
		in.Label, in.LabelName = single, c.Label
	case errMulti == nil:
		in.Label, in.LabelName, in.Multi = multi, c.Labels, true
	default:
		return in, &ColumnError{c.Label, fmt.Sprintf("missing (nor is there a %q column of annotations)", c.Labels)}
	}
	lt := s.Field(in.Label).Type
	if in.Multi {
		elem, ok := listElem(lt)
		if !ok {
			return in, wrongType(in.LabelName, lt, "list of "+labelTypes)
		}
		lt = elem
	}
	if in.LabelKind, ok = labelKind(lt); !ok {
		want := labelTypes
		if in.Multi {
			want = "list of " + labelTypes
		}
		return in, wrongType(in.LabelName, s.Field(in.Label).Type, want)
	}
	return in, nil
}

// field finds the one field named name.
func field(s *arrow.Schema, name string) (int, error) {
	idx := s.FieldIndices(name)
	switch len(idx) {
	case 0:
		return -1, &ColumnError{name, "missing"}
	case 1:
		return idx[0], nil
	}
	return -1, &ColumnError{name, fmt.Sprintf("appears %d times", len(idx))}
}

func wrongType(name string, got arrow.DataType, want string) error {
	return &ColumnError{name, fmt.Sprintf("type %s, want %s", got, want)}
}

// listElem is the element type of a list-like type.
func listElem(t arrow.DataType) (arrow.DataType, bool) {
	switch t := t.(type) {
	case *arrow.FixedSizeListType:
		return t.Elem(), true
	case *arrow.ListType:
		return t.Elem(), true
	case *arrow.LargeListType:
		return t.Elem(), true
	}
	return nil, false
}

// labelKind maps an accepted label type to its kind.
func labelKind(t arrow.DataType) (LabelKind, bool) {
	switch t.ID() {
	case arrow.INT32:
		return LabelInt32, true
	case arrow.INT64:
		return LabelInt64, true
	case arrow.STRING, arrow.LARGE_STRING:
		return LabelString, true
	case arrow.DICTIONARY:
		switch t.(*arrow.DictionaryType).ValueType.ID() {
		case arrow.STRING, arrow.LARGE_STRING:
			return LabelString, true
		}
	}
	return 0, false
}
