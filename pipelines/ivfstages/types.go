package ivfstages

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/mixture"
)

// Part is what one input batch sends to one block (transforms/ivf): the
// batch's items stored in the block's partition (for the search) and, among
// them, those whose home is this block (searched here; they bring their
// given labels and where they came from, for the output).
type Part struct {
	D int
	// Stored items: keys, the block key of each item's home (where its state
	// lives during the rounds) and features (standardised), Keys[i]'s at
	// X[i*D:(i+1)*D].
	Keys []int64
	Home []int64
	X    []float32
	// At, in a part of the spilled search (emitRefsFn), replaces X: the
	// stored items' rows in their input batch, whose features the batch's
	// spill file holds once (PartRefs.FeatOff), not once per block.
	At []int32
	// Searched items, all from one input batch: their index in Keys, their
	// row within the batch and ids.
	Q      []int32
	Shard  string
	Offset int64
	IDKind schemas.IDKind
	Row    []int32
	StrIDs []string
	// Labels/LabelOff: the given annotations of every stored item (Keys[i]'s
	// at Labels[LabelOff[i]:LabelOff[i+1]]), the searched ones' for their
	// block and the others' for the pooled start, which reads an item's
	// neighbours' labels (Block.ExtLabels): a few bytes an item beside its
	// D features.
	Labels   []int32
	LabelOff []int32
	Multi    bool
	// Spilled, when set, says the part is in a spill file (putParts): the
	// other fields are empty until readParts reads it.
	Spilled spillRef
}

func encodePart(p Part) []byte {
	w := wire.Writer{B: make([]byte, 0, 64+len(p.Keys)*16+4*len(p.X)+len(p.Q)*16)}
	w.Uvarint(uint64(p.D))
	wire.Slice(&w, p.Keys)
	wire.Slice(&w, p.Home)
	wire.Slice(&w, p.X)
	wire.Slice(&w, p.At)
	wire.Slice(&w, p.Q)
	w.String(p.Shard)
	w.Varint(p.Offset)
	w.Byte(byte(p.IDKind))
	wire.Slice(&w, p.Row)
	w.Strings(p.StrIDs)
	wire.Slice(&w, p.Labels)
	wire.Slice(&w, p.LabelOff)
	w.Bool(p.Multi)
	spillio.PutRef(&w, p.Spilled)
	return w.B
}

func decodePart(b []byte) (Part, error) {
	r := wire.Reader{B: b}
	var p Part
	p.D = int(r.Uvarint())
	p.Keys = wire.ReadSlice[int64](&r)
	p.Home = wire.ReadSlice[int64](&r)
	p.X = wire.ReadSlice[float32](&r)
	p.At = wire.ReadSlice[int32](&r)
	p.Q = wire.ReadSlice[int32](&r)
	p.Shard = r.String()
	p.Offset = r.Varint()
	p.IDKind = schemas.IDKind(r.Byte())
	p.Row = wire.ReadSlice[int32](&r)
	p.StrIDs = r.Strings()
	p.Labels = wire.ReadSlice[int32](&r)
	p.LabelOff = wire.ReadSlice[int32](&r)
	p.Multi = r.Bool()
	p.Spilled = spillio.GetRef(&r)
	return p, r.Err()
}

// storedLabels are stored item i's given annotations.
func (p *Part) storedLabels(i int32) []int32 { return p.Labels[p.LabelOff[i]:p.LabelOff[i+1]] }

