package mixture

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/relabel/relabel/internal/splitmix"
)

// component is one (item j, class c) term of the mixture of METHOD.md step 3.
// Its N-trial draws split on the row's most probable category (binomial
// splitting): the number of trials that miss it is Binomial(N, q) with q the
// mass of the rest, and only those trials are drawn one by one from the rest.
// With the near-diagonal rows of a relabelling run (q ~ 0.1) that is ~2 draws
// per vector instead of N. The tables are built on the component's first draw
// (a component of tiny weight is often never drawn).
type component struct {
	row   *Row
	built bool
	// top is the explicit entry split on, -1 when every trial is drawn from
	// rest (no entry holds at least half the row's mass).
	top int
	// miss[d] is P(D <= d) for the number D of trials missing top
	// (unnormalised: compare with u * miss[len-1]), in sampler.tab.
	missLo, missN int
	// rest is the cumulative distribution over the row's explicit entries
	// other than top, then the remainder, in sampler.tab.
	restLo, restN int
	// mask has bit cat&255 set for each of the row's explicit categories: a
	// category drawn from the remainder whose bit is clear is outside the
	// row without scanning it (see uniformOutside). 256 bits, not 64: with
	// a row's 20 entries at C = 1000, a quarter of the draws hit a set bit
	// of 64 and scanned the row, against 8% of 256.
	mask catMask
}

// catMask is a 256-bit set of categories modulo 256: a category whose bit
// is clear is not in the set, without a look at the set itself (component
// rows in uniformOutside, catIndex's hashed rows).
type catMask [4]uint64

func (m *catMask) add(c int32) { m[(uint(c)>>6)&3] |= 1 << (uint(c) & 63) }

func (m *catMask) has(c int32) bool { return m[(uint(c)>>6)&3]&(1<<(uint(c)&63)) != 0 }

// Sampler draws count vectors from a multinomial mixture (METHOD.md step 4). It
// is a reusable workspace: after the first calls it allocates nothing per draw.
type Sampler struct {
	comps   []component
	compCum []float64
	guide   []int32
	guided  bool // guide is built for the current mixture
	tab     []float64
	pcg     rand.PCG
	rng     *rand.Rand
	n       int
	draw    []int32
	vec     []int32 // sorted distinct categories of the current draw
	cnt     []float64
	slots   []int32 // open-addressing table of distinct vectors (index + 1)
	// rankDraws's slots, kept here so a call need not zero them: it
	// clears the counts it set.
	rankCat [maxRankDraws]int32
	rankCnt [maxRankDraws]int32
	hashes  []uint64
	// Draws picks how the L vectors choose their components (Draws).
	Draws Draws
}

// Draws is how a round's L count vectors choose their mixture components
// (METHOD.md step 4).
type Draws int

const (
	// Systematic spaces the L vectors' component picks evenly through the
	// cumulative weights from one uniform offset (systematic sampling, as
	// particle filters resample): each vector's component still has the
	// mixture's distribution, and every component gets floor or ceil of L
	// times its weight vectors, so the share of vectors per component, which
	// is what EM's pi mostly reads, carries no sampling noise. i.i.d. picks
	// give a component of weight w a share with standard deviation
	// sqrt(w(1-w)/L), 0.05 at w = 1/2 and L = 100: that noise enters every
	// item's pi every round. relabel's default: on the dev grid it is as
	// accurate at L = 100 as i.i.d. picks at L = 250, at 40% of the cost
	// (docs/QUALITY.md).
	Systematic Draws = iota
	// IID picks each vector's component independently (the paper's and the
	// authors' code's i.i.d. samples).
	IID
)

func (d Draws) String() string {
	switch d {
	case Systematic:
		return "systematic"
	case IID:
		return "iid"
	}
	return fmt.Sprintf("Draws(%d)", int(d))
}

// ParseDraws parses "systematic" or "iid".
func ParseDraws(s string) (Draws, error) {
	switch s {
	case "systematic":
		return Systematic, nil
	case "iid":
		return IID, nil
	}
	return 0, fmt.Errorf("mixture: unknown component draws %q (want systematic or iid)", s)
}

// Seed makes the draws a pure function of (seed, key, round): a retried bundle, a
// different runner or a different parallelism reproduces them exactly.
func (s *Sampler) Seed(seed, key uint64, round int) {
	s.pcg.Seed(seed, splitmix.Mix64(key^splitmix.Mix64(uint64(round)+splitmix.Golden)))
	if s.rng == nil {
		s.rng = rand.New(&s.pcg)
	}
}

