package ivfstages

import (
	"encoding/binary"
	"errors"

	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/mixture"
)

// The ivf rounds ship every item's state each round (Block, JoinMsg), so
// their coders pack states tighter than putStates: offsets as per-item and
// per-class counts and class/category indices, each in the fewest bytes
// (1, 2 or 4) their largest value needs. With C <= 256 and C0 = 10 a full
// state drops from about 1.0 KB to 0.6 KB; the probabilities (float32) are
// kept exactly.

// putSmall writes non-negative ints in the narrowest of 1, 2 or 4 bytes.
func putSmall(w *wire.Writer, n int, at func(i int) int32) {
	var m int32
	for i := 0; i < n; i++ {
		m = max(m, at(i))
	}
	width := byte(4)
	switch {
	case m < 1<<8:
		width = 1
	case m < 1<<16:
		width = 2
	}
	w.Uvarint(uint64(n))
	w.Byte(width)
	for i := 0; i < n; i++ {
		v := uint32(at(i))
		switch width {
		case 1:
			w.B = append(w.B, byte(v))
		case 2:
			w.B = binary.LittleEndian.AppendUint16(w.B, uint16(v))
		default:
			w.B = binary.LittleEndian.AppendUint32(w.B, v)
		}
	}
}

var errSmall = errors.New("ivfstages: truncated packed state")

// getSmall reads putSmall's ints, calling set for each.
func getSmall(r *wire.Reader, set func(n, i int, v int32)) error {
	n := int(r.Uvarint())
	width := int(r.Byte())
	if width != 1 && width != 2 && width != 4 || n < 0 || len(r.B) < n*width {
		r.B = nil
		return errSmall
	}
	b := r.B[:n*width]
	r.B = r.B[n*width:]
	for i := 0; i < n; i++ {
		var v int32
		switch width {
		case 1:
			v = int32(b[i])
		case 2:
			v = int32(binary.LittleEndian.Uint16(b[2*i:]))
		default:
			v = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		set(n, i, v)
	}
	if n == 0 {
		set(0, -1, 0)
	}
	return nil
}

func putStatesPacked(w *wire.Writer, s *mixture.States) {
	w.Bool(s.ItemOff != nil)
	if s.ItemOff == nil {
		return
	}
	putSmall(w, s.Len(), func(i int) int32 { return s.ItemOff[i+1] - s.ItemOff[i] })
	putSmall(w, len(s.Class), func(i int) int32 { return s.Class[i] })
	wire.Slice(w, s.Pi)
	wire.Slice(w, s.Rem)
	putSmall(w, len(s.Class), func(e int) int32 { return s.RowOff[e+1] - s.RowOff[e] })
	putSmall(w, len(s.Cat), func(i int) int32 { return s.Cat[i] })
	wire.Slice(w, s.P)
	wire.Slice(w, s.Moved)
}

func getStatesPacked(r *wire.Reader) (mixture.States, error) {
	var s mixture.States
	if !r.Bool() {
		return s, nil
	}
	offsets := func(dst *[]int32) func(n, i int, v int32) {
		return func(n, i int, v int32) {
			if *dst == nil {
				*dst = make([]int32, 1, n+1)
			}
			if i >= 0 {
				*dst = append(*dst, (*dst)[len(*dst)-1]+v)
			}
		}
	}
	values := func(dst *[]int32) func(n, i int, v int32) {
		return func(n, i int, v int32) {
			if *dst == nil && n > 0 { // empty stays nil, as Reset leaves it
				*dst = make([]int32, n)
			}
			if i >= 0 {
				(*dst)[i] = v
			}
		}
	}
	err := errors.Join(getSmall(r, offsets(&s.ItemOff)), getSmall(r, values(&s.Class)))
	s.Pi = wire.ReadSlice[float32](r)
	s.Rem = wire.ReadSlice[float32](r)
	err = errors.Join(err, getSmall(r, offsets(&s.RowOff)), getSmall(r, values(&s.Cat)))
	s.P = wire.ReadSlice[float32](r)
	s.Moved = wire.ReadSlice[float32](r)
	return s, err
}
