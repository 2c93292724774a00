package schemas

// GivenLabel is the label an item was given: its single label, or the
// majority of its annotations (ties to the lower class; Unlabelled ones
// left out), or Unlabelled when it has none. The run calibrates and
// reports against it, and the report recounts it from the output: one rule
// for both.
func GivenLabel(labels []int32) int32 {
	switch len(labels) {
	case 0:
		return Unlabelled
	case 1:
		return labels[0]
	}
	best, bestN := int32(Unlabelled), 0
	for i, l := range labels {
		if l < 0 {
			continue
		}
		n := 0
		for _, m := range labels[i:] {
			if m == l {
				n++
			}
		}
		if n > bestN || (n == bestN && l < best) {
			best, bestN = l, n
		}
	}
	return best
}