// Block is the items of one block (one partition, or one block of an
// oversized partition) from the search to the output, keyed by Key: their
// neighbourhoods, their state, and what the output needs. Neighbours living
// in other blocks are named in Ext; the rounds join their states to the block
// by key (JoinRounds), so a worker holds one block, never the whole dataset.
type Block struct {
	Key int64
	// Keys are the items' keys, ascending.
	Keys []int64
	// Origin of item i: input shard Shards[Src[i]], batch offset Offset[i],
	// row Row[i] within the batch.
	Shards []string
	Src    []int32
	Offset []int64
	Row    []int32
	IDKind schemas.IDKind
	StrIDs []string
	// Labels/LabelOff: the given annotations, as in schemas.Rows.
	Labels   []int32
	LabelOff []int32
	Multi    bool
	// Item i's K neighbours are Nbr[i*K:(i+1)*K] with weights Weight[...]:
	// j >= 0 is local item j, -2-e is external neighbour e, -1 is none.
	K      int
	Nbr    []int32
	Weight []float64
	// ExtKeys (ascending) and ExtHome: the external neighbours and the key of
	// the block holding each one's state.
	ExtKeys []int64
	ExtHome []int64
	// ExtLabels/ExtLabelOff: the external neighbours' given annotations,
	// external neighbour e's at ExtLabels[ExtLabelOff[e]:ExtLabelOff[e+1]],
	// for the pooled start (PooledStart), which clears them; empty with the
	// pooled start off.
	ExtLabels   []int32
	ExtLabelOff []int32
	// Dest lists whose states this block sends each round: local items
	// DestItem[DestOff[d]:DestOff[d+1]] to block DestKey[d] (ascending).
	DestKey  []int64
	DestOff  []int32
	DestItem []int32
	// X holds the items' features as searched (standardised where the
	// search standardises), item i's at X[i*D:(i+1)*D], for the linear head
	// of the local rounds (JoinRoundsParams.Head); empty without it
	// (Params.Features), so blocks carry them only where they are used.
	D int
	X []float32
	// Init holds the initial states (only when the anchor option is on).
	Init  mixture.States
	State mixture.States
	// Spilled, when set, says the block's contents are in a spill file
	// (Spill): every other field but Key is empty until unspill.
	Spilled spillRef
}

// Len is the number of items.
func (b *Block) Len() int { return len(b.Keys) }

func encodeBlock(b Block) []byte {
	w := wire.Writer{B: make([]byte, 0, 128+len(b.Keys)*(40+b.K*12)+4*len(b.X)+len(b.State.Cat)*12)}
	w.Varint(b.Key)
	wire.Slice(&w, b.Keys)
	w.Strings(b.Shards)
	wire.Slice(&w, b.Src)
	wire.Slice(&w, b.Offset)
	wire.Slice(&w, b.Row)
	w.Byte(byte(b.IDKind))
	w.Strings(b.StrIDs)
	wire.Slice(&w, b.Labels)
	wire.Slice(&w, b.LabelOff)
	w.Bool(b.Multi)
	w.Uvarint(uint64(b.K))
	wire.Slice(&w, b.Nbr)
	wire.Slice(&w, b.Weight)
	wire.Slice(&w, b.ExtKeys)
	wire.Slice(&w, b.ExtHome)
	wire.Slice(&w, b.ExtLabels)
	wire.Slice(&w, b.ExtLabelOff)
	wire.Slice(&w, b.DestKey)
	wire.Slice(&w, b.DestOff)
	wire.Slice(&w, b.DestItem)
	w.Uvarint(uint64(b.D))
	wire.Slice(&w, b.X)
	putStatesPacked(&w, &b.Init)
	putStatesPacked(&w, &b.State)
	spillio.PutRef(&w, b.Spilled)
	return w.B
}

func decodeBlock(p []byte) (Block, error) { return decodeBlockFor(p, false) }

// decodeBlockRounds decodes of encodeBlock's bytes only what a round
// reads (Block.batch: the key, the items' keys and labels, the neighbours,
// their weights and the initial states) and passes over the rest, which
// the streamed rounds read again every round and never use (the items'
// origins, external neighbours' keys and labels, features, the search's
// states).
func decodeBlockRounds(p []byte) (Block, error) { return decodeBlockFor(p, true) }

