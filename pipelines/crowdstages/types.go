package crowdstages

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/crowd"
)

// AnnRows is a batch of annotations, all bound for one bucket of items and
// read from one file: row k says that annotator Annotator[k] (Name[k] for
// string annotator ids, whose key Annotator[k] is schemas.Key(Name[k]))
// labelled item Item[k] (StrItem[k] likewise) with class Label[k], at File
// row Row[k].
type AnnRows struct {
	Bucket    int
	File      string
	Column    string // the id column, for errors
	Item      []int64
	StrItem   []string
	Annotator []int64
	Name      []string
	Label     []int32
	Row       []int64
}

// Len is the number of annotations.
func (a *AnnRows) Len() int { return len(a.Item) }

func encodeAnnRows(a AnnRows) []byte {
	var w wire.Writer
	w.Uvarint(uint64(a.Bucket))
	w.String(a.File)
	w.String(a.Column)
	wire.Slice(&w, a.Item)
	w.Strings(a.StrItem)
	wire.Slice(&w, a.Annotator)
	w.Strings(a.Name)
	wire.Slice(&w, a.Label)
	wire.Slice(&w, a.Row)
	return w.B
}

func decodeAnnRows(b []byte) (AnnRows, error) {
	r := wire.Reader{B: b}
	a := AnnRows{Bucket: int(r.Uvarint()), File: r.String(), Column: r.String()}
	a.Item = wire.ReadSlice[int64](&r)
	a.StrItem = r.Strings()
	a.Annotator = wire.ReadSlice[int64](&r)
	a.Name = r.Strings()
	a.Label = wire.ReadSlice[int32](&r)
	a.Row = wire.ReadSlice[int64](&r)
	return a, r.Err()
}

// ItemRefs are the items of one bucket found in one batch of stages.Items:
// item Key[k] is row Pos[k] of batch Batch.
type ItemRefs struct {
	Batch  string
	Key    []int64
	StrID  []string
	Pos    []int32
	IDKind schemas.IDKind
}

func encodeItemRefs(x ItemRefs) []byte {
	var w wire.Writer
	w.String(x.Batch)
	wire.Slice(&w, x.Key)
	w.Strings(x.StrID)
	wire.Slice(&w, x.Pos)
	w.Byte(byte(x.IDKind))
	return w.B
}

func decodeItemRefs(b []byte) (ItemRefs, error) {
	r := wire.Reader{B: b}
	x := ItemRefs{Batch: r.String()}
	x.Key = wire.ReadSlice[int64](&r)
	x.StrID = r.Strings()
	x.Pos = wire.ReadSlice[int32](&r)
	x.IDKind = schemas.IDKind(r.Byte())
	return x, r.Err()
}

// ItemAnns are the annotations of some rows of one batch of stages.Items:
// row Pos[k]'s are Ann/Lab[Off[k]:Off[k+1]], sorted.
type ItemAnns struct {
	Pos []int32
	Off []int32
	Ann []int64
	Lab []int32
}

func encodeItemAnns(x ItemAnns) []byte {
	var w wire.Writer
	wire.Slice(&w, x.Pos)
	wire.Slice(&w, x.Off)
	wire.Slice(&w, x.Ann)
	wire.Slice(&w, x.Lab)
	return w.B
}

func decodeItemAnns(b []byte) (ItemAnns, error) {
	r := wire.Reader{B: b}
	x := ItemAnns{Pos: wire.ReadSlice[int32](&r), Off: wire.ReadSlice[int32](&r), Ann: wire.ReadSlice[int64](&r), Lab: wire.ReadSlice[int32](&r)}
	return x, r.Err()
}

// Batch is a batch of items between the join and the output: a batch of
// stages.Items (ids, the given labels the output copies through, the
// neighbours with features; its states unused) with the annotations (item
// i's are Ann/Lab[AnnOff[i]:AnnOff[i+1]], ascending by annotator) and the
// current posteriors (n x C). Embedding Items, it shares their header and
// codec (stages.PutItems). A spilled batch (Spill) carries only Shard,
// Offset and Spilled, where its encoding is.
type Batch struct {
	stages.Items
	AnnOff  []int32
	Ann     []int64
	Lab     []int32
	C       int
	Post    []float64
	Spilled spillio.Ref
}

// Item returns item i's annotators and labels.
func (b *Batch) Item(i int) ([]int64, []int32) {
	lo, hi := b.AnnOff[i], b.AnnOff[i+1]
	return b.Ann[lo:hi], b.Lab[lo:hi]
}

