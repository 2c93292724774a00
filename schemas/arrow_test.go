package schemas

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestOutputSchema(t *testing.T) {
	for _, tc := range []struct {
		name  string
		id    IDKind
		label LabelKind
		multi bool
		want  string // the schema's field list, as arrow prints it
	}{
		{"int64 ids, int32 label", IDInt64, LabelInt32, false,
			"id: int64, label: int32 (nullable), clean_label: int32 (nullable), clean_prob: float32 (nullable), given_label_prob: float32 (nullable), changed: bool, posterior: list<item: struct<class: int32, prob: float32>>"},
		{"string ids, string label", IDString, LabelString, false,
			"id: utf8, label: utf8 (nullable), clean_label: utf8 (nullable), clean_prob: float32 (nullable), given_label_prob: float32 (nullable), changed: bool, posterior: list<item: struct<class: utf8, prob: float32>>"},
		{"int64 labels list", IDInt64, LabelInt64, true,
			"id: int64, labels: list<item: int64, nullable> (nullable), clean_label: int64 (nullable), clean_prob: float32 (nullable), given_label_prob: float32 (nullable), changed: bool, posterior: list<item: struct<class: int64, prob: float32>>"},
	} {
		s := OutputSchema(tc.id, tc.label, tc.multi, nil)
		got := ""
		for i, f := range s.Fields() {
			if i > 0 {
				got += ", "
			}
			got += f.Name + ": " + f.Type.String()
			if f.Nullable {
				got += " (nullable)"
			}
		}
		if got != tc.want {
			t.Errorf("%s: fields\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if !arrow.TypeEqual(s.Field(2).Type, LabelType(tc.label)) {
			t.Errorf("%s: clean_label %s, want the label type %s", tc.name, s.Field(2).Type, LabelType(tc.label))
		}
	}
}

func TestMetadata(t *testing.T) {
	md := Metadata("v0.1.0", 42, map[string]string{"k": "10", "mu": "0.5"}, []string{"cat", "dog"})
	want := map[string]string{
		MetaVersion:             "v0.1.0",
		MetaSeed:                "42",
		MetaOptionPrefix + "k":  "10",
		MetaOptionPrefix + "mu": "0.5",
		MetaClassNames:          `["cat","dog"]`,
	}
	if !reflect.DeepEqual(md, want) {
		t.Errorf("Metadata = %v, want %v", md, want)
	}
	s := OutputSchema(IDInt64, LabelString, false, md)
	keys := s.Metadata().Keys()
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("schema metadata keys not sorted: %v", keys)
		}
	}
	names, err := ClassNamesFromMetadata(md)
	if err != nil || !reflect.DeepEqual(names, []string{"cat", "dog"}) {
		t.Errorf("ClassNamesFromMetadata = %v, %v", names, err)
	}
	if names, err := ClassNamesFromMetadata(Metadata("v", 1, nil, nil)); names != nil || err != nil {
		t.Errorf("ClassNamesFromMetadata without names = %v, %v; want nil, nil", names, err)
	}
	if _, err := ClassNamesFromMetadata(map[string]string{MetaClassNames: "[1"}); err == nil {
		t.Error("ClassNamesFromMetadata of bad JSON: no error")
	}
}