// decodeBlockFor is decodeBlock, or decodeBlockRounds where rounds is set.
func decodeBlockFor(p []byte, rounds bool) (Block, error) {
	r := wire.Reader{B: p}
	strs := func(dst *[]string) {
		if rounds {
			r.SkipStrings()
		} else {
			*dst = r.Strings()
		}
	}
	var b Block
	b.Key = r.Varint()
	b.Keys = wire.ReadSlice[int64](&r)
	strs(&b.Shards)
	readUnless(rounds, &r, &b.Src)
	readUnless(rounds, &r, &b.Offset)
	readUnless(rounds, &r, &b.Row)
	b.IDKind = schemas.IDKind(r.Byte())
	strs(&b.StrIDs)
	b.Labels = wire.ReadSlice[int32](&r)
	b.LabelOff = wire.ReadSlice[int32](&r)
	b.Multi = r.Bool()
	b.K = int(r.Uvarint())
	b.Nbr = wire.ReadSlice[int32](&r)
	b.Weight = wire.ReadSlice[float64](&r)
	readUnless(rounds, &r, &b.ExtKeys)
	readUnless(rounds, &r, &b.ExtHome)
	readUnless(rounds, &r, &b.ExtLabels)
	readUnless(rounds, &r, &b.ExtLabelOff)
	readUnless(rounds, &r, &b.DestKey)
	readUnless(rounds, &r, &b.DestOff)
	readUnless(rounds, &r, &b.DestItem)
	b.D = int(r.Uvarint())
	readUnless(rounds, &r, &b.X)
	var err error
	if b.Init, err = getStatesPacked(&r); err != nil {
		return b, err
	}
	if rounds {
		return b, r.Failed() // the search's states and the reference follow
	}
	if b.State, err = getStatesPacked(&r); err != nil {
		return b, err
	}
	b.Spilled = spillio.GetRef(&r)
	return b, r.Err()
}

// readUnless reads a slice field into dst, or passes over it where skip is
// set.
func readUnless[T wire.Word](skip bool, r *wire.Reader, dst *[]T) {
	if skip {
		wire.SkipSlice[T](r)
	} else {
		*dst = wire.ReadSlice[T](r)
	}
}

// JoinMsg is what one block sends another: before the rounds, the keys of
// the neighbours it needs (States empty); each round, those items' states.
type JoinMsg struct {
	From   int64
	Keys   []int64
	States mixture.States
	// Spilled, when set, says Keys and States are in a spill file (Spill).
	Spilled spillRef
}

func encodeJoinMsg(m JoinMsg) []byte {
	w := wire.Writer{B: make([]byte, 0, 32+len(m.Keys)*8+len(m.States.Cat)*12)}
	w.Varint(m.From)
	wire.Slice(&w, m.Keys)
	putStatesPacked(&w, &m.States)
	spillio.PutRef(&w, m.Spilled)
	return w.B
}

func decodeJoinMsg(b []byte) (JoinMsg, error) {
	r := wire.Reader{B: b}
	m := JoinMsg{From: r.Varint(), Keys: wire.ReadSlice[int64](&r)}
	var err error
	if m.States, err = getStatesPacked(&r); err != nil {
		return m, err
	}
	m.Spilled = spillio.GetRef(&r)
	return m, r.Err()
}

// The model's coder is ivf's one encoding (transforms/ivf/codec.go).
func encodeModel(m ivf.Model) ([]byte, error) { return m.AppendBinary(nil) }

func decodeModel(b []byte) (ivf.Model, error) {
	var m ivf.Model
	err := m.UnmarshalBinary(b)
	return m, err
}

func encodeSample(s ivf.Sample) []byte {
	w := wire.Writer{B: make([]byte, 0, 32+16*len(s.Keys)+4*len(s.Features))}
	w.Uvarint(uint64(s.Cap))
	w.Uvarint(uint64(s.D))
	wire.Slice(&w, s.Hashes)
	wire.Slice(&w, s.Keys)
	wire.Slice(&w, s.Features)
	return w.B
}

func decodeSample(b []byte) (ivf.Sample, error) {
	r := wire.Reader{B: b}
	var s ivf.Sample
	s.Cap = int(r.Uvarint())
	s.D = int(r.Uvarint())
	s.Hashes = wire.ReadSlice[uint64](&r)
	s.Keys = wire.ReadSlice[int64](&r)
	s.Features = wire.ReadSlice[float32](&r)
	return s, r.Err()
}

// DupFrag is the keys of one input batch that fall in one duplicate-check
// bucket, with their rows (and string ids, for the message).
type DupFrag struct {
	Shard  string
	Offset int64
	Keys   []int64
	Row    []int32
	StrIDs []string
}

func encodeDupFrag(f DupFrag) []byte {
	w := wire.Writer{B: make([]byte, 0, 32+len(f.Shard)+12*len(f.Keys))}
	w.String(f.Shard)
	w.Varint(f.Offset)
	wire.Slice(&w, f.Keys)
	wire.Slice(&w, f.Row)
	w.Strings(f.StrIDs)
	return w.B
}

