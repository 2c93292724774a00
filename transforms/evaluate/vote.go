package evaluate

import "fmt"

// MajorityVote returns, for each item i, the most frequent label among
// labels[off[i]:off[i+1]], ties broken towards the lowest class (a fixed,
// order-free rule, as scipy's mode and np.argmax of counts use), and -1 for
// an item without labels. Labels must lie in [0,C); off has one entry per
// item plus one and is non-decreasing.
func MajorityVote(labels, off []int32, C int) []int32 {
	if len(off) == 0 {
		panic("evaluate: MajorityVote: empty offsets (want items+1 entries)")
	}
	out := make([]int32, len(off)-1)
	count := make([]int32, C)
	for i := range out {
		clear(count)
		for _, l := range labels[off[i]:off[i+1]] {
			if l < 0 || int(l) >= C {
				panic(fmt.Sprintf("evaluate: MajorityVote: item %d: label %d outside [0,%d)", i, l, C))
			}
			count[l]++
		}
		out[i] = argmax(count)
	}
	return out
}

// argmax returns the lowest index of the largest count, or -1 when all
// counts are zero.
func argmax(count []int32) int32 {
	best, top := int32(-1), int32(0)
	for c, v := range count {
		if v > top {
			best, top = int32(c), v
		}
	}
	return best
}
