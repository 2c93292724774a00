package mixture

import (
	"fmt"
	"math"
	"sort"
)

// Row is one sparse row rho_c of a per-item transition matrix over C categories:
// P[e] = rho_c(Cat[e]) for the explicit categories; every other category has
// probability Rem / (C - len(Cat)).
type Row struct {
	Cat []int32
	P   []float64
	Rem float64

	ents []entry // sortRow's scratch
}

// Prob returns rho_c(cat) for a row over c categories.
func (r *Row) Prob(cat int32, c int) float64 {
	for e, x := range r.Cat {
		if x == cat {
			return r.P[e]
		}
	}
	return r.probAt(-1, c)
}

// probAt is the probability of a category at explicit entry e of r, or of
// one outside r's entries (e < 0): their equal share of the remainder.
func (r *Row) probAt(e, c int) float64 {
	if e >= 0 {
		return r.P[e]
	}
	if n := c - len(r.Cat); n > 0 {
		return r.Rem / float64(n)
	}
	return 0
}

// catIndex finds a row's categories. A short row is scanned; a long one (an
// EM row at large C holds hundreds of entries) gets an open-addressing table
// of entry index + 1, reused across builds. (A Go map would allocate per
// build and hash slower; rows hold distinct categories, so no deletion is
// needed.)
type catIndex struct {
	slots []int32 // nil: scan cats
	cats  []int32
	shift uint
	// mask has bit c&255 set for every indexed category c (hashed rows
	// only): a category whose bit is clear is absent without a probe, the
	// common case when a short row is looked up from a long one.
	mask catMask
}

// catIndexScanMax is the longest row catIndex scans instead of hashing.
const catIndexScanMax = 16

func (x *catIndex) build(cats []int32) {
	x.cats = cats
	if len(cats) <= catIndexScanMax {
		x.slots = x.slots[:0]
		return
	}
	bits := uint(1)
	for 1<<bits < 2*len(cats) {
		bits++
	}
	n := 1 << bits
	if cap(x.slots) < n {
		x.slots = make([]int32, n)
	}
	x.slots = x.slots[:n]
	clear(x.slots)
	x.shift = 32 - bits
	x.mask = catMask{}
	for _, c := range cats {
		x.mask.add(c)
	}
	mask := uint32(n - 1)
	for e, c := range cats {
		h := (uint32(c) * 0x9e3779b1) >> x.shift
		for x.slots[h] != 0 {
			h = (h + 1) & mask
		}
		x.slots[h] = int32(e + 1)
	}
}

// find returns the entry index of category c, -1 when absent.
func (x *catIndex) find(c int32) int {
	if len(x.slots) == 0 {
		for e, y := range x.cats {
			if y == c {
				return e
			}
		}
		return -1
	}
	if !x.mask.has(c) {
		return -1
	}
	mask := uint32(len(x.slots) - 1)
	for h := (uint32(c) * 0x9e3779b1) >> x.shift; ; h = (h + 1) & mask {
		e := x.slots[h] - 1
		if e < 0 {
			return -1
		}
		if x.cats[e] == c {
			return int(e)
		}
	}
}

func (r *Row) reset() {
	r.Cat = r.Cat[:0]
	r.P = r.P[:0]
	r.Rem = 0
}

func (r *Row) copyFrom(o *Row) {
	r.Cat = append(r.Cat[:0], o.Cat...)
	r.P = append(r.P[:0], o.P...)
	r.Rem = o.Rem
}

// State is one item's sparse state: pi over at most C0 classes (Class[k],
// Pi[k], most probable first after Truncate) and rho's row for each of them.
// An empty State (no classes) means "nothing known": an unlabelled item before
// any round. It is the working form; States is the packed form of a batch.
type State struct {
	Class []int32
	Pi    []float64
	Rows  []Row
}

// Len is the number of classes with explicit posterior mass.
func (s *State) Len() int { return len(s.Class) }

