package schemas

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	okRows, okCleaned := fullRows(), fullCleaned()
	for _, tc := range []struct {
		name string
		v    interface{ Validate() error }
		want string // "" for valid
	}{
		{"rows ok", &okRows, ""},
		{"rows zero", &Rows{}, ""},
		{"cleaned ok", &okCleaned, ""},
		{"cleaned zero", &Cleaned{}, ""},
		{"rows short features", func() *Rows { r := fullRows(); r.Features = r.Features[1:]; return &r }(), "5 features for 3 rows of dimension 2"},
		{"rows missing StrIDs", func() *Rows { r := fullRows(); r.StrIDs = nil; return &r }(), "0 StrIDs for 3 rows"},
		{"rows StrIDs for int ids", func() *Rows { r := fullRows(); r.IDKind = IDInt64; return &r }(), "3 StrIDs for int64 ids"},
		{"rows short LabelOff", func() *Rows { r := fullRows(); r.LabelOff = r.LabelOff[:3]; return &r }(), "3 LabelOff for 3 rows, want 4"},
		{"rows LabelOff end", func() *Rows { r := fullRows(); r.Labels = r.Labels[:3]; return &r }(), "LabelOff runs from 0 to 4, want 0 to 3"},
		{"rows LabelOff decreasing", func() *Rows { r := fullRows(); r.LabelOff = []int32{0, 3, 2, 4}; return &r }(), "LabelOff decreases at row 1"},
		{"cleaned short Changed", func() *Cleaned { c := fullCleaned(); c.Changed = c.Changed[:2]; return &c }(), "2 Changed for 3 rows"},
		{"cleaned PostProb", func() *Cleaned { c := fullCleaned(); c.PostProb = c.PostProb[:4]; return &c }(), "5 PostClass but 4 PostProb"},
		{"cleaned PostOff", func() *Cleaned { c := fullCleaned(); c.PostOff = []int32{0, 1, 2, 4}; return &c }(), "PostOff runs from 0 to 4, want 0 to 5"},
	} {
		err := tc.v.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