// uniform is a uniform float64 in [0, 1), as rand.Float64 makes it, without
// the interface call.
func (s *Sampler) uniform() float64 {
	return float64(s.pcg.Uint64()<<11>>11) / (1 << 53)
}

// SetMixture sets the mixture sum_j w[j] sum_k states[j].Pi[k] Mult(N, rho_jk).
// Weights need not be normalised; items with zero weight or empty states are
// skipped. It returns false when the mixture is empty.
func (s *Sampler) SetMixture(states []*State, w []float64) bool {
	s.comps = s.comps[:0]
	s.compCum = s.compCum[:0]
	s.tab = s.tab[:0]
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
			tot += pw
			s.comps = append(s.comps, component{row: &st.Rows[k]})
			s.compCum = append(s.compCum, tot)
		}
	}
	if tot <= 0 {
		return false
	}
	for i := range s.compCum {
		s.compCum[i] /= tot
	}
	// The guide table is built on the first i.i.d. pick: systematic draws
	// (the default) walk the cumulative weights forward and never use it,
	// and building it was a twentieth of a round at C = 20.
	s.guided = false
	return true
}

// buildGuide lays out the guide table (the cutpoint method): guide[i] is
// the first component whose cumulative weight exceeds i/M, so a pick starts
// there and steps on rarely; it returns exactly what a search from the
// start would.
func (s *Sampler) buildGuide() {
	m := len(s.comps)
	s.guide = s.guide[:0]
	j := 0
	for i := 0; i < m; i++ {
		for j < m-1 && s.compCum[j] <= float64(i)/float64(m) {
			j++
		}
		s.guide = append(s.guide, int32(j))
	}
	s.guided = true
}

// pickComp returns the index of the first component whose cumulative weight
// exceeds u, starting at the guide table's entry for u.
func (s *Sampler) pickComp(u float64) int {
	if !s.guided {
		s.buildGuide()
	}
	m := len(s.comps)
	return s.compFrom(int(s.guide[min(int(u*float64(m)), m-1)]), u)
}

// compFrom returns the index of the first component at or after j whose
// cumulative weight exceeds u (the last one if none does); j must not be
// past it.
func (s *Sampler) compFrom(j int, u float64) int {
	for j < len(s.comps)-1 && s.compCum[j] <= u {
		j++
	}
	return j
}

// build lays out comp's tables (see component) for n trials.
func (s *Sampler) build(comp *component, n int) {
	r := comp.row
	comp.built = true
	comp.mask = catMask{}
	for _, c := range r.Cat {
		comp.mask.add(c)
	}
	var tot, best float64
	top := -1
	for e, p := range r.P {
		tot += p
		if p > best {
			top, best = e, p
		}
	}
	tot += r.Rem
	comp.top = -1
	if top >= 0 && best >= 0.5*tot {
		// D ~ Binomial(n, q): pmf(0) = p^n, pmf(d+1) = pmf(d) (n-d)/(d+1) q/p.
		// p >= 1/2 keeps p^n far from underflow for any practical n.
		p := best / tot
		q := 1 - p
		if pn := math.Pow(p, float64(n)); pn > 1e-280 {
			comp.top = top
			comp.missLo, comp.missN = len(s.tab), n+1
			f, c := pn, pn
			s.tab = append(s.tab, c)
			for d := 0; d < n; d++ {
				f *= float64(n-d) / float64(d+1) * q / p
				c += f
				s.tab = append(s.tab, c)
			}
		}
	}
	comp.restLo = len(s.tab)
	var c float64
	for e, p := range r.P {
		if e == comp.top {
			continue
		}
		c += p
		s.tab = append(s.tab, c)
	}
	s.tab = append(s.tab, c+r.Rem)
	comp.restN = len(s.tab) - comp.restLo
}

// pick returns the first index whose cumulative value exceeds u (clamped).
// Long tables (rows of more than 16 entries, at large C) are bisected
// without branches: each halving step moves the base by a conditional move,
// where a branch on the comparison was mispredicted every other step
// (sort.SearchFloat64s also calls a closure per probe).
func pick(cum []float64, u float64) int {
	if len(cum) <= 16 {
		for i, c := range cum {
			if u < c {
				return i
			}
		}
		return len(cum) - 1
	}
	// The last value is the row's remainder, which at large C often holds
	// a good part of the mass: one comparison settles those draws.
	if cum[len(cum)-2] <= u {
		return len(cum) - 1
	}
	// Invariant: the answer is in [base, base+n]; when cum[base+half-1]
	// <= u, so is every value before it, and the answer is past them.
	base, n := 0, len(cum)
	for n > 1 {
		half := n >> 1
		if cum[base+half-1] <= u {
			base += half
		}
		n -= half
	}
	if cum[base] <= u {
		base++
	}
	return min(base, len(cum)-1)
}