func encodeBatch(b Batch) []byte {
	w := wire.Writer{B: make([]byte, 0, 64+len(b.IDs)*(24+8*b.C)+12*len(b.Ann)+12*len(b.Neigh))}
	stages.PutItems(&w, &b.Items)
	wire.Slice(&w, b.AnnOff)
	wire.Slice(&w, b.Ann)
	wire.Slice(&w, b.Lab)
	w.Uvarint(uint64(b.C))
	wire.Slice(&w, b.Post)
	spillio.PutRef(&w, b.Spilled)
	return w.B
}

func decodeBatch(bs []byte) (Batch, error) {
	r := wire.Reader{B: bs}
	b := Batch{Items: stages.GetItems(&r)}
	b.AnnOff = wire.ReadSlice[int32](&r)
	b.Ann = wire.ReadSlice[int64](&r)
	b.Lab = wire.ReadSlice[int32](&r)
	b.C = int(r.Uvarint())
	b.Post = wire.ReadSlice[float64](&r)
	b.Spilled = spillio.GetRef(&r)
	return b, r.Err()
}

// CandPosts are the candidates' posteriors of one iteration (the side input
// of the next E step with features): candidate c's is Post[c*C:(c+1)*C]
// after ExtractOutput; before, Idx says which candidate each row is.
type CandPosts struct {
	C    int
	Idx  []int32
	Post []float64
}

func encodeCandPosts(c CandPosts) []byte {
	var w wire.Writer
	w.Uvarint(uint64(c.C))
	wire.Slice(&w, c.Idx)
	wire.Slice(&w, c.Post)
	return w.B
}

func decodeCandPosts(b []byte) (CandPosts, error) {
	r := wire.Reader{B: b}
	c := CandPosts{C: int(r.Uvarint())}
	c.Idx = wire.ReadSlice[int32](&r)
	c.Post = wire.ReadSlice[float64](&r)
	return c, r.Err()
}

// Names maps annotator keys to their string ids (string annotator ids only).
type Names struct {
	Key  []int64
	Name []string
	// Clash describes two names of one key, if any ("" when none).
	Clash string
}

func encodeNames(n Names) []byte {
	var w wire.Writer
	wire.Slice(&w, n.Key)
	w.Strings(n.Name)
	w.String(n.Clash)
	return w.B
}

func decodeNames(b []byte) (Names, error) {
	r := wire.Reader{B: b}
	n := Names{Key: wire.ReadSlice[int64](&r), Name: r.Strings(), Clash: r.String()}
	return n, r.Err()
}

func encodeStats(s crowd.Stats) ([]byte, error) { return s.MarshalBinary() }
func decodeStats(b []byte) (crowd.Stats, error) {
	var s crowd.Stats
	err := s.UnmarshalBinary(b)
	return s, err
}
func encodeModel(m crowd.Model) ([]byte, error) { return m.MarshalBinary() }
func decodeModel(b []byte) (crowd.Model, error) {
	var m crowd.Model
	err := m.UnmarshalBinary(b)
	return m, err
}

func encodeEvidence(e crowd.Evidence) []byte {
	var w wire.Writer
	w.Varint(e.Items)
	wire.Slice(&w, e.Score[:])
	wire.Slice(&w, e.Square[:])
	return w.B
}
func decodeEvidence(b []byte) (crowd.Evidence, error) {
	r := wire.Reader{B: b}
	e := crowd.Evidence{Items: r.Varint()}
	sc, sq := wire.ReadSlice[int64](&r), wire.ReadSlice[int64](&r)
	if err := r.Err(); err != nil {
		return e, err
	}
	if len(sc) != len(e.Score) || len(sq) != len(e.Square) {
		return e, fmt.Errorf("crowdstages: decoding evidence: %d and %d scores, want %d", len(sc), len(sq), len(e.Score))
	}
	copy(e.Score[:], sc)
	copy(e.Square[:], sq)
	return e, nil
}

func init() {
	beam.RegisterCoder(reflect.TypeOf(crowd.Evidence{}), encodeEvidence, decodeEvidence)
	beam.RegisterCoder(reflect.TypeOf(AnnRows{}), encodeAnnRows, decodeAnnRows)
	beam.RegisterCoder(reflect.TypeOf(ItemRefs{}), encodeItemRefs, decodeItemRefs)
	beam.RegisterCoder(reflect.TypeOf(ItemAnns{}), encodeItemAnns, decodeItemAnns)
	beam.RegisterCoder(reflect.TypeOf(Batch{}), encodeBatch, decodeBatch)
	beam.RegisterCoder(reflect.TypeOf(CandPosts{}), encodeCandPosts, decodeCandPosts)
	beam.RegisterCoder(reflect.TypeOf(Names{}), encodeNames, decodeNames)
	beam.RegisterCoder(reflect.TypeOf(crowd.Stats{}), encodeStats, decodeStats)
	beam.RegisterCoder(reflect.TypeOf(crowd.Model{}), encodeModel, decodeModel)
}
