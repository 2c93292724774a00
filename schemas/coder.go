package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// The bulk coders. Beam's default coder for a struct holding []float32 encodes
// one float at a time (86 s against 6 s for 2,000 x 64k floats through a
// Reshuffle, measured in issue 3), so Rows and Cleaned are encoded here as
// whole slices of little-endian bytes. Register them with
//
//	beam.RegisterCoder(reflect.TypeOf(schemas.Rows{}), schemas.EncodeRows, schemas.DecodeRows)
//
// The format: a tag byte and version, the scalar fields, then each slice as
// uvarint(len+1) (0 meaning nil, so that nil and empty slices round-trip
// exactly) followed by its elements.

const (
	tagRows    = 'R'
	tagCleaned = 'C'
	version    = 1
)

// nativeLittleEndian is true on the machines relabel runs on (amd64, arm64):
// there a slice's memory already is its encoding and is copied in one go.
var nativeLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// EncodeRows is the Beam encoder of Rows.
func EncodeRows(r Rows) ([]byte, error) { return AppendRows(nil, &r), nil }

// AppendRows appends the encoding of r to dst.
func AppendRows(dst []byte, r *Rows) []byte {
	dst = grow(dst, 64+len(r.Shard)+8*len(r.IDs)+4*(len(r.Features)+len(r.Labels)+len(r.LabelOff))+strsSize(r.StrIDs))
	dst = append(dst, tagRows, version)
	dst = appendString(dst, r.Shard)
	dst = binary.AppendVarint(dst, r.Offset)
	dst = append(dst, byte(r.IDKind), boolByte(r.Multi))
	dst = binary.AppendUvarint(dst, uint64(r.D))
	dst = appendSlice(dst, r.IDs)
	dst = appendStrings(dst, r.StrIDs)
	dst = appendSlice(dst, r.Features)
	dst = appendSlice(dst, r.Labels)
	dst = appendSlice(dst, r.LabelOff)
	return dst
}

// DecodeRows is the Beam decoder of Rows.
func DecodeRows(b []byte) (Rows, error) {
	var r Rows
	d := decoder{b: b}
	d.header(tagRows)
	r.Shard = d.string()
	r.Offset = d.varint()
	r.IDKind = IDKind(d.byte())
	r.Multi = d.bool()
	r.D = int(d.uvarint())
	r.IDs = readSlice[int64](&d)
	r.StrIDs = d.strings()
	r.Features = readSlice[float32](&d)
	r.Labels = readSlice[int32](&d)
	r.LabelOff = readSlice[int32](&d)
	if err := d.finish(); err != nil {
		return Rows{}, fmt.Errorf("schemas: decoding Rows: %w", err)
	}
	return r, nil
}

// EncodeCleaned is the Beam encoder of Cleaned.
func EncodeCleaned(c Cleaned) ([]byte, error) { return AppendCleaned(nil, &c), nil }

// AppendCleaned appends the encoding of c to dst.
func AppendCleaned(dst []byte, c *Cleaned) []byte {
	n := 64 + len(c.Shard) + 8*len(c.IDs) + strsSize(c.StrIDs) +
		4*(len(c.Labels)+len(c.LabelOff)+len(c.CleanLabel)+len(c.CleanProb)+len(c.GivenProb)+
			len(c.PostOff)+len(c.PostClass)+len(c.PostProb)) + len(c.Changed)
	dst = grow(dst, n)
	dst = append(dst, tagCleaned, version)
	dst = appendString(dst, c.Shard)
	dst = binary.AppendVarint(dst, c.Offset)
	dst = append(dst, byte(c.IDKind), boolByte(c.Multi))
	dst = appendSlice(dst, c.IDs)
	dst = appendStrings(dst, c.StrIDs)
	dst = appendSlice(dst, c.Labels)
	dst = appendSlice(dst, c.LabelOff)
	dst = appendSlice(dst, c.CleanLabel)
	dst = appendSlice(dst, c.CleanProb)
	dst = appendSlice(dst, c.GivenProb)
	dst = appendBools(dst, c.Changed)
	dst = appendSlice(dst, c.PostOff)
	dst = appendSlice(dst, c.PostClass)
	dst = appendSlice(dst, c.PostProb)
	return dst
}

