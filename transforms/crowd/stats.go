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

// Cell is one annotator's expected count of items of true class Class it
// labelled Label, in units of 1/One.
type Cell struct {
	Annotator int64
	Class     int32
	Label     int32
}

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
	// Cells holds every nonzero expected count.
	Cells map[Cell]int64
	// Given counts each annotator's labels.
	Given map[int64]int64
}

// NewStats returns empty statistics over c classes.
func NewStats(c int) *Stats {
	return &Stats{C: c, Class: make([]int64, c), Cells: map[Cell]int64{}, Given: map[int64]int64{}}
}

// Quantize is the fixed-point value of a probability.
func Quantize(p float64) int64 { return int64(math.Round(p * One)) }

// Add adds one item's posterior (len C) and its annotations: annotator
// ann[k] gave label lab[k].
func (s *Stats) Add(post []float64, ann []int64, lab []int32) {
	if len(post) != s.C || len(ann) != len(lab) {
		panic(fmt.Sprintf("crowd: Stats.Add: %d posteriors for C = %d, %d annotators for %d labels", len(post), s.C, len(ann), len(lab)))
	}
	s.Items++
	for c, p := range post {
		q := Quantize(p)
		if q == 0 {
			continue
		}
		s.Class[c] += q
		for k, a := range ann {
			s.Cells[Cell{a, int32(c), lab[k]}] += q
		}
	}
	for _, a := range ann {
		s.Given[a]++
	}
}

// Merge adds o into s.
func (s *Stats) Merge(o *Stats) {
	if o.C != s.C {
		panic(fmt.Sprintf("crowd: Stats.Merge: C = %d and %d", s.C, o.C))
	}
	s.Items += o.Items
	for c, v := range o.Class {
		s.Class[c] += v
	}
	for k, v := range o.Cells {
		s.Cells[k] += v
	}
	for k, v := range o.Given {
		s.Given[k] += v
	}
}

// SortedCells returns the cells ordered by (annotator, label, class): the
// order the M step and the encoders use.
func (s *Stats) SortedCells() []Cell {
	keys := make([]Cell, 0, len(s.Cells))
	for k := range s.Cells {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Cell) int {
		if c := cmp.Compare(a.Annotator, b.Annotator); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Label, b.Label); c != 0 {
			return c
		}
		return cmp.Compare(a.Class, b.Class)
	})
	return keys
}
