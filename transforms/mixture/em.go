package mixture

import (
	"fmt"
	"math"
	"slices"
)

// Variant selects how EM is run inside a round.
type Variant int

const (
	// Paper samples the L vectors once per round and warm-starts EM from the
	// item's current state (the paper's Algorithm 1).
	Paper Variant = iota
	// Code follows the authors' public JAX code: pi, rho re-initialised every call
	// (pi uniform, rho rows proportional to 10 I + U(0,1)) and y re-sampled inside
	// every EM iteration.
	Code
)

func (v Variant) String() string {
	switch v {
	case Paper:
		return "paper"
	case Code:
		return "code"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// ParseVariant parses "paper" or "code".
func ParseVariant(s string) (Variant, error) {
	switch s {
	case "paper":
		return Paper, nil
	case "code":
		return Code, nil
	}
	return 0, fmt.Errorf("mixture: unknown EM variant %q (want paper or code)", s)
}

// EM fits the MAP multinomial mixture of METHOD.md step 5 on a class set of m
// classes (the classes some mixture component puts mass on: a class no
// component supports gets no responsibility, so restricting the model to the
// supported classes keeps EM exact and costs O(m) instead of O(C)) over C
// categories. Rows are stored densely over the o observed categories plus one
// shared value for each unobserved category, so one iteration costs
// O(distinct vectors x m x nnz) and nothing is O(C^2).
//
// It is a reusable workspace.
type EM struct {
	// Classes is the class set (len m); Obs maps local category index to category.
	Classes []int32
	Obs     []int32
	C       int
	Alpha   float64
	Beta    float64

	Pi []float64 // m
	// Rho is rho over the observed categories, laid out o x m (Rho[b*m+a]
	// is class a's probability of category Obs[b]): the E step multiplies,
	// for each entry of a vector, one contiguous column of m values, and a
	// new observed category appends m values.
	//
	// EM works with probabilities, not their logs: a vector's joint
	// pi_a prod_e rho_a(e)^cnt_e over the few trials of a round (N = 2 C0
	// - 1) stays far above float64's range, and products and quotients
	// cost a fraction of the exp and log per entry that the log domain
	// paid (they were a fifth of a run). A vector whose joint would leave
	// that range is computed in logs instead (E step).
	Rho    []float64
	Unseen []float64 // m, rho of each unobserved category

	// local maps a category to its local index + 1 (0: not observed yet):
	// a dense table over C when C is moderate (a lookup per sampled entry is
	// the hot path of setData), a map beyond denseLocalMax.
	local    []int32
	localMap map[int32]int32
	data     Counts // y with categories mapped to local indices
	gamma    []float64
	sumG     []float64
	sumN     []float64
	num      []float64 // o x m, as Rho

	// The E step's powers: pow[b*m+a] is Rho[b*m+a] (Rho is that prefix,
	// see powers) and pow[powOff[b]+(k-2)*m+a] is Rho[b*m+a]^k for k from
	// 2 up to maxK[b], the largest count category b has in the data
	// (intCounts: every count is a whole number up to maxPowK; otherwise
	// powers come from math.Pow, into powScratch).
	pow        []float64
	powOff     []int32
	maxK       []int32
	intCounts  bool
	powScratch []float64
	// entOff[e] is where data entry e's column of rho^cnt starts in pow
	// (intCounts only): fixed by the data, so setData computes it once
	// instead of every step per entry.
	entOff []int32
	// keep lists the classes a vector's E step keeps (see step).
	keep []int32

	// Converged is set by Step when its M step reproduced the parameters it
	// started from bit for bit: every further step on the same data would
	// compute exactly the same responsibilities and parameters again, so a
	// caller may stop iterating without changing any result.
	Converged bool
	// PiMoved is the largest change of a class's pi in the last Step.
	PiMoved float64

	den []float64 // M step: each class's row denominator
}

// maxPowK bounds the counts the E step's power table covers (a round's
// counts are at most N).
const maxPowK = 64

// tinyJoint is where the E step leaves probabilities for logs: below it a
// vector's joint could reach float64's subnormals, where products lose
// precision (about 1e-308) before they lose the -40 nats that responsibilities
// keep (see step).
const tinyJoint = 1e-250

// expNeg40 is exp(-40): responsibilities below it times the largest are
// dropped (see step).
var expNeg40 = math.Exp(-40)

// denseLocalMax bounds C for the dense category index (4 bytes per category
// per workspace).
const denseLocalMax = 1 << 20

// SetClasses sets the class set and resets the category index.
func (em *EM) SetClasses(classes []int32, c int, alpha, beta float64) {
	em.Classes = append(em.Classes[:0], classes...)
	if em.C < len(em.local) {
		// mapDense's spare slot for the previous C: a category at a
		// larger C, when the workspace is reused for one.
		em.local[em.C] = 0
	}
	em.C, em.Alpha, em.Beta = c, alpha, beta
	if em.C <= denseLocalMax {
		if len(em.local) < em.C+1 { // + mapDense's spare slot
			em.local = make([]int32, em.C+1)
		} else {
			for _, cat := range em.Obs {
				em.local[cat] = 0
			}
		}
	} else {
		if em.localMap == nil {
			em.localMap = make(map[int32]int32)
		}
		clear(em.localMap)
	}
	em.Obs = em.Obs[:0]
	em.Converged = false
}

// lookup returns the local index of category cat, -1 when not observed.
func (em *EM) lookup(cat int32) int32 {
	if em.C <= denseLocalMax {
		return em.local[cat] - 1
	}
	if li, ok := em.localMap[cat]; ok {
		return li
	}
	return -1
}

// fillColumn sets class a's entries of an o x m table to v.
func fillColumn(x []float64, a, m int, v float64) {
	for i := a; i < len(x); i += m {
		x[i] = v
	}
}

// mapCategories sets cats[e] to the local index of category ycat[e],
// registering new categories in Obs in order of first occurrence.
func (em *EM) mapCategories(ycat, cats []int32) {
	if em.C <= denseLocalMax {
		em.mapDense(ycat, cats)
		return
	}
	for e, c := range ycat {
		li, ok := em.localMap[c]
		if !ok {
			li = int32(len(em.Obs))
			em.localMap[c] = li
			em.Obs = append(em.Obs, c)
		}
		cats[e] = li
	}
}

// mapDense is mapCategories through the dense index, without a branch on
// whether a category is new: at large C most of a round's categories are
// (a uniform draw from a row's remainder), a coin the branch predictor lost
// about once per new category. Each category's slot in Obs is written
// whether it is new or not, and only a new one advances Obs's length. A
// known category's index is written to a spare slot past C, not back to its
// own: a store to its own slot made the next lookup of the same category
// wait for it, and at small C, where most categories repeat, that chain was
// slower than the branch had been.
func (em *EM) mapDense(ycat, cats []int32) {
	o := len(em.Obs)
	obs := slices.Grow(em.Obs, len(ycat))[:o+len(ycat)]
	spare := int32(em.C)
	local := em.local[:spare+1]
	cats = cats[:len(ycat)]
	for e, c := range ycat {
		li := local[c]
		var isNew int32
		if li == 0 {
			isNew = 1
		}
		obs[o] = c
		o += int(isNew)
		li |= int32(o) & -isNew        // a new category's index + 1 is Obs's new length
		at := spare ^ (spare^c)&-isNew // c when new, else spare
		local[at] = li
		cats[e] = li - 1
	}
	em.Obs = obs[:o]
}

// setData registers categories of y (global indices), maps them to local
// indices and notes each category's largest count for the E step's powers.
// Only the categories are copied: the other columns are y's own slices, so
// y must not change until the next setData (Round samples y, then fits it).
func (em *EM) setData(y *Counts) {
	d := &em.data
	em.Converged = false
	o0 := len(em.Obs)
	em.intCounts = true
	d.Off, d.Cnt, d.W, d.Trials = y.Off, y.Cnt, y.W, y.Trials
	// One pass maps each entry's category to its local index and notes
	// the category's largest count. maxK has room for every category the
	// data could add (a new one starts at 0), so the pass needs no check
	// for a new category; it is cut to the observed ones after.
	cats := resize(d.Cat, len(y.Cat))
	em.maxK = resize(em.maxK, o0+len(y.Cat))
	clear(em.maxK)
	maxK := em.maxK
	cnt := y.Cnt[:len(y.Cat)]
	em.mapCategories(y.Cat, cats)
	for e, li := range cats {
		// A whole count in [1, maxPowK]: int32(k) converts back to k
		// exactly only for a whole k in int32's range (NaN and huge k
		// fail too), one conversion each way where math.Trunc is a call
		// on CPUs without SSE4.1.
		k := cnt[e]
		ki := int32(k)
		if !(float64(ki) == k && ki >= 1 && ki <= maxPowK) {
			em.intCounts = false
			continue
		}
		maxK[li] = max(maxK[li], ki)
	}
	d.Cat = cats
	o := len(em.Obs)
	em.maxK = maxK[:o]
	if o > o0 && len(em.Rho) == len(em.Classes)*o0 && o0 > 0 {
		em.growObs(o0, o)
	}
	if em.intCounts {
		m := len(em.Classes)
		em.powOff = resize(em.powOff, o)
		n := o * m // the first powers are rho itself (see powers)
		for b, k := range em.maxK {
			em.powOff[b] = int32(n)
			// A category observed before but absent from this data (the
			// Code variant re-samples every step) has maxK 0 and needs no
			// powers; counting it as -1 of them overlapped the next
			// categories' powers.
			n += int(max(k, 1)-1) * m
		}
		em.pow = resize(em.pow, n)
		// Count 1 reads rho's own column, count k >= 2 its (k-2)th power
		// column: both offsets are computed and one is picked without a
		// branch (which count an entry has is data).
		entOff := resize(em.entOff, len(d.Cat))
		em.entOff = entOff
		powOff, m32 := em.powOff, int32(m)
		for e, c := range d.Cat {
			k := int32(d.Cnt[e])
			off := c * m32
			if p := powOff[c] + (k-2)*m32; k != 1 {
				off = p
			}
			entOff[e] = off
		}
	}
}

// growObs re-lays the rho table out for newly observed categories (the Code
// variant re-samples y every iteration): a new category had the shared
// unobserved probability, so it starts there.
func (em *EM) growObs(o0, o int) {
	m := len(em.Classes)
	if cap(em.Rho) < m*o {
		em.Rho = append(make([]float64, 0, m*o), em.Rho...)
	}
	em.Rho = em.Rho[:m*o]
	for a := 0; a < m; a++ {
		for b := o0; b < o; b++ {
			em.Rho[b*m+a] = em.Unseen[a]
		}
	}
}

// SetData replaces the EM data with y (new categories extend the tables).
func (em *EM) SetData(y *Counts) { em.setData(y) }

// Observe adds the categories of y to the observed set (so that initial rows
// can be laid out before the first E-step).
func (em *EM) Observe(y *Counts) { em.setData(y) }

func (em *EM) sizes() (m, o int) { return len(em.Classes), len(em.Obs) }

// InitFrom warm-starts (pi, rho) from state s (the Paper variant): classes of
// the set absent from s get a small floor mass and the default row with
// smoothing smooth.
func (em *EM) InitFrom(s *State, smooth float64) {
	m, o := em.sizes()
	em.Pi = resize(em.Pi, m)
	em.Rho = resize(em.Rho, m*o)
	em.Unseen = resize(em.Unseen, m)
	floor := 1e-3 / float64(m)
	var z float64
	for a, cl := range em.Classes {
		p := s.ProbOf(cl)
		if p < floor {
			p = floor
		}
		em.Pi[a] = p
		z += p
		un := 0.0
		if n := em.C - 1; n > 0 {
			un = smooth / float64(n)
		}
		// Every observed category outside the row's explicit ones has the
		// same probability, then the explicit ones.
		if row := rowOf(s, cl); row != nil {
			if n := em.C - len(row.Cat); n > 0 {
				un = row.Rem / float64(n)
			} else {
				un = 0
			}
			fillColumn(em.Rho, a, m, un)
			for e, cat := range row.Cat {
				if li := em.lookup(cat); li >= 0 {
					em.Rho[int(li)*m+a] = row.P[e]
				}
			}
		} else {
			fillColumn(em.Rho, a, m, un)
			if li := em.lookup(cl); li >= 0 {
				em.Rho[int(li)*m+a] = 1 - smooth
			}
		}
		em.Unseen[a] = un
	}
	for a := range em.Pi {
		em.Pi[a] /= z
	}
}

// InitCode re-initialises (pi, rho) as the authors' code does: pi uniform, rho
// rows proportional to 10 I + U(0,1) (the unobserved categories get the mean
// 0.5 each, so no C-length draw is needed).
func (em *EM) InitCode(s *Sampler) {
	m, o := em.sizes()
	em.Pi = resize(em.Pi, m)
	em.Rho = resize(em.Rho, m*o)
	em.Unseen = resize(em.Unseen, m)
	for a, cl := range em.Classes {
		em.Pi[a] = 1 / float64(m)
		diagSeen := false
		z := 0.0
		for b, cat := range em.Obs {
			v := s.rng.Float64()
			if cat == cl {
				v += 10
				diagSeen = true
			}
			em.Rho[b*m+a] = v
			z += v
		}
		rest := float64(em.C - o)
		z += 0.5 * rest
		if !diagSeen && rest > 0 {
			z += 10 // the diagonal is among the unobserved categories
		}
		for b := 0; b < o; b++ {
			em.Rho[b*m+a] /= z
		}
		em.Unseen[a] = 0.5 / z
		if !diagSeen && rest > 0 {
			// Unobserved categories share one value: fold the diagonal's extra mass in.
			em.Unseen[a] = (0.5*rest + 10) / rest / z
		}
	}
}

// resize returns x with length n, reusing its storage when it can (the
// contents are not kept).
func resize[T any](x []T, n int) []T {
	if cap(x) < n {
		return make([]T, n)
	}
	return x[:n]
}
