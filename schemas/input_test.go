package schemas

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestResolveInput(t *testing.T) {
	f32x4 := arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32)
	i64 := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	feat := arrow.Field{Name: "features", Type: f32x4}
	lab := arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	labs := arrow.Field{Name: "labels", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	schema := func(f ...arrow.Field) *arrow.Schema { return arrow.NewSchema(f, nil) }

	for _, tc := range []struct {
		name    string
		s       *arrow.Schema
		cols    Columns
		want    Input
		wantErr string
	}{
		{"contract", schema(i64, feat, lab), Columns{},
			Input{ID: 0, Features: 1, Label: 2, IDName: "id", FeaturesName: "features", LabelName: "label", D: 4}, ""},
		{"string ids, float64 list, dictionary labels",
			schema(arrow.Field{Name: "id", Type: arrow.BinaryTypes.LargeString}, arrow.Field{Name: "features", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)}, arrow.Field{Name: "label", Type: dict}),
			Columns{},
			Input{ID: 0, Features: 1, Label: 2, IDName: "id", FeaturesName: "features", LabelName: "label", IDKind: IDString, LabelKind: LabelString, Float64: true}, ""},
		{"annotations", schema(i64, feat, labs), Columns{},
			Input{ID: 0, Features: 1, Label: 2, IDName: "id", FeaturesName: "features", LabelName: "labels", Multi: true, D: 4}, ""},
		{"label preferred over labels", schema(i64, feat, labs, lab), Columns{},
			Input{ID: 0, Features: 1, Label: 3, IDName: "id", FeaturesName: "features", LabelName: "label", D: 4}, ""},
		{"labels named by caller", schema(i64, feat, labs, lab), Columns{Labels: "labels"},
			Input{ID: 0, Features: 1, Label: 2, IDName: "id", FeaturesName: "features", LabelName: "labels", Multi: true, D: 4}, ""},
		{"renamed columns", schema(arrow.Field{Name: "key", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "emb", Type: f32x4}, arrow.Field{Name: "y", Type: arrow.BinaryTypes.String}),
			Columns{ID: "key", Features: "emb", Label: "y"},
			Input{ID: 0, Features: 1, Label: 2, IDName: "key", FeaturesName: "emb", LabelName: "y", LabelKind: LabelString, D: 4}, ""},

		{"missing id", schema(feat, lab), Columns{}, Input{}, `column "id": missing`},
		{"missing features", schema(i64, lab), Columns{}, Input{}, `column "features": missing`},
		{"missing label", schema(i64, feat), Columns{}, Input{}, `column "label": missing (nor is there a "labels" column of annotations)`},
		{"duplicate column", schema(i64, i64, feat, lab), Columns{}, Input{}, `column "id": appears 2 times`},
		{"id float", schema(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Float64}, feat, lab), Columns{}, Input{},
			`column "id": type float64, want int64, utf8 or large_utf8`},
		{"features int", schema(i64, arrow.Field{Name: "features", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}, lab), Columns{}, Input{},
			`column "features": type list<item: int32, nullable>, want fixed_size_list, list or large_list of float32 or float64`},
		{"features scalar", schema(i64, arrow.Field{Name: "features", Type: arrow.PrimitiveTypes.Float32}, lab), Columns{}, Input{},
			`column "features": type float32, want fixed_size_list, list or large_list of float32 or float64`},
		{"label float", schema(i64, feat, arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Float32}), Columns{}, Input{},
			`column "label": type float32, want int32, int64, utf8, large_utf8 or dictionary<utf8>`},
		{"labels of float", schema(i64, feat, arrow.Field{Name: "labels", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)}), Columns{}, Input{},
			`column "labels": type list<item: float32, nullable>, want list of int32, int64, utf8, large_utf8 or dictionary<utf8>`},
		{"labels not a list", schema(i64, feat, arrow.Field{Name: "labels", Type: arrow.PrimitiveTypes.Int32}), Columns{}, Input{},
			`column "labels": type int32, want list of int32, int64, utf8, large_utf8 or dictionary<utf8>`},
		{"dictionary of ints", schema(i64, feat, arrow.Field{Name: "label", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.PrimitiveTypes.Int32}}), Columns{}, Input{},
			`column "label": type dictionary<values=int32, indices=int8, ordered=false>, want int32, int64, utf8, large_utf8 or dictionary<utf8>`},
	} {
		got, err := ResolveInput(tc.s, tc.cols)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