// DecodeCleaned is the Beam decoder of Cleaned.
func DecodeCleaned(b []byte) (Cleaned, error) {
	var c Cleaned
	d := decoder{b: b}
	d.header(tagCleaned)
	c.Shard = d.string()
	c.Offset = d.varint()
	c.IDKind = IDKind(d.byte())
	c.Multi = d.bool()
	c.IDs = readSlice[int64](&d)
	c.StrIDs = d.strings()
	c.Labels = readSlice[int32](&d)
	c.LabelOff = readSlice[int32](&d)
	c.CleanLabel = readSlice[int32](&d)
	c.CleanProb = readSlice[float32](&d)
	c.GivenProb = readSlice[float32](&d)
	c.Changed = d.bools()
	c.PostOff = readSlice[int32](&d)
	c.PostClass = readSlice[int32](&d)
	c.PostProb = readSlice[float32](&d)
	if err := d.finish(); err != nil {
		return Cleaned{}, fmt.Errorf("schemas: decoding Cleaned: %w", err)
	}
	return c, nil
}

// word is the element types encoded in bulk.
type word interface {
	int32 | int64 | float32
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		return nb
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func strsSize(s []string) int {
	n := 0
	for _, x := range s {
		n += len(x) + 2
	}
	return n
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendLen(b []byte, n int, isNil bool) []byte {
	if isNil {
		return binary.AppendUvarint(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendSlice[T word](b []byte, s []T) []byte {
	b = appendLen(b, len(s), s == nil)
	if len(s) == 0 {
		return b
	}
	if nativeLittleEndian {
		size := int(unsafe.Sizeof(s[0]))
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*size)...)
	}
	b, err := binary.Append(b, binary.LittleEndian, s)
	if err != nil {
		panic(err) // fixed-size element types always encode
	}
	return b
}

func appendBools(b []byte, s []bool) []byte {
	b = appendLen(b, len(s), s == nil)
	for _, v := range s {
		b = append(b, boolByte(v))
	}
	return b
}

// appendStrings writes all the lengths, then all the bytes.
func appendStrings(b []byte, s []string) []byte {
	b = appendLen(b, len(s), s == nil)
	for _, x := range s {
		b = binary.AppendUvarint(b, uint64(len(x)))
	}
	for _, x := range s {
		b = append(b, x...)
	}
	return b
}

// decoder reads an encoding, remembering the first error: after one, every
// read returns zero values, and finish reports it.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated input")

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) header(tag byte) {
	if len(d.b) < 2 {
		d.fail(errShort)
		return
	}
	if d.b[0] != tag || d.b[1] != version {
		d.fail(fmt.Errorf("header %q %d, want %q %d", d.b[0], d.b[1], tag, version))
		return
	}
	d.b = d.b[2:]
}

func (d *decoder) finish() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return d.err
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail(errShort)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bool() bool {
	switch v := d.byte(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail(fmt.Errorf("bool byte %d", v))
		return false
	}
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes takes the next n bytes, checking n against what is left before any
// allocation, so that a corrupt length cannot ask for gigabytes.
func (d *decoder) bytes(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes(d.uvarint())) }

// length reads a slice length: -1 for nil.
func (d *decoder) length(elemSize uint64) int {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return -1
	}
	n--
	if n > uint64(len(d.b))/elemSize {
		d.fail(errShort)
		return -1
	}
	return int(n)
}

func readSlice[T word](d *decoder) []T {
	var zero T
	size := uint64(unsafe.Sizeof(zero))
	n := d.length(size)
	if n < 0 {
		return nil
	}
	s := make([]T, n)
	if n == 0 {
		return s
	}
	src := d.bytes(uint64(n) * size)
	if nativeLittleEndian {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(src)), src)
		return s
	}
	if _, err := binary.Decode(src, binary.LittleEndian, s); err != nil {
		d.fail(err)
	}
	return s
}

func (d *decoder) bools() []bool {
	n := d.length(1)
	if n < 0 {
		return nil
	}
	s := make([]bool, n)
	for i, v := range d.bytes(uint64(n)) {
		if v > 1 {
			d.fail(fmt.Errorf("bool byte %d", v))
			return nil
		}
		s[i] = v == 1
	}
	return s
}

func (d *decoder) strings() []string {
	n := d.length(1) // each string has at least its one-byte length
	if n < 0 {
		return nil
	}
	lens := make([]uint64, n)
	total := uint64(0)
	for i := range lens {
		lens[i] = d.uvarint()
		total += lens[i]
		if total > uint64(len(d.b)) {
			d.fail(errShort)
			return nil
		}
	}
	// One allocation for all the bytes; the strings share it.
	all := string(d.bytes(total))
	s := make([]string, n)
	off := uint64(0)
	for i, l := range lens {
		s[i] = all[off : off+l]
		off += l
	}
	return s
}
