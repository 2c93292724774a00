package mixture

import (
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/relabel/relabel/transforms/internal/splitmix"
)

// Counts is a set of sparse noisy-label count vectors y_l, each with a weight
// (its multiplicity after merging duplicates) and a trial count N_l: vector l has
// Cnt[e] trials of category Cat[e] for e in [Off[l], Off[l+1]). Categories within a
// vector are sorted and distinct.
type Counts struct {
	Off    []int32
	Cat    []int32
	Cnt    []float64
	W      []float64
	Trials []float64
}

// Len is the number of vectors.
func (y *Counts) Len() int { return len(y.W) }

// Reset empties y, keeping storage.
func (y *Counts) Reset() {
	y.Off = append(y.Off[:0], 0)
	y.Cat, y.Cnt, y.W, y.Trials = y.Cat[:0], y.Cnt[:0], y.W[:0], y.Trials[:0]
}

// Add appends one count vector (cats need not be sorted or distinct).
func (y *Counts) Add(cats []int32, w float64) {
	lo := len(y.Cat)
	for _, c := range cats {
		found := false
		for e := lo; e < len(y.Cat); e++ {
			if y.Cat[e] == c {
				y.Cnt[e]++
				found = true
				break
			}
		}
		if !found {
			y.Cat = append(y.Cat, c)
			y.Cnt = append(y.Cnt, 1)
		}
	}
	sortEntries(y.Cat[lo:], y.Cnt[lo:])
	y.Off = append(y.Off, int32(len(y.Cat)))
	y.W = append(y.W, w)
	y.Trials = append(y.Trials, float64(len(cats)))
}

func sortEntries(cat []int32, cnt []float64) {
	// Insertion sort: vectors hold at most N distinct categories.
	for i := 1; i < len(cat); i++ {
		for j := i; j > 0 && cat[j] < cat[j-1]; j-- {
			cat[j], cat[j-1] = cat[j-1], cat[j]
			cnt[j], cnt[j-1] = cnt[j-1], cnt[j]
		}
	}
}

// component is one (item j, class c) term of the mixture of METHOD.md step 3.
type component struct {
	row *Row
	// cum is the cumulative distribution over the row's explicit entries, then
	// the remainder, in sampler.cum[cumLo:cumLo+len(row.Cat)+1].
	cumLo int
}

// Sampler draws count vectors from a multinomial mixture (METHOD.md step 4). It
// is a reusable workspace: after the first calls it allocates nothing per draw.
type Sampler struct {
	comps   []component
	compCum []float64
	cum     []float64
	draw    []int32
	pcg     rand.PCG
	rng     *rand.Rand
	order   []int32
	scratch Counts
}

// Seed makes the draws a pure function of (seed, key, round): a retried bundle, a
// different runner or a different parallelism reproduces them exactly.
func (s *Sampler) Seed(seed, key uint64, round int) {
	s.pcg.Seed(seed, splitmix.Mix64(key^splitmix.Mix64(uint64(round)+splitmix.Golden)))
	if s.rng == nil {
		s.rng = rand.New(&s.pcg)
	}
}

// SetMixture sets the mixture sum_j w[j] sum_k states[j].Pi[k] Mult(N, rho_jk).
// Weights need not be normalised; items with zero weight or empty states are
// skipped. It returns false when the mixture is empty.
func (s *Sampler) SetMixture(states []*State, w []float64) bool {
	s.comps = s.comps[:0]
	s.compCum = s.compCum[:0]
	s.cum = s.cum[:0]
	var tot float64
	for j, st := range states {
		if w[j] <= 0 {
			continue
		}
		for k := range st.Class {
			pw := w[j] * st.Pi[k]
			if pw <= 0 {
				continue
			}
			r := &st.Rows[k]
			tot += pw
			s.comps = append(s.comps, component{row: r, cumLo: len(s.cum)})
			s.compCum = append(s.compCum, tot)
			var c float64
			for _, p := range r.P {
				c += p
				s.cum = append(s.cum, c)
			}
			s.cum = append(s.cum, c+r.Rem)
		}
	}
	if tot <= 0 {
		return false
	}
	for i := range s.compCum {
		s.compCum[i] /= tot
	}
	return true
}