// Reset empties s, keeping its storage.
func (s *State) Reset() {
	s.Class = s.Class[:0]
	s.Pi = s.Pi[:0]
	s.Rows = s.Rows[:0]
}

// add appends class c with mass p and returns its row, reusing storage.
func (s *State) add(c int32, p float64) *Row {
	s.Class = append(s.Class, c)
	s.Pi = append(s.Pi, p)
	if len(s.Rows) < cap(s.Rows) {
		s.Rows = s.Rows[:len(s.Rows)+1]
	} else {
		s.Rows = append(s.Rows, Row{})
	}
	r := &s.Rows[len(s.Rows)-1]
	r.reset()
	return r
}

// CopyFrom makes s a deep copy of o, reusing s's storage.
func (s *State) CopyFrom(o *State) {
	s.Reset()
	for k := range o.Class {
		s.add(o.Class[k], o.Pi[k]).copyFrom(&o.Rows[k])
	}
}

// Argmax returns the most probable class and its probability, or (-1, 0) for an
// empty state. Ties go to the lower class index so results never depend on order.
func (s *State) Argmax() (int32, float64) {
	best, bp := int32(-1), -1.0
	for k, c := range s.Class {
		if p := s.Pi[k]; p > bp || (p == bp && c < best) {
			best, bp = c, p
		}
	}
	if best < 0 {
		return -1, 0
	}
	return best, bp
}

// ProbOf returns pi(c), 0 when c has no explicit mass.
func (s *State) ProbOf(c int32) float64 {
	for k, x := range s.Class {
		if x == c {
			return s.Pi[k]
		}
	}
	return 0
}

// Init sets s to the initial state of an item from its annotations (METHOD.md
// "Initialisation"): pi is the mean of the one-hots of its labels (so a single
// label gives a one-hot), truncated to c0 classes, and each row is the
// label-smoothed identity rho_c = (1-smooth) e_c + smooth spread uniformly over
// the other C-1 categories. Labels < 0 (unlabelled) are ignored; an item with no
// labels gets an empty state.
func (s *State) Init(labels []int32, c, c0 int, smooth float64) {
	s.Reset()
	n := 0
	for _, l := range labels {
		if l < 0 {
			continue
		}
		n++
		found := false
		for k, x := range s.Class {
			if x == l {
				s.Pi[k]++
				found = true
				break
			}
		}
		if !found {
			r := s.add(l, 1)
			if c > 1 {
				r.Cat = append(r.Cat, l)
				r.P = append(r.P, 1-smooth)
				r.Rem = smooth
			} else {
				r.Cat = append(r.Cat, l)
				r.P = append(r.P, 1)
			}
		}
	}
	for k := range s.Pi {
		s.Pi[k] /= float64(n)
	}
	s.Truncate(c0, 0)
}

// Truncate keeps the c0 most probable classes (ties to the lower class index),
// renormalises pi (METHOD.md step 7), sorts them most probable first, and, when
// maxEntries > 0, keeps at most maxEntries explicit entries per row, folding the
// rest into the row's remainder (so rows cannot grow without bound over rounds).
func (s *State) Truncate(c0, maxEntries int) {
	sort.Sort(byProb{s})
	if len(s.Class) > c0 {
		s.Class, s.Pi, s.Rows = s.Class[:c0], s.Pi[:c0], s.Rows[:c0]
	}
	var z float64
	for _, p := range s.Pi {
		z += p
	}
	if z > 0 {
		for k := range s.Pi {
			s.Pi[k] /= z
		}
	}
	if maxEntries <= 0 {
		return
	}
	for k := range s.Rows {
		r := &s.Rows[k]
		if len(r.Cat) <= maxEntries {
			continue
		}
		keepTop(r, maxEntries)
	}
}

type byProb struct{ s *State }