// Sample draws l count vectors of n trials over c categories into dst (reset
// first), merging identical vectors into one with their multiplicity as weight:
// with near-diagonal rho most draws coincide, and EM's cost is per distinct
// vector. Each vector picks ONE component (j, k) with probability w_j pi_jk and
// draws all n trials from rho_jk (METHOD.md step 4; drawing trials from the
// blended marginal would collapse the mixture to one component). Distinct
// vectors come out in the order of their first draw, a function of the draws
// alone.
func (s *Sampler) Sample(dst *Counts, l, n, c int) {
	if n != s.n {
		// The binomial tables depend on n.
		for i := range s.comps {
			s.comps[i].built = false
		}
		s.n = n
	}
	dst.Reset()
	size := 1
	for size < 2*l {
		size <<= 1
	}
	if len(s.slots) != size {
		s.slots = make([]int32, size)
	} else {
		clear(s.slots)
	}
	s.hashes = s.hashes[:0]
	// Systematic: the v-th vector's point is (v + u0) / l, one offset u0 for
	// all; the points ascend, so the component index only walks forward.
	u0 := 0.0
	if s.Draws == Systematic {
		u0 = s.uniform()
	}
	j := 0
	for v := 0; v < l; v++ {
		if s.Draws == Systematic {
			j = s.compFrom(j, (float64(v)+u0)/float64(l))
		} else {
			j = s.pickComp(s.uniform())
		}
		comp := &s.comps[j]
		if !comp.built {
			s.build(comp, n)
		}
		row := comp.row
		miss := n
		s.draw = s.draw[:0]
		if comp.top >= 0 {
			// Linear from d = 0: the mass sits at small d (q <= 1/2).
			cdf := s.tab[comp.missLo : comp.missLo+comp.missN]
			u := s.uniform() * cdf[len(cdf)-1]
			miss = 0
			for miss < len(cdf)-1 && cdf[miss] <= u {
				miss++
			}
		}
		if miss > 0 {
			rest := s.tab[comp.restLo : comp.restLo+comp.restN]
			tot := rest[len(rest)-1]
			for t := 0; t < miss; t++ {
				e := pick(rest, s.uniform()*tot)
				if comp.top >= 0 && e >= comp.top {
					e++ // rest skips top
				}
				if e < len(row.Cat) {
					s.draw = append(s.draw, row.Cat[e])
					continue
				}
				s.draw = append(s.draw, s.uniformOutside(row.Cat, &comp.mask, c))
			}
		}
		s.vector(row, comp.top, n-miss)
		s.insert(dst)
	}
}

// vector sets s.vec, s.cnt to the sorted distinct categories of the current
// draw: k trials of row entry top (when top >= 0) and the categories in s.draw.
// From minRankDraws+1 to maxRankDraws draws are placed by rank (rankDraws),
// fewer or more are insertion-sorted and run-length counted (sortDraws);
// top is merged in at its place.
// At large C a vector holds many distinct categories (about six at
// C = 1000, most drawn from the row's remainder): finding each draw's entry
// by a scan, then sorting the two columns, cost a tenth of a round, and an
// insertion sort's exit from its inner loop, a branch on random draws, was
// mispredicted about once per draw (a seventh of the C = 1000 round).
func (s *Sampler) vector(row *Row, top, k int) {
	s.vec, s.cnt = s.vec[:0], s.cnt[:0]
	topCat := int32(-1)
	if top >= 0 && k > 0 {
		topCat = row.Cat[top]
	}
	if d := s.draw; len(d) > minRankDraws && len(d) <= maxRankDraws {
		s.rankDraws(d, &topCat, k)
	} else {
		s.sortDraws(d, &topCat, k)
	}
	if topCat >= 0 { // top comes after every draw
		s.vec = append(s.vec, topCat)
		s.cnt = append(s.cnt, float64(k))
	}
}

// minRankDraws: up to this many draws, the insertion sort is as cheap (a
// vector of a near-diagonal row at small C has one or two).
const minRankDraws = 3

// maxRankDraws bounds the draws rankDraws places (its quadratic count of
// comparisons beats a sort's branches well past a vector's usual few).
const maxRankDraws = 32

