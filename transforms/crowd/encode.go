package crowd

import (
	"fmt"
	"slices"

	"github.com/relabel/relabel/schemas/wire"
)

// MarshalBinary encodes s, cells in SortedCells order (so equal statistics
// encode to equal bytes).
func (s *Stats) MarshalBinary() ([]byte, error) {
	var w wire.Writer
	w.Uvarint(uint64(s.C))
	w.Varint(s.Items)
	wire.Slice(&w, s.Class)
	cells := s.SortedCells()
	a := make([]int64, len(cells))
	cl := make([]int32, 2*len(cells))
	v := make([]int64, len(cells))
	for k, c := range cells {
		a[k], cl[2*k], cl[2*k+1], v[k] = c.Annotator, c.Class, c.Label, s.Cells[c]
	}
	wire.Slice(&w, a)
	wire.Slice(&w, cl)
	wire.Slice(&w, v)
	keys := make([]int64, 0, len(s.Given))
	for k := range s.Given {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	g := make([]int64, len(keys))
	for k, a := range keys {
		g[k] = s.Given[a]
	}
	wire.Slice(&w, keys)
	wire.Slice(&w, g)
	return w.B, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (s *Stats) UnmarshalBinary(b []byte) error {
	r := wire.Reader{B: b}
	*s = *NewStats(int(r.Uvarint()))
	s.Items = r.Varint()
	s.Class = wire.ReadSlice[int64](&r)
	a := wire.ReadSlice[int64](&r)
	cl := wire.ReadSlice[int32](&r)
	v := wire.ReadSlice[int64](&r)
	keys := wire.ReadSlice[int64](&r)
	g := wire.ReadSlice[int64](&r)
	if err := r.Err(); err != nil {
		return fmt.Errorf("crowd: decoding statistics: %w", err)
	}
	if len(cl) != 2*len(a) || len(v) != len(a) || len(g) != len(keys) || len(s.Class) != s.C {
		return fmt.Errorf("crowd: decoding statistics: inconsistent lengths")
	}
	for k := range a {
		s.Cells[Cell{a[k], cl[2*k], cl[2*k+1]}] = v[k]
	}
	for k, key := range keys {
		s.Given[key] = g[k]
	}
	return nil
}

// MarshalBinary encodes m.
func (m *Model) MarshalBinary() ([]byte, error) {
	var w wire.Writer
	w.Uvarint(uint64(m.C))
	w.Float64(m.Strength)
	wire.Slice(&w, m.Prior)
	wire.Slice(&w, m.Pooled)
	w.Uvarint(uint64(len(m.Annotators)))
	for i := range m.Annotators {
		an := &m.Annotators[i]
		w.Varint(an.Key)
		w.Varint(an.Given)
		wire.Slice(&w, an.Row)
		wire.Slice(&w, an.Labels)
		wire.Slice(&w, an.Off)
		wire.Slice(&w, an.Class)
		wire.Slice(&w, an.Count)
	}
	return w.B, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (m *Model) UnmarshalBinary(b []byte) error {
	r := wire.Reader{B: b}
	*m = Model{C: int(r.Uvarint())}
	m.Strength = r.Float64()
	m.Prior = wire.ReadSlice[float64](&r)
	m.Pooled = wire.ReadSlice[float64](&r)
	n := r.Uvarint()
	if n > uint64(len(b)) {
		return fmt.Errorf("crowd: decoding model: %d annotators in %d bytes", n, len(b))
	}
	m.Annotators = make([]Annotator, n)
	for i := range m.Annotators {
		an := &m.Annotators[i]
		an.Key = r.Varint()
		an.Given = r.Varint()
		an.Row = wire.ReadSlice[float64](&r)
		an.Labels = wire.ReadSlice[int32](&r)
		an.Off = wire.ReadSlice[int32](&r)
		an.Class = wire.ReadSlice[int32](&r)
		an.Count = wire.ReadSlice[float64](&r)
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("crowd: decoding model: %w", err)
	}
	for i := range m.Annotators {
		an := &m.Annotators[i]
		if len(an.Row) != m.C || len(an.Off) != len(an.Labels)+1 || len(an.Class) != len(an.Count) ||
			(len(an.Off) > 0 && (an.Off[0] != 0 || int(an.Off[len(an.Off)-1]) != len(an.Class))) {
			return fmt.Errorf("crowd: decoding model: annotator %d: inconsistent lengths", an.Key)
		}
		for _, c := range an.Class {
			if c < 0 || int(c) >= m.C {
				return fmt.Errorf("crowd: decoding model: annotator %d: class %d", an.Key, c)
			}
		}
		for _, l := range an.Labels {
			if l < 0 || int(l) >= m.C {
				return fmt.Errorf("crowd: decoding model: annotator %d: label %d", an.Key, l)
			}
		}
	}
	if len(m.Prior) != m.C || len(m.Pooled) != m.C*m.C {
		return fmt.Errorf("crowd: decoding model: inconsistent lengths")
	}
	m.finish()
	return nil
}
