package shardio

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A minimal codec for the Thrift compact protocol, enough to read Parquet page
// headers and to rewrite a Parquet footer with changed offsets (pagecrc.go).
// arrow-go has the generated Parquet Thrift types, but in an internal package
// (parquet/internal/gen-go/parquet), and its page writer and reader neither
// set nor check a page's crc field (v18.8.0); apache/thrift's Go library
// decodes only into generated types. A generic tree keeps every field it does
// not know, so a rewritten footer differs from the original only where
// relabel changed it.

// Compact protocol type ids.
const (
	tStop   = 0
	tTrue   = 1
	tFalse  = 2
	tByte   = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
)

// tvalue is one decoded value: Int for the integer types and booleans (1
// true), Bin for binary and the bits of a double, Elems for list/set
// elements and map keys/values alternating, Fields for a struct.
type tvalue struct {
	Type     byte
	Int      int64
	Bin      []byte
	ElemType byte // list/set element type; map key type
	ValType  byte // map value type
	Elems    []tvalue
	Fields   []tfield
}

type tfield struct {
	ID int16
	V  tvalue
}

// field returns the struct's field id, or nil.
func (v *tvalue) field(id int16) *tvalue {
	for i := range v.Fields {
		if v.Fields[i].ID == id {
			return &v.Fields[i].V
		}
	}
	return nil
}

// setField sets field id to val, inserting it in id order when absent.
func (v *tvalue) setField(id int16, val tvalue) {
	for i := range v.Fields {
		if v.Fields[i].ID == id {
			v.Fields[i].V = val
			return
		}
		if v.Fields[i].ID > id {
			v.Fields = append(v.Fields[:i], append([]tfield{{id, val}}, v.Fields[i:]...)...)
			return
		}
	}
	v.Fields = append(v.Fields, tfield{id, val})
}

var errThrift = errors.New("corrupt Thrift data")

// tdecoder reads compact-protocol values from b, bounded in depth and in the
// number of elements a header may claim (no more than bytes remain: every
// element takes at least one byte, or none for booleans in a struct, which
// are not container elements).
type tdecoder struct {
	b     []byte
	pos   int
	depth int
}

const maxThriftDepth = 32

func (d *tdecoder) byte1() (byte, error) {
	if d.pos >= len(d.b) {
		return 0, errThrift
	}
	c := d.b[d.pos]
	d.pos++
	return c, nil
}

func (d *tdecoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		return 0, errThrift
	}
	d.pos += n
	return v, nil
}

