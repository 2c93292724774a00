package schemas

import (
	"errors"
	"fmt"

	"github.com/relabel/relabel/schemas/wire"
)

// The bulk coders. Beam's default coder for a struct holding []float32 encodes
// one float at a time (86 s against 6 s for 2,000 x 64k floats through a
// Reshuffle), so Rows and Cleaned are encoded here as
// whole slices of little-endian bytes (package wire). Register them with
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

// EncodeRows is the Beam encoder of Rows.
func EncodeRows(r Rows) ([]byte, error) { return AppendRows(nil, &r), nil }

// AppendRows appends the encoding of r to dst.
func AppendRows(dst []byte, r *Rows) []byte {
	w := wire.Writer{B: grow(dst, 64+len(r.Shard)+8*len(r.IDs)+4*(len(r.Features)+len(r.Labels)+len(r.LabelOff))+strsSize(r.StrIDs))}
	w.Byte(tagRows)
	w.Byte(version)
	w.String(r.Shard)
	w.Varint(r.Offset)
	w.Byte(byte(r.IDKind))
	w.Bool(r.Multi)
	w.Uvarint(uint64(r.D))
	wire.Slice(&w, r.IDs)
	w.Strings(r.StrIDs)
	wire.Slice(&w, r.Features)
	wire.Slice(&w, r.Labels)
	wire.Slice(&w, r.LabelOff)
	return w.B
}

// DecodeRows is the Beam decoder of Rows.
func DecodeRows(b []byte) (Rows, error) {
	var r Rows
	b, err := body(b, tagRows)
	if err != nil {
		return Rows{}, fmt.Errorf("schemas: decoding Rows: %w", err)
	}
	d := wire.Reader{B: b}
	r.Shard = d.String()
	r.Offset = d.Varint()
	r.IDKind = IDKind(d.Byte())
	r.Multi = d.Bool()
	r.D = int(d.Uvarint())
	r.IDs = wire.ReadSlice[int64](&d)
	r.StrIDs = d.Strings()
	r.Features = wire.ReadSlice[float32](&d)
	r.Labels = wire.ReadSlice[int32](&d)
	r.LabelOff = wire.ReadSlice[int32](&d)
	if err := d.Err(); err != nil {
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
	w := wire.Writer{B: grow(dst, n)}
	w.Byte(tagCleaned)
	w.Byte(version)
	w.String(c.Shard)
	w.Varint(c.Offset)
	w.Byte(byte(c.IDKind))
	w.Bool(c.Multi)
	wire.Slice(&w, c.IDs)
	w.Strings(c.StrIDs)
	wire.Slice(&w, c.Labels)
	wire.Slice(&w, c.LabelOff)
	wire.Slice(&w, c.CleanLabel)
	wire.Slice(&w, c.CleanProb)
	wire.Slice(&w, c.GivenProb)
	w.Bools(c.Changed)
	wire.Slice(&w, c.PostOff)
	wire.Slice(&w, c.PostClass)
	wire.Slice(&w, c.PostProb)
	return w.B
}

// DecodeCleaned is the Beam decoder of Cleaned.
func DecodeCleaned(b []byte) (Cleaned, error) {
	var c Cleaned
	b, err := body(b, tagCleaned)
	if err != nil {
		return Cleaned{}, fmt.Errorf("schemas: decoding Cleaned: %w", err)
	}
	d := wire.Reader{B: b}
	c.Shard = d.String()
	c.Offset = d.Varint()
	c.IDKind = IDKind(d.Byte())
	c.Multi = d.Bool()
	c.IDs = wire.ReadSlice[int64](&d)
	c.StrIDs = d.Strings()
	c.Labels = wire.ReadSlice[int32](&d)
	c.LabelOff = wire.ReadSlice[int32](&d)
	c.CleanLabel = wire.ReadSlice[int32](&d)
	c.CleanProb = wire.ReadSlice[float32](&d)
	c.GivenProb = wire.ReadSlice[float32](&d)
	c.Changed = d.Bools()
	c.PostOff = wire.ReadSlice[int32](&d)
	c.PostClass = wire.ReadSlice[int32](&d)
	c.PostProb = wire.ReadSlice[float32](&d)
	if err := d.Err(); err != nil {
		return Cleaned{}, fmt.Errorf("schemas: decoding Cleaned: %w", err)
	}
	return c, nil
}

// body checks the tag and version and returns what follows them.
func body(b []byte, tag byte) ([]byte, error) {
	if len(b) < 2 {
		return nil, errors.New("truncated input")
	}
	if b[0] != tag || b[1] != version {
		return nil, fmt.Errorf("header %q %d, want %q %d", b[0], b[1], tag, version)
	}
	return b[2:], nil
}

// grow makes room for n more bytes, so that encoding a batch allocates once.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		return nb
	}
	return b
}

func strsSize(s []string) int {
	n := 0
	for _, x := range s {
		n += len(x) + 2
	}
	return n
}