// pick returns the first index whose cumulative value exceeds u (clamped).
func pick(cum []float64, u float64) int {
	if len(cum) <= 16 {
		for i, c := range cum {
			if u < c {
				return i
			}
		}
		return len(cum) - 1
	}
	i := sort.SearchFloat64s(cum, u)
	for i < len(cum)-1 && cum[i] <= u {
		i++
	}
	if i >= len(cum) {
		i = len(cum) - 1
	}
	return i
}

// Sample draws l count vectors of n trials over c categories into dst (reset
// first), merging identical vectors into one with their multiplicity as weight:
// with near-diagonal rho most draws coincide, and EM's cost is per distinct
// vector. Each vector picks ONE component (j, k) with probability w_j pi_jk and
// draws all n trials from rho_jk (METHOD.md step 4; drawing trials from the
// blended marginal would collapse the mixture to one component).
func (s *Sampler) Sample(dst *Counts, l, n, c int) {
	raw := &s.scratch
	raw.Reset()
	for v := 0; v < l; v++ {
		comp := &s.comps[pick(s.compCum, s.rng.Float64())]
		row := comp.row
		cum := s.cum[comp.cumLo : comp.cumLo+len(row.Cat)+1]
		tot := cum[len(cum)-1]
		s.draw = s.draw[:0]
		for t := 0; t < n; t++ {
			e := pick(cum, s.rng.Float64()*tot)
			if e < len(row.Cat) {
				s.draw = append(s.draw, row.Cat[e])
				continue
			}
			s.draw = append(s.draw, s.uniformOutside(row.Cat, c))
		}
		raw.Add(s.draw, 1)
	}
	merge(dst, raw, &s.order)
}

// uniformOutside draws a category uniformly from [0,c) minus cats (the
// remainder's support). Rejection is cheap: rows hold few explicit categories,
// and a row with every category explicit has no remainder mass to pick.
func (s *Sampler) uniformOutside(cats []int32, c int) int32 {
	if len(cats) >= c {
		return cats[s.rng.IntN(len(cats))]
	}
	for {
		x := int32(s.rng.IntN(c))
		in := false
		for _, y := range cats {
			if y == x {
				in = true
				break
			}
		}
		if !in {
			return x
		}
	}
}

// merge writes the distinct vectors of src into dst, weights summed, in a
// canonical order (so EM's floating-point sums do not depend on draw order
// beyond the draws themselves).
func merge(dst, src *Counts, order *[]int32) {
	dst.Reset()
	o := (*order)[:0]
	for i := 0; i < src.Len(); i++ {
		o = append(o, int32(i))
	}
	*order = o
	slices.SortFunc(o, func(a, b int32) int { return cmpVec(src, int(a), int(b)) })
	for i := 0; i < len(o); i++ {
		v := int(o[i])
		if i > 0 && cmpVec(src, int(o[i-1]), v) == 0 {
			dst.W[len(dst.W)-1] += src.W[v]
			continue
		}
		lo, hi := src.Off[v], src.Off[v+1]
		dst.Cat = append(dst.Cat, src.Cat[lo:hi]...)
		dst.Cnt = append(dst.Cnt, src.Cnt[lo:hi]...)
		dst.Off = append(dst.Off, int32(len(dst.Cat)))
		dst.W = append(dst.W, src.W[v])
		dst.Trials = append(dst.Trials, src.Trials[v])
	}
}

func cmpVec(y *Counts, a, b int) int {
	al, ah := int(y.Off[a]), int(y.Off[a+1])
	bl, bh := int(y.Off[b]), int(y.Off[b+1])
	for i, j := al, bl; i < ah && j < bh; i, j = i+1, j+1 {
		if y.Cat[i] != y.Cat[j] {
			if y.Cat[i] < y.Cat[j] {
				return -1
			}
			return 1
		}
		if y.Cnt[i] != y.Cnt[j] {
			if y.Cnt[i] < y.Cnt[j] {
				return -1
			}
			return 1
		}
	}
	switch {
	case ah-al < bh-bl:
		return -1
	case ah-al > bh-bl:
		return 1
	}
	return 0
}