func (d *tdecoder) zigzag() (int64, error) {
	u, err := d.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

// structValue decodes a struct's fields up to its stop byte.
func (d *tdecoder) structValue() (tvalue, error) {
	if d.depth++; d.depth > maxThriftDepth {
		return tvalue{}, errThrift
	}
	defer func() { d.depth-- }()
	v := tvalue{Type: tStruct}
	var last int16
	for {
		h, err := d.byte1()
		if err != nil {
			return v, err
		}
		if h == tStop {
			return v, nil
		}
		typ := h & 0x0f
		id := last + int16(h>>4)
		if h>>4 == 0 {
			z, err := d.zigzag()
			if err != nil {
				return v, err
			}
			id = int16(z)
		}
		last = id
		var fv tvalue
		switch typ {
		case tTrue, tFalse:
			fv = tvalue{Type: tTrue, Int: int64(2 - typ)} // booleans live in the field header
		default:
			if fv, err = d.value(typ); err != nil {
				return v, err
			}
		}
		v.Fields = append(v.Fields, tfield{id, fv})
	}
}

// value decodes a value of type typ (booleans here are container elements,
// one byte each).
func (d *tdecoder) value(typ byte) (tvalue, error) {
	switch typ {
	case tTrue, tFalse:
		c, err := d.byte1()
		return tvalue{Type: tTrue, Int: int64(c & 1)}, err
	case tByte:
		c, err := d.byte1()
		return tvalue{Type: typ, Int: int64(int8(c))}, err
	case tI16, tI32, tI64:
		z, err := d.zigzag()
		return tvalue{Type: typ, Int: z}, err
	case tDouble:
		if len(d.b)-d.pos < 8 {
			return tvalue{}, errThrift
		}
		d.pos += 8
		return tvalue{Type: typ, Bin: d.b[d.pos-8 : d.pos]}, nil
	case tBinary:
		n, err := d.uvarint()
		if err != nil || n > uint64(len(d.b)-d.pos) {
			return tvalue{}, errThrift
		}
		d.pos += int(n)
		return tvalue{Type: typ, Bin: d.b[d.pos-int(n) : d.pos]}, nil
	case tList, tSet:
		h, err := d.byte1()
		if err != nil {
			return tvalue{}, err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = d.uvarint(); err != nil {
				return tvalue{}, err
			}
		}
		if n > uint64(len(d.b)-d.pos) {
			return tvalue{}, errThrift
		}
		v := tvalue{Type: typ, ElemType: h & 0x0f, Elems: make([]tvalue, 0, n)}
		if d.depth++; d.depth > maxThriftDepth {
			return tvalue{}, errThrift
		}
		defer func() { d.depth-- }()
		for i := uint64(0); i < n; i++ {
			e, err := d.value(v.ElemType)
			if err != nil {
				return v, err
			}
			v.Elems = append(v.Elems, e)
		}
		return v, nil
	case tMap:
		n, err := d.uvarint()
		if err != nil || n > uint64(len(d.b)-d.pos) {
			return tvalue{}, errThrift
		}
		v := tvalue{Type: typ}
		if n == 0 {
			return v, nil
		}
		kv, err := d.byte1()
		if err != nil {
			return v, err
		}
		v.ElemType, v.ValType = kv>>4, kv&0x0f
		if d.depth++; d.depth > maxThriftDepth {
			return tvalue{}, errThrift
		}
		defer func() { d.depth-- }()
		for i := uint64(0); i < n; i++ {
			k, err := d.value(v.ElemType)
			if err != nil {
				return v, err
			}
			val, err := d.value(v.ValType)
			if err != nil {
				return v, err
			}
			v.Elems = append(v.Elems, k, val)
		}
		return v, nil
	case tStruct:
		return d.structValue()
	}
	return tvalue{}, fmt.Errorf("%w: type %d", errThrift, typ)
}

// tencoder appends compact-protocol values to b.
type tencoder struct{ b []byte }

func (e *tencoder) zigzag(v int64) { e.b = binary.AppendUvarint(e.b, uint64(v<<1)^uint64(v>>63)) }

func (e *tencoder) structValue(v *tvalue) {
	var last int16
	for _, f := range v.Fields {
		typ := f.V.Type
		if typ == tTrue {
			typ = tFalse
			if f.V.Int != 0 {
				typ = tTrue
			}
		}
		if delta := f.ID - last; delta > 0 && delta <= 15 {
			e.b = append(e.b, byte(delta)<<4|typ)
		} else {
			e.b = append(e.b, typ)
			e.zigzag(int64(f.ID))
		}
		last = f.ID
		if f.V.Type != tTrue {
			e.value(&f.V)
		}
	}
	e.b = append(e.b, tStop)
}

func (e *tencoder) value(v *tvalue) {
	switch v.Type {
	case tTrue:
		e.b = append(e.b, byte(2-v.Int)) // container booleans: 1 true, 2 false
	case tByte:
		e.b = append(e.b, byte(v.Int))
	case tI16, tI32, tI64:
		e.zigzag(v.Int)
	case tDouble:
		e.b = append(e.b, v.Bin...)
	case tBinary:
		e.b = binary.AppendUvarint(e.b, uint64(len(v.Bin)))
		e.b = append(e.b, v.Bin...)
	case tList, tSet:
		if n := len(v.Elems); n < 15 {
			e.b = append(e.b, byte(n)<<4|v.ElemType)
		} else {
			e.b = append(e.b, 0xf0|v.ElemType)
			e.b = binary.AppendUvarint(e.b, uint64(n))
		}
		for i := range v.Elems {
			e.value(&v.Elems[i])
		}
	case tMap:
		e.b = binary.AppendUvarint(e.b, uint64(len(v.Elems)/2))
		if len(v.Elems) > 0 {
			e.b = append(e.b, v.ElemType<<4|v.ValType)
		}
		for i := range v.Elems {
			e.value(&v.Elems[i])
		}
	case tStruct:
		e.structValue(v)
	}
}
