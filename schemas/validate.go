package schemas

import "fmt"

// Validate checks that r's slices agree in length with each other (a
// programmer's error when they do not, but one that would otherwise surface
// as a panic far from its cause).
func (r *Rows) Validate() error {
	n := len(r.IDs)
	if err := checkStrIDs(r.IDKind, r.StrIDs, n); err != nil {
		return fmt.Errorf("schemas: Rows %s offset %d: %w", r.Shard, r.Offset, err)
	}
	if r.D < 0 || len(r.Features) != n*r.D {
		return fmt.Errorf("schemas: Rows %s offset %d: %d features for %d rows of dimension %d", r.Shard, r.Offset, len(r.Features), n, r.D)
	}
	if err := checkOffsets(r.LabelOff, n, len(r.Labels), "LabelOff"); err != nil {
		return fmt.Errorf("schemas: Rows %s offset %d: %w", r.Shard, r.Offset, err)
	}
	return nil
}

// Validate checks that c's slices agree in length with each other.
func (c *Cleaned) Validate() error {
	n := len(c.IDs)
	wrap := func(err error) error { return fmt.Errorf("schemas: Cleaned %s offset %d: %w", c.Shard, c.Offset, err) }
	if err := checkStrIDs(c.IDKind, c.StrIDs, n); err != nil {
		return wrap(err)
	}
	if err := checkOffsets(c.LabelOff, n, len(c.Labels), "LabelOff"); err != nil {
		return wrap(err)
	}
	for _, f := range []struct {
		name string
		len  int
	}{
		{"CleanLabel", len(c.CleanLabel)},
		{"CleanProb", len(c.CleanProb)},
		{"GivenProb", len(c.GivenProb)},
		{"Changed", len(c.Changed)},
	} {
		if f.len != n {
			return wrap(fmt.Errorf("%d %s for %d rows", f.len, f.name, n))
		}
	}
	if len(c.PostClass) != len(c.PostProb) {
		return wrap(fmt.Errorf("%d PostClass but %d PostProb", len(c.PostClass), len(c.PostProb)))
	}
	if err := checkOffsets(c.PostOff, n, len(c.PostClass), "PostOff"); err != nil {
		return wrap(err)
	}
	return nil
}

func checkStrIDs(k IDKind, s []string, n int) error {
	switch k {
	case IDInt64:
		if s != nil {
			return fmt.Errorf("%d StrIDs for int64 ids", len(s))
		}
	case IDString:
		if len(s) != n {
			return fmt.Errorf("%d StrIDs for %d rows", len(s), n)
		}
	default:
		return fmt.Errorf("IDKind %d", k)
	}
	return nil
}

// checkOffsets checks a CSR offset array: n+1 non-decreasing entries from 0 to
// total (nil allowed for an empty batch).
func checkOffsets(off []int32, n, total int, name string) error {
	if n == 0 && len(off) == 0 && total == 0 {
		return nil
	}
	if len(off) != n+1 {
		return fmt.Errorf("%d %s for %d rows, want %d", len(off), name, n, n+1)
	}
	if off[0] != 0 || int(off[n]) != total {
		return fmt.Errorf("%s runs from %d to %d, want 0 to %d", name, off[0], off[n], total)
	}
	for i := 1; i <= n; i++ {
		if off[i] < off[i-1] {
			return fmt.Errorf("%s decreases at row %d", name, i-1)
		}
	}
	return nil
}
