package crowd

import (
	"fmt"

	"github.com/relabel/relabel/schemas/wire"
)

// MarshalBinary encodes s: annotators ascending, each one's nonzero
// counts by (label, class), so equal statistics encode to equal bytes.
func (s *Stats) MarshalBinary() ([]byte, error) {
	var w wire.Writer
	w.Uvarint(uint64(s.C))
	w.Varint(s.Items)
	w.Varint(s.Pairs)
	w.Varint(s.Agree)
	wire.Slice(&w, s.Class)
	keys := s.Annotators()
	given := make([]int64, len(keys))
	off := make([]int32, 1, len(keys)+1)
	var cl []int32
	var v []int64
	for k, a := range keys {
		given[k] = s.Given(a)
		s.Cells(a, func(c, l int32, x int64) {
			cl = append(cl, c, l)
			v = append(v, x)
		})
		off = append(off, int32(len(v)))
	}
	wire.Slice(&w, keys)
	wire.Slice(&w, given)
	wire.Slice(&w, off)
	wire.Slice(&w, cl)
	wire.Slice(&w, v)
	return w.B, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (s *Stats) UnmarshalBinary(b []byte) error {
	r := wire.Reader{B: b}
	C := int(r.Uvarint())
	if C < 1 || C > 1<<20 {
		return fmt.Errorf("crowd: decoding statistics: C = %d", C)
	}
	*s = *NewStats(C)
	s.Items = r.Varint()
	s.Pairs = r.Varint()
	s.Agree = r.Varint()
	s.Class = wire.ReadSlice[int64](&r)
	keys := wire.ReadSlice[int64](&r)
	given := wire.ReadSlice[int64](&r)
	off := wire.ReadSlice[int32](&r)
	cl := wire.ReadSlice[int32](&r)
	v := wire.ReadSlice[int64](&r)
	if err := r.Err(); err != nil {
		return fmt.Errorf("crowd: decoding statistics: %w", err)
	}
	if len(s.Class) != C || len(given) != len(keys) || len(off) != len(keys)+1 || len(cl) != 2*len(v) || off[0] != 0 || int(off[len(keys)]) != len(v) {
		return fmt.Errorf("crowd: decoding statistics: inconsistent lengths")
	}
	for k, a := range keys {
		x := s.of(a)
		x.given = given[k]
		if off[k+1] < off[k] {
			return fmt.Errorf("crowd: decoding statistics: offsets decrease")
		}
		for e := off[k]; e < off[k+1]; e++ {
			c, l := cl[2*e], cl[2*e+1]
			if c < 0 || int(c) >= C || l < 0 || int(l) >= C {
				return fmt.Errorf("crowd: decoding statistics: cell (%d, %d) for C = %d", c, l, C)
			}
			x.add(c, l, C, v[e])
		}
	}
	return nil
}

// MarshalBinary encodes m.
func (m *Model) MarshalBinary() ([]byte, error) {
	var w wire.Writer
	w.Uvarint(uint64(m.C))
	w.Float64(m.Strength)
	w.Float64(m.Accuracy)
	w.Float64(m.SkillStrength)
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
		w.Float64(an.Skill)
	}
	return w.B, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (m *Model) UnmarshalBinary(b []byte) error {
	r := wire.Reader{B: b}
	*m = Model{C: int(r.Uvarint())}
	m.Strength = r.Float64()
	m.Accuracy = r.Float64()
	m.SkillStrength = r.Float64()
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
		an.Skill = r.Float64()
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
