package mixture

import (
	"math"
	"slices"
)

// States is the packed, flat form of a batch of item states: what a PCollection
// element or a side input carries (a bulk coder writes each slice at once).
// Item i owns classes [ItemOff[i], ItemOff[i+1]); class entry e owns row entries
// [RowOff[e], RowOff[e+1]). Storage is float32: states are posteriors, and half
// the bytes means half the shuffle.
type States struct {
	ItemOff []int32
	Class   []int32
	Pi      []float32
	Rem     []float32
	RowOff  []int32
	Cat     []int32
	P       []float32
	// Moved is, per item, how far its state has moved (Distance, summed over
	// the rounds it ran) since it last moved more than Params.ActiveTol: the
	// rounds rerun an item only when it or a neighbour moved that much
	// (engine.RunRound). nil when nothing is tracked (ActiveTol 0, or the initial
	// states): every item then counts as moved.
	Moved []float32
}

// Len is the number of items.
func (ss *States) Len() int {
	if len(ss.ItemOff) == 0 {
		return 0
	}
	return len(ss.ItemOff) - 1
}

// Reset empties ss, keeping storage.
func (ss *States) Reset() {
	ss.ItemOff = append(ss.ItemOff[:0], 0)
	ss.Class, ss.Pi, ss.Rem = ss.Class[:0], ss.Pi[:0], ss.Rem[:0]
	ss.RowOff = append(ss.RowOff[:0], 0)
	ss.Cat, ss.P = ss.Cat[:0], ss.P[:0]
	ss.Moved = ss.Moved[:0]
}

// Reserve empties ss and sizes it for n items of classes classes and
// entries row entries in all, so packing them appends without growing.
func (ss *States) Reserve(n, classes, entries int) {
	ss.ItemOff = append(make([]int32, 0, n+1), 0)
	ss.Class, ss.Pi, ss.Rem = make([]int32, 0, classes), make([]float32, 0, classes), make([]float32, 0, classes)
	ss.RowOff = append(make([]int32, 0, classes+1), 0)
	ss.Cat, ss.P = make([]int32, 0, entries), make([]float32, 0, entries)
	ss.Moved = nil
}

// Sizes returns how many classes and row entries items [lo, hi) hold.
func (ss *States) Sizes(lo, hi int) (classes, entries int) {
	c0, c1 := ss.ItemOff[lo], ss.ItemOff[hi]
	return int(c1 - c0), int(ss.RowOff[c1] - ss.RowOff[c0])
}

// Append packs s as the next item.
func (ss *States) Append(s *State) {
	if len(ss.ItemOff) == 0 {
		ss.Reset()
	}
	for k, c := range s.Class {
		r := &s.Rows[k]
		ss.Class = append(ss.Class, c)
		ss.Pi = append(ss.Pi, float32(s.Pi[k]))
		ss.Rem = append(ss.Rem, float32(r.Rem))
		ss.Cat = append(ss.Cat, r.Cat...)
		n := len(ss.P)
		ss.P = slices.Grow(ss.P, len(r.P))[:n+len(r.P)]
		ps := ss.P[n:]
		for j, p := range r.P {
			ps[j] = float32(p)
		}
		ss.RowOff = append(ss.RowOff, int32(len(ss.Cat)))
	}
	ss.ItemOff = append(ss.ItemOff, int32(len(ss.Class)))
}

// AppendFrom packs item i of o as the next item of ss.
func (ss *States) AppendFrom(o *States, i int) {
	if len(ss.ItemOff) == 0 {
		ss.Reset()
	}
	lo, hi := o.ItemOff[i], o.ItemOff[i+1]
	for e := lo; e < hi; e++ {
		ss.Class = append(ss.Class, o.Class[e])
		ss.Pi = append(ss.Pi, o.Pi[e])
		ss.Rem = append(ss.Rem, o.Rem[e])
		ss.Cat = append(ss.Cat, o.Cat[o.RowOff[e]:o.RowOff[e+1]]...)
		ss.P = append(ss.P, o.P[o.RowOff[e]:o.RowOff[e+1]]...)
		ss.RowOff = append(ss.RowOff, int32(len(ss.Cat)))
	}
	ss.ItemOff = append(ss.ItemOff, int32(len(ss.Class)))
	if len(o.Moved) > 0 {
		ss.Moved = append(ss.Moved, o.Moved[i])
	}
}

// Concat packs the items of parts, in order, into ss (emptied first),
// sizing every slice once: what AppendFrom of each item would give.
func (ss *States) Concat(parts []States) {
	var items, classes, entries, moved int
	for i := range parts {
		p := &parts[i]
		items += p.Len()
		classes += len(p.Class)
		entries += len(p.Cat)
		moved += len(p.Moved)
	}
	ss.Reserve(items, classes, entries)
	if moved > 0 {
		ss.Moved = make([]float32, 0, moved)
	}
	for i := range parts {
		p := &parts[i]
		if p.Len() == 0 {
			continue
		}
		c0, e0 := int32(len(ss.Class)), int32(len(ss.Cat))
		for _, off := range p.ItemOff[1:] {
			ss.ItemOff = append(ss.ItemOff, c0+off)
		}
		for _, off := range p.RowOff[1:] {
			ss.RowOff = append(ss.RowOff, e0+off)
		}
		ss.Class, ss.Pi, ss.Rem = append(ss.Class, p.Class...), append(ss.Pi, p.Pi...), append(ss.Rem, p.Rem...)
		ss.Cat, ss.P = append(ss.Cat, p.Cat...), append(ss.P, p.P...)
		ss.Moved = append(ss.Moved, p.Moved...)
	}
}

// MovedOf is item i's Moved, +Inf when untracked (every item counts as moved).
func (ss *States) MovedOf(i int) float32 {
	if len(ss.Moved) == 0 {
		return float32(math.Inf(1))
	}
	return ss.Moved[i]
}

// Get unpacks item i into dst, reusing dst's storage.
func (ss *States) Get(dst *State, i int) {
	dst.Reset()
	for e := ss.ItemOff[i]; e < ss.ItemOff[i+1]; e++ {
		r := dst.add(ss.Class[e], float64(ss.Pi[e]))
		r.Rem = float64(ss.Rem[e])
		lo, hi := ss.RowOff[e], ss.RowOff[e+1]
		r.Cat = append(r.Cat, ss.Cat[lo:hi]...)
		// Converted into a slice held in a local: appending through r
		// reloaded and stored the row's slice header per entry, and a
		// round unpacks every neighbour's state (Get was a tenth of a
		// round's CPU).
		src := ss.P[lo:hi]
		ps := resize(r.P, len(src))
		for j, p := range src {
			ps[j] = float64(p)
		}
		r.P = ps
	}
}

// Top returns item i's most probable class and its probability ((-1, 0) when
// empty). Packed states are stored most probable first (State.Truncate).
func (ss *States) Top(i int) (int32, float32) {
	lo, hi := ss.ItemOff[i], ss.ItemOff[i+1]
	if lo == hi {
		return -1, 0
	}
	return ss.Class[lo], ss.Pi[lo]
}

// Quantize rounds s's probabilities to float32, as packing into States does:
// an in-process run that quantizes after every round computes exactly what a
// pipeline that ships packed states between rounds computes.
func (s *State) Quantize() {
	for k := range s.Pi {
		s.Pi[k] = float64(float32(s.Pi[k]))
		r := &s.Rows[k]
		r.Rem = float64(float32(r.Rem))
		for e := range r.P {
			r.P[e] = float64(float32(r.P[e]))
		}
	}
}
