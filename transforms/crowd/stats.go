package crowd

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// One is the fixed-point unit of Stats: a posterior probability p counts as
// round(p * One). 2^24 keeps about seven significant digits per item and
// leaves 2^39 items' worth of headroom in an int64.
const One = 1 << 24

// DenseClasses is the largest class count for which an annotator's counts
// are kept as a dense C x C array; above it, as a map of its nonzero cells
// (nothing per annotator is then C x C).
const DenseClasses = 32

// Stats are the E step's expected counts over a set of items: the sufficient
// statistics of the M step. They are integers (fixed point), so Add and Merge
// give the same result in any order: a runner may combine partial Stats
// however it bundles the items.
type Stats struct {
	C int
	// Items counts the items added.
	Items int64
	// Class[c] is the summed posterior of class c.
	Class []int64
	// Pairs counts the ordered pairs of labels given to one item, Agree
	// those of equal labels: how often two labels of an item agree, the one
	// thing a crowd's labels say about its accuracy without a model (Vote).
	Pairs, Agree int64
	ann          map[int64]*annStats
}

// annStats are one annotator's counts: N_a(c, l) in units of 1/One, at
// dense[c*C+l] or sparse[cell{c, l}].
type annStats struct {
	given  int64
	dense  []int64
	sparse map[[2]int32]int64
}

// NewStats returns empty statistics over c classes.
func NewStats(c int) *Stats {
	return &Stats{C: c, Class: make([]int64, c), ann: map[int64]*annStats{}}
}

// Quantize is the fixed-point value of a probability.
func Quantize(p float64) int64 { return int64(math.Round(p * One)) }

func (s *Stats) of(a int64) *annStats {
	x := s.ann[a]
	if x == nil {
		x = &annStats{}
		if s.C <= DenseClasses {
			x.dense = make([]int64, s.C*s.C)
		} else {
			x.sparse = map[[2]int32]int64{}
		}
		s.ann[a] = x
	}
	return x
}

func (x *annStats) add(c, l int32, C int, v int64) {
	if x.dense != nil {
		x.dense[int(c)*C+int(l)] += v
	} else {
		x.sparse[[2]int32{c, l}] += v
	}
}

// Add adds one item's posterior (len C) and its annotations: annotator
// ann[k] gave label lab[k].
func (s *Stats) Add(post []float64, ann []int64, lab []int32) {
	if len(post) != s.C || len(ann) != len(lab) {
		panic(fmt.Sprintf("crowd: Stats.Add: %d posteriors for C = %d, %d annotators for %d labels", len(post), s.C, len(ann), len(lab)))
	}
	s.Items++
	s.Pairs += int64(len(lab)) * int64(len(lab)-1)
	s.Agree += agreeing(lab)
	var qs [DenseClasses]int64
	q := qs[:0]
	if s.C > DenseClasses {
		q = make([]int64, 0, s.C)
	}
	for c, p := range post {
		v := Quantize(p)
		q = append(q, v)
		s.Class[c] += v
	}
	for k, a := range ann {
		x := s.of(a)
		x.given++
		for c, v := range q {
			if v != 0 {
				x.add(int32(c), lab[k], s.C, v)
			}
		}
	}
}

// agreeing is the number of ordered pairs of equal labels in lab.
func agreeing(lab []int32) int64 {
	if len(lab) < 2 {
		return 0
	}
	l := lab
	if !slices.IsSorted(l) {
		l = slices.Clone(lab)
		slices.Sort(l)
	}
	var n int64
	for i := 0; i < len(l); {
		j := i + 1
		for j < len(l) && l[j] == l[i] {
			j++
		}
		n += int64(j-i) * int64(j-i-1)
		i = j
	}
	return n
}

// Merge adds o into s.
func (s *Stats) Merge(o *Stats) {
	if o.C != s.C {
		panic(fmt.Sprintf("crowd: Stats.Merge: C = %d and %d", s.C, o.C))
	}
	s.Items += o.Items
	s.Pairs += o.Pairs
	s.Agree += o.Agree
	for c, v := range o.Class {
		s.Class[c] += v
	}
	for a, y := range o.ann {
		x := s.of(a)
		x.given += y.given
		if y.dense != nil {
			for i, v := range y.dense {
				x.dense[i] += v
			}
		} else {
			for k, v := range y.sparse {
				x.sparse[k] += v
			}
		}
	}
}

// Annotators returns the annotators' keys, ascending.
func (s *Stats) Annotators() []int64 {
	keys := make([]int64, 0, len(s.ann))
	for a := range s.ann {
		keys = append(keys, a)
	}
	slices.Sort(keys)
	return keys
}

// Given is how many labels annotator a gave.
func (s *Stats) Given(a int64) int64 {
	if x := s.ann[a]; x != nil {
		return x.given
	}
	return 0
}

// Cells calls fn for every nonzero count of annotator a, ordered by
// (label, class).
func (s *Stats) Cells(a int64, fn func(class, label int32, v int64)) {
	x := s.ann[a]
	if x == nil {
		return
	}
	C := s.C
	if x.dense != nil {
		for l := 0; l < C; l++ {
			for c := 0; c < C; c++ {
				if v := x.dense[c*C+l]; v != 0 {
					fn(int32(c), int32(l), v)
				}
			}
		}
		return
	}
	keys := make([][2]int32, 0, len(x.sparse))
	for k, v := range x.sparse {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(p, q [2]int32) int {
		if c := cmp.Compare(p[1], q[1]); c != 0 {
			return c
		}
		return cmp.Compare(p[0], q[0])
	})
	for _, k := range keys {
		fn(k[0], k[1], x.sparse[k])
	}
}

// NumCells is the number of nonzero counts.
func (s *Stats) NumCells() int {
	n := 0
	for a := range s.ann {
		s.Cells(a, func(int32, int32, int64) { n++ })
	}
	return n
}
