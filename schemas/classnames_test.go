package schemas

import (
	"slices"
	"testing"
)

func TestParseClassNames(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{name: "one", in: "cat", want: []string{"cat"}},
		{name: "sorted on return", in: "dog,cat,bird", want: []string{"bird", "cat", "dog"}},
		{name: "inner spaces kept", in: "sea lion,cat", want: []string{"cat", "sea lion"}},
		{name: "empty", in: "", err: `class names: empty list`},
		{name: "trailing comma", in: "cat,dog,", err: `class names: trailing comma in "cat,dog," (an empty name)`},
		{name: "leading comma", in: ",cat", err: `class names: name 1 of ",cat" is empty`},
		{name: "doubled comma", in: "cat,,dog", err: `class names: name 2 of "cat,,dog" is empty`},
		{name: "duplicate", in: "a,b,a", err: `class names: "a" given twice`},
		{name: "padded", in: "cat, dog", err: `class names: " dog" has leading or trailing space (write "dog")`},
	} {
		got, err := ParseClassNames(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: ParseClassNames(%q) error %v, want %s", tc.name, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: ParseClassNames(%q) = %q, %v; want %q", tc.name, tc.in, got, err, tc.want)
		}
	}
}
