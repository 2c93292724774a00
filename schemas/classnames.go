package schemas

import (
	"fmt"
	"slices"
	"strings"
)

// ParseClassNames reads a comma-separated list of class names, as the user
// gives it (the --class-names flag), and returns the names sorted: class i is
// the i-th name in byte order, whatever order they were given in. Every name
// must be non-empty (so a trailing, leading or doubled comma is an error, not
// a class named ""), without leading or trailing spaces (" dog" would
// otherwise silently match no label), and given once. The errors speak of
// "class names", in the user's terms.
func ParseClassNames(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("class names: empty list")
	}
	names := strings.Split(s, ",")
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		switch {
		case n == "" && i == len(names)-1:
			return nil, fmt.Errorf("class names: trailing comma in %q (an empty name)", s)
		case n == "":
			return nil, fmt.Errorf("class names: name %d of %q is empty", i+1, s)
		case strings.TrimSpace(n) != n:
			return nil, fmt.Errorf("class names: %q has leading or trailing space (write %q)", n, strings.TrimSpace(n))
		case seen[n]:
			return nil, fmt.Errorf("class names: %q given twice", n)
		}
		seen[n] = true
	}
	slices.Sort(names)
	return names, nil
}
