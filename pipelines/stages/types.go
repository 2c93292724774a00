package stages

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/mixture"
)

// Items is a batch of items of one shard between the neighbour search and the
// output: everything a round needs (neighbours, weights, state) plus the given
// ids and labels the output copies through. Features are gone by now, so a
// round shuffles only states.
type Items struct {
	Shard    string
	Offset   int64
	IDKind   schemas.IDKind
	IDs      []int64
	StrIDs   []string
	Labels   []int32
	LabelOff []int32
	Multi    bool
	// Cand is each item's index in the candidate set, -1 if not a candidate.
	Cand []int32
	// Neigh/Weight: item i's K neighbours (candidate indices, -1 = none) and
	// their mixture weights are [i*K, (i+1)*K).
	K      int
	Neigh  []int32
	Weight []float64
	// Init holds the initial states (only when the anchor option is on).
	Init  mixture.States
	State mixture.States
}

// Len is the number of items.
func (it *Items) Len() int { return len(it.IDs) }

func putStates(w *wire.Writer, s *mixture.States) {
	wire.Slice(w, s.ItemOff)
	wire.Slice(w, s.Class)
	wire.Slice(w, s.Pi)
	wire.Slice(w, s.Rem)
	wire.Slice(w, s.RowOff)
	wire.Slice(w, s.Cat)
	wire.Slice(w, s.P)
	wire.Slice(w, s.Moved)
}

func getStates(r *wire.Reader) mixture.States {
	return mixture.States{
		ItemOff: wire.ReadSlice[int32](r),
		Class:   wire.ReadSlice[int32](r),
		Pi:      wire.ReadSlice[float32](r),
		Rem:     wire.ReadSlice[float32](r),
		RowOff:  wire.ReadSlice[int32](r),
		Cat:     wire.ReadSlice[int32](r),
		P:       wire.ReadSlice[float32](r),
		Moved:   wire.ReadSlice[float32](r),
	}
}

// EncodeItems is Items' coder (PutItems into a buffer of about its size).
func EncodeItems(it Items) []byte {
	w := wire.Writer{B: make([]byte, 0, 64+len(it.IDs)*(16+it.K*12)+4*len(it.State.Cat)*3)}
	PutItems(&w, &it)
	return w.B
}

// PutItems appends it's encoding to w: the one codec of a batch's header
// (shard, ids, given labels), neighbours and states, which the crowd
// stages' batches embed too.
func PutItems(w *wire.Writer, it *Items) {
	w.String(it.Shard)
	w.Varint(it.Offset)
	w.Byte(byte(it.IDKind))
	wire.Slice(w, it.IDs)
	w.Strings(it.StrIDs)
	wire.Slice(w, it.Labels)
	wire.Slice(w, it.LabelOff)
	w.Bool(it.Multi)
	wire.Slice(w, it.Cand)
	w.Uvarint(uint64(it.K))
	wire.Slice(w, it.Neigh)
	wire.Slice(w, it.Weight)
	putStates(w, &it.Init)
	putStates(w, &it.State)
}

// DecodeItems is Items' decoder (GetItems of the whole of b).
func DecodeItems(b []byte) (Items, error) {
	r := wire.Reader{B: b}
	it := GetItems(&r)
	return it, r.Err()
}

// GetItems reads what PutItems wrote; r.Err says whether it could.
func GetItems(r *wire.Reader) Items {
	var it Items
	it.Shard = r.String()
	it.Offset = r.Varint()
	it.IDKind = schemas.IDKind(r.Byte())
	it.IDs = wire.ReadSlice[int64](r)
	it.StrIDs = r.Strings()
	it.Labels = wire.ReadSlice[int32](r)
	it.LabelOff = wire.ReadSlice[int32](r)
	it.Multi = r.Bool()
	it.Cand = wire.ReadSlice[int32](r)
	it.K = int(r.Uvarint())
	it.Neigh = wire.ReadSlice[int32](r)
	it.Weight = wire.ReadSlice[float64](r)
	it.Init = getStates(r)
	it.State = getStates(r)
	return it
}

// CandStates is the candidate set's states of one round, indexed by candidate
// index: the side input of the next round.
type CandStates struct {
	// Idx is the candidate index of each packed state; after ExtractOutput it
	// is nil and States is in candidate order.
	Idx    []int32
	States mixture.States
}

func encodeCandStates(c CandStates) []byte {
	var w wire.Writer
	wire.Slice(&w, c.Idx)
	putStates(&w, &c.States)
	return w.B
}

func decodeCandStates(b []byte) (CandStates, error) {
	r := wire.Reader{B: b}
	c := CandStates{Idx: wire.ReadSlice[int32](&r), States: getStates(&r)}
	return c, r.Err()
}

// Candidates is the candidate set: keys ascending and their standardised
// features (row c is candidate index c).
type Candidates struct {
	D        int
	Keys     []int64
	Features []float32
}

func encodeCandidates(c Candidates) []byte {
	w := wire.Writer{B: make([]byte, 0, 16+8*len(c.Keys)+4*len(c.Features))}
	w.Uvarint(uint64(c.D))
	wire.Slice(&w, c.Keys)
	wire.Slice(&w, c.Features)
	return w.B
}

func decodeCandidates(b []byte) (Candidates, error) {
	r := wire.Reader{B: b}
	c := Candidates{D: int(r.Uvarint())}
	c.Keys = wire.ReadSlice[int64](&r)
	c.Features = wire.ReadSlice[float32](&r)
	return c, r.Err()
}

func encodeRows(r schemas.Rows) ([]byte, error) { return schemas.EncodeRows(r) }
func decodeRows(b []byte) (schemas.Rows, error) { return schemas.DecodeRows(b) }
func encodeCleaned(c schemas.Cleaned) ([]byte, error) {
	return schemas.EncodeCleaned(c)
}
func decodeCleaned(b []byte) (schemas.Cleaned, error) { return schemas.DecodeCleaned(b) }

func init() {
	beam.RegisterCoder(reflect.TypeOf(Items{}), EncodeItems, DecodeItems)
	beam.RegisterCoder(reflect.TypeOf(CandStates{}), encodeCandStates, decodeCandStates)
	beam.RegisterCoder(reflect.TypeOf(Candidates{}), encodeCandidates, decodeCandidates)
	beam.RegisterCoder(reflect.TypeOf(schemas.Rows{}), encodeRows, decodeRows)
	beam.RegisterCoder(reflect.TypeOf(schemas.Cleaned{}), encodeCleaned, decodeCleaned)
	beam.RegisterCoder(reflect.TypeOf(Stats{}), encodeStats, decodeStats)
}