// sortDraws is vector's path for very few or many draws: insertion sort,
// then runs counted.
func (s *Sampler) sortDraws(d []int32, topCat *int32, k int) {
	for i := 1; i < len(d); i++ { // insertion sort: a vector has at most N draws
		x, j := d[i], i
		for j > 0 && d[j-1] > x {
			d[j] = d[j-1]
			j--
		}
		d[j] = x
	}
	for i := 0; i < len(d); {
		x := d[i]
		j := i + 1
		for j < len(d) && d[j] == x {
			j++
		}
		s.emit(x, float64(j-i), topCat, k)
		i = j
	}
}

// rankDraws is vector's path for few draws: each draw's rank, the number
// of draws below it, is counted without a branch (the sign of the
// difference of two categories in [0, 2^31)), and the draw lands at that
// rank, its count at the rank counting its copies: equal draws share a
// rank, and the slots their copies would have taken stay empty. One pass
// over the slots then gives the distinct categories in order with their
// counts, as sorting and counting runs did.
func (s *Sampler) rankDraws(d []int32, topCat *int32, k int) {
	cats, counts := &s.rankCat, &s.rankCnt // counts is all zero between calls
	d = d[:min(len(d), maxRankDraws)]
	for _, x := range d {
		r := 0
		for _, y := range d {
			r += int(uint32(y-x) >> 31)
		}
		r &= maxRankDraws - 1 // r < len(d): no bounds check
		cats[r] = x
		counts[r]++
	}
	for r := range d {
		n := counts[r]
		if n == 0 {
			continue
		}
		counts[r] = 0
		s.emit(cats[r], float64(n), topCat, k)
	}
}

// emit appends category x with count n to the current vector, first the
// top entry's k trials when *topCat (not yet placed, >= 0) comes at or
// before x, merged into x's count when it is x.
func (s *Sampler) emit(x int32, n float64, topCat *int32, k int) {
	if t := *topCat; t >= 0 && t <= x {
		if t == x {
			n += float64(k)
		} else {
			s.vec = append(s.vec, t)
			s.cnt = append(s.cnt, float64(k))
		}
		*topCat = -1
	}
	s.vec = append(s.vec, x)
	s.cnt = append(s.cnt, n)
}

// insert adds the current vector (s.vec, s.cnt) to dst with weight 1, or adds
// 1 to the weight of an identical vector already there.
func (s *Sampler) insert(dst *Counts) {
	h := uint64(len(s.vec))
	for e, x := range s.vec {
		h = (h ^ uint64(x)<<8 ^ uint64(s.cnt[e])) * 0x9e3779b97f4a7c15
	}
	h ^= h >> 29
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		v := s.slots[i] - 1
		if v < 0 {
			s.slots[i] = int32(dst.Len()) + 1
			s.hashes = append(s.hashes, h)
			dst.Cat = append(dst.Cat, s.vec...)
			dst.Cnt = append(dst.Cnt, s.cnt...)
			dst.Off = append(dst.Off, int32(len(dst.Cat)))
			dst.W = append(dst.W, 1)
			var t float64
			for _, x := range s.cnt {
				t += x
			}
			dst.Trials = append(dst.Trials, t)
			return
		}
		if s.hashes[v] == h && s.sameVec(dst, int(v)) {
			dst.W[v]++
			return
		}
	}
}

func (s *Sampler) sameVec(y *Counts, v int) bool {
	lo, hi := int(y.Off[v]), int(y.Off[v+1])
	if hi-lo != len(s.vec) {
		return false
	}
	for e, x := range s.vec {
		if y.Cat[lo+e] != x || y.Cnt[lo+e] != s.cnt[e] {
			return false
		}
	}
	return true
}

// intN is rand.Rand.IntN(n) on the sampler's PCG (the same algorithm, so
// the same values: Lemire's multiply-shift with rejection) without the
// interface call per draw.
func (s *Sampler) intN(n uint64) uint64 {
	if n&(n-1) == 0 {
		return s.pcg.Uint64() & (n - 1)
	}
	hi, lo := bits.Mul64(s.pcg.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(s.pcg.Uint64(), n)
		}
	}
	return hi
}

// uniformOutside draws a category uniformly from [0,c) minus cats (the
// remainder's support). Rejection is cheap: rows hold few explicit categories,
// and a row with every category explicit has no remainder mass to pick. mask
// is the row's component.mask: a draw whose bit is clear is not among cats.
func (s *Sampler) uniformOutside(cats []int32, mask *catMask, c int) int32 {
	if len(cats) >= c {
		return cats[s.intN(uint64(len(cats)))]
	}
	for {
		x := int32(s.intN(uint64(c)))
		if !mask.has(x) {
			return x
		}
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
