package schemas

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// String names the kind as its Arrow type does.
func (k IDKind) String() string {
	switch k {
	case IDInt64:
		return "int64"
	case IDString:
		return "utf8"
	}
	return "IDKind(" + strconv.Itoa(int(k)) + ")"
}

// String names the kind as its Arrow type does.
func (k LabelKind) String() string {
	switch k {
	case LabelInt32:
		return "int32"
	case LabelInt64:
		return "int64"
	case LabelString:
		return "utf8"
	}
	return "LabelKind(" + strconv.Itoa(int(k)) + ")"
}

// IDType is the Arrow type of the output id column.
func IDType(k IDKind) arrow.DataType {
	if k == IDString {
		return arrow.BinaryTypes.String
	}
	return arrow.PrimitiveTypes.Int64
}

// LabelType is the Arrow type of the output label, clean_label and posterior
// class columns. String labels come out as utf8 whatever their input encoding
// (large_utf8, dictionary<utf8>): readers of the output need one type to expect.
func LabelType(k LabelKind) arrow.DataType {
	switch k {
	case LabelInt64:
		return arrow.PrimitiveTypes.Int64
	case LabelString:
		return arrow.BinaryTypes.String
	}
	return arrow.PrimitiveTypes.Int32
}

// PosteriorType is list<struct<class: label type, prob: float32>>: each row's
// top-C0 posterior, most probable first.
func PosteriorType(k LabelKind) arrow.DataType {
	return arrow.ListOfNonNullable(arrow.StructOf(
		arrow.Field{Name: FieldClass, Type: LabelType(k)},
		arrow.Field{Name: FieldProb, Type: arrow.PrimitiveTypes.Float32},
	))
}

// OutputSchema is the schema of an output shard: id; label (or labels, a list,
// when the input had several annotations per row) as given, null when the
// input label was null; clean_label and clean_prob (null for an unlabelled
// row that no labelled row reached through its neighbours within the rounds:
// nothing is known of it); given_label_prob (null when unlabelled); changed;
// posterior (empty when clean_label is null). meta becomes the schema metadata, keys
// sorted so that equal options give byte-identical files.
func OutputSchema(id IDKind, label LabelKind, multi bool, meta map[string]string) *arrow.Schema {
	lt := LabelType(label)
	given := arrow.Field{Name: ColLabel, Type: lt, Nullable: true}
	if multi {
		given = arrow.Field{Name: ColLabels, Type: arrow.ListOf(lt), Nullable: true}
	}
	fields := []arrow.Field{
		{Name: ColID, Type: IDType(id)},
		given,
		{Name: ColCleanLabel, Type: lt, Nullable: true},
		{Name: ColCleanProb, Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: ColGivenLabelProb, Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: ColChanged, Type: arrow.FixedWidthTypes.Boolean},
		{Name: ColPosterior, Type: PosteriorType(label)},
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = meta[k]
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md)
}

// Schema metadata keys of output shards.
const (
	MetaVersion = "relabel.version"
	MetaSeed    = "relabel.seed"
	// MetaClassNames holds the sorted class names of string labels, a JSON
	// array; absent for integer labels.
	MetaClassNames = "relabel.class_names"
	// MetaOptionPrefix + option name holds each option's value, as its flag
	// would spell it.
	MetaOptionPrefix = "relabel.option."
)

// Metadata builds the output schema metadata: version, seed, every option
// (name -> value as a flag spells it) and, for string labels, the class names.
func Metadata(version string, seed uint64, options map[string]string, classNames []string) map[string]string {
	md := make(map[string]string, len(options)+3)
	md[MetaVersion] = version
	md[MetaSeed] = strconv.FormatUint(seed, 10)
	for k, v := range options {
		md[MetaOptionPrefix+k] = v
	}
	if classNames != nil {
		b, err := json.Marshal(classNames)
		if err != nil {
			panic(err) // a []string always marshals
		}
		md[MetaClassNames] = string(b)
	}
	return md
}

// ClassNamesFromMetadata reads MetaClassNames back; nil when absent.
func ClassNamesFromMetadata(md map[string]string) ([]string, error) {
	s, ok := md[MetaClassNames]
	if !ok {
		return nil, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(s), &names); err != nil {
		return nil, fmt.Errorf("schemas: metadata %q: %w", MetaClassNames, err)
	}
	return names, nil
}

// InputSchema is the canonical form of an input shard, as relabel's own tools
// (test data, examples) write it: id; features fixed_size_list<float32>[d];
// label of the given kind, nullable, or labels, a list of them.
func InputSchema(id IDKind, label LabelKind, multi bool, d int) *arrow.Schema {
	lt := LabelType(label)
	lab := arrow.Field{Name: ColLabel, Type: lt, Nullable: true}
	if multi {
		lab = arrow.Field{Name: ColLabels, Type: arrow.ListOf(lt), Nullable: true}
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: ColID, Type: IDType(id)},
		{Name: ColFeatures, Type: arrow.FixedSizeListOfNonNullable(int32(d), arrow.PrimitiveTypes.Float32)},
		lab,
	}, nil)
}