func decodeDupFrag(b []byte) (DupFrag, error) {
	r := wire.Reader{B: b}
	f := DupFrag{Shard: r.String(), Offset: r.Varint()}
	f.Keys = wire.ReadSlice[int64](&r)
	f.Row = wire.ReadSlice[int32](&r)
	f.StrIDs = r.Strings()
	return f, r.Err()
}

// BatchItems is the items of one block that came from one input batch, on their
// way back to that batch: Row[i] is item i's row within it.
type BatchItems struct {
	Row   []int32
	Items stages.Items
	// Spilled, when set, says Row and Items are in a spill file (Spill):
	// every item's posterior passes this shuffle at once, at the end, and
	// Prism assembles a stage's whole input in one growing buffer, which
	// at a million rows took the process from 0.6 to 1.9 GiB.
	Spilled spillRef
}

// The items go as one length-prefixed string (Items' own encoding): this
// element passes once, at the end, so the extra copy is immaterial. A
// spilled element is a flag and its reference.
func encodeBatchItems(r BatchItems) []byte {
	var w wire.Writer
	if r.Spilled.Path != "" {
		w.Uvarint(1)
		spillio.PutRef(&w, r.Spilled)
		return w.B
	}
	w.Uvarint(0)
	wire.Slice(&w, r.Row)
	w.String(string(stages.EncodeItems(r.Items)))
	return w.B
}

func decodeBatchItems(b []byte) (BatchItems, error) {
	r := wire.Reader{B: b}
	if r.Uvarint() == 1 {
		ref := spillio.GetRef(&r)
		return BatchItems{Spilled: ref}, r.Err()
	}
	rows := wire.ReadSlice[int32](&r)
	items := r.String()
	if err := r.Err(); err != nil {
		return BatchItems{}, err
	}
	it, err := stages.DecodeItems([]byte(items))
	return BatchItems{Row: rows, Items: it}, err
}

// Probed is an input batch ready for the waves of the search: features
// standardised, each item's NProbe nearest partitions (Probe[i*NProbe:]) and
// the block of its home partition it is searched in.
type Probed struct {
	NProbe int
	Probe  []int32
	Block  []int32
	Rows   schemas.Rows
}

// The rows go last, in schemas' own encoding, so that they are written and
// read in place.
func encodeProbed(p Probed) []byte {
	w := wire.Writer{B: make([]byte, 0, 96+4*(len(p.Probe)+len(p.Block))+8*len(p.Rows.IDs)+4*len(p.Rows.Features)+8*len(p.Rows.Labels))}
	w.Uvarint(uint64(p.NProbe))
	wire.Slice(&w, p.Probe)
	wire.Slice(&w, p.Block)
	return schemas.AppendRows(w.B, &p.Rows)
}

func decodeProbed(b []byte) (Probed, error) {
	r := wire.Reader{B: b}
	p := Probed{NProbe: int(r.Uvarint())}
	p.Probe = wire.ReadSlice[int32](&r)
	p.Block = wire.ReadSlice[int32](&r)
	if len(r.B) == 0 {
		return Probed{}, fmt.Errorf("ivfstages: decoding Probed: truncated")
	}
	var err error
	p.Rows, err = schemas.DecodeRows(r.B)
	return p, err
}

func init() {
	beam.RegisterCoder(reflect.TypeOf(Part{}), encodePart, decodePart)
	beam.RegisterCoder(reflect.TypeOf(Block{}), encodeBlock, decodeBlock)
	beam.RegisterCoder(reflect.TypeOf(JoinMsg{}), encodeJoinMsg, decodeJoinMsg)
	beam.RegisterCoder(reflect.TypeOf(ivf.Model{}), encodeModel, decodeModel)
	beam.RegisterCoder(reflect.TypeOf(ivf.Sample{}), encodeSample, decodeSample)
	beam.RegisterCoder(reflect.TypeOf(DupFrag{}), encodeDupFrag, decodeDupFrag)
	beam.RegisterCoder(reflect.TypeOf(BatchItems{}), encodeBatchItems, decodeBatchItems)
	beam.RegisterCoder(reflect.TypeOf(Probed{}), encodeProbed, decodeProbed)
}
