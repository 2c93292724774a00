package ivf

import (
	"cmp"
	"slices"
)

// Sample keeps the Cap items with the smallest Hash(seed, key) seen so far,
// with their features: the k-means sample. Merging samples in any order and
// grouping gives the same result, so it is a Beam combiner's accumulator
// (pipelines/ivfstages) as well as an in-memory helper.
type Sample struct {
	Cap      int
	D        int
	Hashes   []uint64
	Keys     []int64
	Features []float32
}

// Add offers one item.
func (s *Sample) Add(h uint64, key int64, x []float32) {
	if s.D == 0 {
		s.D = len(x)
	}
	s.Hashes = append(s.Hashes, h)
	s.Keys = append(s.Keys, key)
	s.Features = append(s.Features, x...)
	if len(s.Keys) >= 2*max(s.Cap, 1) {
		s.Trim()
	}
}

// Merge adds every item of o.
func (s *Sample) Merge(o *Sample) {
	if s.D == 0 {
		s.D = o.D
	}
	if s.Cap == 0 {
		s.Cap = o.Cap
	}
	s.Hashes = append(s.Hashes, o.Hashes...)
	s.Keys = append(s.Keys, o.Keys...)
	s.Features = append(s.Features, o.Features...)
	if len(s.Keys) >= 2*max(s.Cap, 1) {
		s.Trim()
	}
}

// Trim sorts the items by (hash, key) and keeps the first Cap.
func (s *Sample) Trim() {
	n, d := len(s.Keys), s.D
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(s.Hashes[a], s.Hashes[b]), cmp.Compare(s.Keys[a], s.Keys[b]))
	})
	order = order[:min(n, s.Cap)]
	h := make([]uint64, len(order))
	k := make([]int64, len(order))
	f := make([]float32, len(order)*d)
	for j, i := range order {
		h[j], k[j] = s.Hashes[i], s.Keys[i]
		copy(f[j*d:(j+1)*d], s.Features[i*d:(i+1)*d])
	}
	s.Hashes, s.Keys, s.Features = h, k, f
}

// Len is the number of items held.
func (s *Sample) Len() int { return len(s.Keys) }