func (b byProb) Len() int { return len(b.s.Class) }
func (b byProb) Less(i, j int) bool {
	pi, pj := b.s.Pi[i], b.s.Pi[j]
	if pi != pj {
		return pi > pj
	}
	return b.s.Class[i] < b.s.Class[j]
}
func (b byProb) Swap(i, j int) {
	s := b.s
	s.Class[i], s.Class[j] = s.Class[j], s.Class[i]
	s.Pi[i], s.Pi[j] = s.Pi[j], s.Pi[i]
	s.Rows[i], s.Rows[j] = s.Rows[j], s.Rows[i]
}

// keepTop keeps r's k most probable entries, largest first (ties to the
// lower category; categories are distinct, so the order is unique), and adds
// the others' mass to the remainder, in the order it meets them. A row out
// of EM can hold hundreds of entries at large C, and k is small (2 C0):
// selecting the k best costs one pass plus a few insertions, where sorting
// the whole row cost a quarter of a round at C = 1000.
func keepTop(r *Row, k int) {
	ents := r.ents[:0]
	for e, c := range r.Cat[:k] {
		ents = append(ents, entry{r.P[e], c})
	}
	top := ents[:k]
	// Insertion sort with the comparison inlined: the first k entries of a
	// blended row are the stored row's, already close to this order, and
	// slices.SortFunc's call per comparison cost more than the rest of
	// keepTop at C = 1000.
	for i := 1; i < len(top); i++ {
		x, j := top[i], i
		for j > 0 && x.before(top[j-1]) {
			top[j] = top[j-1]
			j--
		}
		top[j] = x
	}
	// The rest is read in place (r's first k slots are written only at the
	// end), against the current k-th best held in locals: most entries
	// fall below it and only add to the remainder.
	last := top[k-1]
	rem := r.Rem
	ps, cats := r.P[k:], r.Cat[k:]
	cats = cats[:len(ps)]
	for e, p := range ps {
		c := cats[e]
		if !(p > last.p || p == last.p && c < last.cat) { // !x.before(last)
			rem += p
			continue
		}
		x := entry{p, c}
		rem += last.p
		j := k - 1
		for j > 0 && x.before(top[j-1]) {
			top[j] = top[j-1]
			j--
		}
		top[j] = x
		last = top[k-1]
	}
	r.Rem = rem
	for e, x := range top {
		r.P[e], r.Cat[e] = x.p, x.cat
	}
	r.Cat, r.P = r.Cat[:k], r.P[:k]
	r.ents = ents
}

// before reports whether x sorts before y: more probable, or as probable
// and of a lower category (categories are distinct, so the order is total).
func (x entry) before(y entry) bool { return x.p > y.p || x.p == y.p && x.cat < y.cat }

type entry struct {
	p   float64
	cat int32
}

// Check reports whether s is a valid state over c classes: classes in range and
// distinct, pi a distribution, each row a distribution.
func (s *State) Check(c int) error {
	const tol = 1e-6
	var z float64
	for k, cl := range s.Class {
		if cl < 0 || int(cl) >= c {
			return fmt.Errorf("mixture: class %d outside [0,%d)", cl, c)
		}
		for _, o := range s.Class[:k] {
			if o == cl {
				return fmt.Errorf("mixture: class %d repeated", cl)
			}
		}
		if s.Pi[k] < 0 || math.IsNaN(s.Pi[k]) {
			return fmt.Errorf("mixture: pi[%d] = %g", cl, s.Pi[k])
		}
		z += s.Pi[k]
		r := &s.Rows[k]
		rz := r.Rem
		for e, p := range r.P {
			if p < 0 || math.IsNaN(p) || r.Cat[e] < 0 || int(r.Cat[e]) >= c {
				return fmt.Errorf("mixture: row %d entry %d (category %d) = %g", cl, e, r.Cat[e], p)
			}
			rz += p
		}
		if math.Abs(rz-1) > tol {
			return fmt.Errorf("mixture: row %d sums to %g", cl, rz)
		}
	}
	if len(s.Class) > 0 && math.Abs(z-1) > tol {
		return fmt.Errorf("mixture: pi sums to %g", z)
	}
	return nil
}
