// Package wire is the bulk binary encoding behind relabel's Beam coders. Beam's
// default coder for a struct holding []float32 encodes one float at a time
// (86 s against 6 s for 2,000 x 64k floats through a Reshuffle), so every element type that carries numbers is encoded through here:
// slices as uvarint(len+1) (0 = nil, so nil and empty round-trip exactly) then
// their little-endian bytes copied in one go.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Word is the element types encoded in bulk.
type Word interface {
	int32 | int64 | float32 | float64 | uint64
}

var nativeLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Writer appends encodings to B.
type Writer struct{ B []byte }

// Byte appends one byte.
func (w *Writer) Byte(b byte) { w.B = append(w.B, b) }

// Bool appends a bool as a byte.
func (w *Writer) Bool(v bool) {
	if v {
		w.B = append(w.B, 1)
	} else {
		w.B = append(w.B, 0)
	}
}

// Uvarint appends an unsigned varint.
func (w *Writer) Uvarint(u uint64) { w.B = binary.AppendUvarint(w.B, u) }

// Varint appends a signed varint.
func (w *Writer) Varint(v int64) { w.B = binary.AppendVarint(w.B, v) }

// Float64 appends a float64's bits.
func (w *Writer) Float64(f float64) { w.B = binary.LittleEndian.AppendUint64(w.B, math.Float64bits(f)) }

// String appends a length-prefixed string.
func (w *Writer) String(s string) {
	w.Uvarint(uint64(len(s)))
	w.B = append(w.B, s...)
}

func (w *Writer) length(n int, isNil bool) {
	if isNil {
		w.Uvarint(0)
		return
	}
	w.Uvarint(uint64(n) + 1)
}

// Slice appends a slice of fixed-size words in bulk.
func Slice[T Word](w *Writer, s []T) {
	w.length(len(s), s == nil)
	if len(s) == 0 {
		return
	}
	if nativeLittleEndian {
		size := int(unsafe.Sizeof(s[0]))
		w.B = append(w.B, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*size)...)
		return
	}
	var err error
	w.B, err = binary.Append(w.B, binary.LittleEndian, s)
	if err != nil {
		panic(err) // fixed-size element types always encode
	}
}

// Bools appends a bool slice, one byte each.
func (w *Writer) Bools(s []bool) {
	w.length(len(s), s == nil)
	for _, v := range s {
		w.Bool(v)
	}
}

// Strings appends all the lengths, then all the bytes.
func (w *Writer) Strings(s []string) {
	w.length(len(s), s == nil)
	for _, x := range s {
		w.Uvarint(uint64(len(x)))
	}
	for _, x := range s {
		w.B = append(w.B, x...)
	}
}

// Reader decodes, remembering the first error: after one, every read returns
// zero values and Err reports it.
type Reader struct {
	B   []byte
	err error
}

var errShort = errors.New("truncated input")

func (r *Reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.B = nil
}

// Failed returns the first error, and unlike Err none for the bytes not
// read yet: for a reader that stops before the end of an encoding.
func (r *Reader) Failed() error { return r.err }

// Err returns the first error, or an error for trailing bytes.
func (r *Reader) Err() error {
	if r.err == nil && len(r.B) != 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.B))
	}
	return r.err
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.B) < 1 {
		r.fail(errShort)
		return 0
	}
	b := r.B[0]
	r.B = r.B[1:]
	return b
}

// Bool reads a bool.
func (r *Reader) Bool() bool {
	switch b := r.Byte(); b {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(fmt.Errorf("bool byte %d", b))
		return false
	}
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.B)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Float64 reads a float64.
func (r *Reader) Float64() float64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

func (r *Reader) bytes(n uint64) []byte {
	if uint64(len(r.B)) < n {
		r.fail(errShort)
		return nil
	}
	b := r.B[:n:n]
	r.B = r.B[n:]
	return b
}

// String reads a length-prefixed string.
func (r *Reader) String() string { return string(r.bytes(r.Uvarint())) }

// length reads a slice length; -1 means nil.
func (r *Reader) length(elemSize uint64) int {
	n := r.Uvarint()
	if n == 0 || r.err != nil {
		return -1
	}
	n--
	if elemSize > 0 && n > uint64(len(r.B))/elemSize {
		r.fail(errShort)
		return -1
	}
	return int(n)
}

// ReadSlice reads a slice written by Slice.
func ReadSlice[T Word](r *Reader) []T {
	var zero T
	size := uint64(unsafe.Sizeof(zero))
	n := r.length(size)
	if n < 0 {
		return nil
	}
	s := make([]T, n)
	if n == 0 {
		return s
	}
	b := r.bytes(uint64(n) * size)
	if b == nil {
		return nil
	}
	if nativeLittleEndian {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(b)), b)
		return s
	}
	if _, err := binary.Decode(b, binary.LittleEndian, s); err != nil {
		r.fail(err)
		return nil
	}
	return s
}

// SkipSlice passes over a slice written by Slice without decoding it: for
// a reader that needs only some of an encoding's fields.
func SkipSlice[T Word](r *Reader) {
	var zero T
	size := uint64(unsafe.Sizeof(zero))
	if n := r.length(size); n > 0 {
		r.bytes(uint64(n) * size)
	}
}

// SkipStrings passes over a string slice written by Strings.
func (r *Reader) SkipStrings() {
	n := r.length(1)
	var total uint64
	for i := 0; i < n && r.err == nil; i++ {
		total += r.Uvarint()
	}
	r.bytes(total)
}

// Bools reads a bool slice.
func (r *Reader) Bools() []bool {
	n := r.length(1)
	if n < 0 {
		return nil
	}
	s := make([]bool, n)
	for i := range s {
		s[i] = r.Bool()
	}
	return s
}

// Strings reads a string slice.
func (r *Reader) Strings() []string {
	n := r.length(1)
	if n < 0 {
		return nil
	}
	lens := make([]uint64, n)
	for i := range lens {
		lens[i] = r.Uvarint()
	}
	s := make([]string, n)
	for i := range s {
		s[i] = string(r.bytes(lens[i]))
	}
	return s
}
