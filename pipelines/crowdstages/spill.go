package crowdstages

import (
	"fmt"
	"hash/fnv"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/crowd"
)

// The crowd stages' Spill (Params.Spill, a spillio.Dir: empty means no
// spilling) keeps the EM iterations' batches in local files while they wait
// between stages, and passes only references to them through the runner's
// shuffle. io/spillio writes, reads and removes the files and encodes the
// references; what is spilled and when a generation goes is said here.
//
// Why: the embedded runner (Prism) keeps what a stage emits in memory, in
// several copies, and every iteration emits every batch anew (its
// posteriors change): 30 iterations of 300,000 items held 4.96 GiB at the
// peak, growing with items x iterations (docs/PERFORMANCE.md). Spilled, an
// iteration shuffles about 100 bytes per batch, and a worker holds only the
// batches it is running. On Flink and Dataflow the shuffle spreads over
// workers and disks, so spilling is off there (Dir empty).
//
// Generation r holds the batches of iteration r (0: the join's), the
// model estimated from them (modelMsg) and, with features, their
// candidates' posteriors (candMsg), both read by iteration r+1. Files are
// named by batch, so a retried bundle rewrites the same bytes. Iteration
// r's batches are read by that iteration's statistics (and, with features,
// candidate posteriors) and by iteration r+1's E step; the M step of
// iteration r+1 (estimateFn, whose input is a combine over every batch
// iteration r+1's E step wrote) is the first stage that runs after all of
// them, and removes generation r. The caller removes Dir, and with it the
// last generation, when the pipeline is done.

// put writes b into generation gen of s and replaces it by a reference
// (Shard and Offset stay, for errors); nothing when s is off.
func put(s spillio.Dir, gen int, b *Batch) error { return putAs(s, gen, "b", b) }

// putAs is put with the file's name starting with prefix: the chosen
// model's batches (prefix "c") join the last generation beside the ones
// they are computed from, which a retried bundle may still read.
func putAs(s spillio.Dir, gen int, prefix string, b *Batch) error {
	if !s.On() {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(b.Shard))
	refs, err := s.Write(gen, fmt.Sprintf("%s%016x-%x", prefix, h.Sum64(), b.Offset), encodeBatch(*b))
	if err != nil {
		return fmt.Errorf("crowdstages: spill: %s rows %d..: %w", b.Shard, b.Offset, err)
	}
	*b = Batch{Items: stages.Items{Shard: b.Shard, Offset: b.Offset}, Spilled: refs[0]}
	return nil
}

// drop removes generation gen of s; nothing when s is off or gen < 0.
func drop(s spillio.Dir, gen int) error {
	if gen < 0 {
		return nil
	}
	if err := s.Drop(gen); err != nil {
		return fmt.Errorf("crowdstages: spill: %w", err)
	}
	return nil
}

// unspill replaces a spilled batch by its contents; an inline batch stays.
func (b *Batch) unspill() error {
	if b.Spilled.Path == "" {
		return nil
	}
	nb, err := spillio.Load(b.Spilled, decodeBatch)
	if err != nil {
		return fmt.Errorf("crowdstages: spill: %s rows %d..: %w", b.Shard, b.Offset, err)
	}
	if nb.Shard != b.Shard || nb.Offset != b.Offset {
		return fmt.Errorf("crowdstages: spill: %s at %d holds %s rows %d.., want %s rows %d..", b.Spilled.Path, b.Spilled.Off, nb.Shard, nb.Offset, b.Shard, b.Offset)
	}
	*b = nb
	return nil
}

// modelMsg carries an iteration's model to the stages that read it as a
// side input: the model itself or, spilled, a reference to its encoding.
// Prism keeps a side input in the global window until the job ends, so
// every iteration's model would otherwise stay in memory (annotators x
// nonzero cells each).
type modelMsg struct {
	Model   crowd.Model
	Spilled spillio.Ref
}

// putModel makes m's message: spilled as the model file of generation gen
// when s is on (it is then removed with the batches the model was estimated
// from), else inline.
func putModel(s spillio.Dir, gen int, m *crowd.Model) (modelMsg, error) {
	if !s.On() {
		return modelMsg{Model: *m}, nil
	}
	enc, err := m.MarshalBinary()
	if err != nil {
		return modelMsg{}, err
	}
	refs, err := s.Write(gen, "model", enc)
	if err != nil {
		return modelMsg{}, fmt.Errorf("crowdstages: spill: model: %w", err)
	}
	return modelMsg{Spilled: refs[0]}, nil
}

// lastModel is the spilled model this process read last (spillio.Last).
var lastModel spillio.Last[crowd.Model]

// get returns the model of msg, decoding a spilled one unless it is the
// one decoded last.
func (msg *modelMsg) get() (*crowd.Model, error) {
	if msg.Spilled.Path == "" {
		return &msg.Model, nil
	}
	m, err := lastModel.Get(msg.Spilled, func(enc []byte) (*crowd.Model, error) {
		m := new(crowd.Model)
		return m, m.UnmarshalBinary(enc)
	})
	if err != nil {
		return nil, fmt.Errorf("crowdstages: spill: model: %w", err)
	}
	return m, nil
}

func encodeModelMsg(m modelMsg) ([]byte, error) {
	if m.Spilled.Path != "" {
		return refHeader(m.Spilled), nil
	}
	enc, err := m.Model.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return append(refHeader(m.Spilled), enc...), nil
}

func decodeModelMsg(b []byte) (modelMsg, error) {
	var m modelMsg
	var rest []byte
	var err error
	if m.Spilled, rest, err = readRefHeader(b); err != nil || m.Spilled.Path != "" {
		return m, err
	}
	err = m.Model.UnmarshalBinary(rest)
	return m, err
}

// refHeader starts the encoding of a message that is either spilled (ref,
// and nothing follows) or inline (a zero ref, then the payload).
func refHeader(ref spillio.Ref) []byte {
	var w wire.Writer
	spillio.PutRef(&w, ref)
	return w.B
}

// readRefHeader reads refHeader's ref and returns the bytes after it (the
// inline payload when the ref is zero).
func readRefHeader(b []byte) (spillio.Ref, []byte, error) {
	r := wire.Reader{B: b}
	ref := spillio.GetRef(&r)
	if ref.Path != "" {
		return ref, nil, r.Err()
	}
	rest := r.B
	r.B = nil
	return ref, rest, r.Err()
}

// candMsg carries an iteration's candidate posteriors to the next E step
// with features, which reads them as a side input: inline or, spilled, a
// reference to their encoding. Why: like the model, Prism keeps each
// iteration's side input until the job ends, and this one is candidates x
// C floats (80 MB per iteration at 1,000,000 items and C = 10).
type candMsg struct {
	Cand    CandPosts
	Spilled spillio.Ref
}

// putCand makes cp's message: spilled as the candidate file of generation
// gen when s is on (removed with the batches the posteriors come from),
// else inline.
func putCand(s spillio.Dir, gen int, cp *CandPosts) (candMsg, error) {
	if !s.On() {
		return candMsg{Cand: *cp}, nil
	}
	refs, err := s.Write(gen, "cand", encodeCandPosts(*cp))
	if err != nil {
		return candMsg{}, fmt.Errorf("crowdstages: spill: candidate posteriors: %w", err)
	}
	return candMsg{Spilled: refs[0]}, nil
}

// lastCand is the spilled candidate posteriors this process read last
// (spillio.Last).
var lastCand spillio.Last[CandPosts]

// get returns the candidate posteriors of msg, decoding spilled ones
// unless they are the ones decoded last.
func (msg *candMsg) get() (*CandPosts, error) {
	if msg.Spilled.Path == "" {
		return &msg.Cand, nil
	}
	cp, err := lastCand.Get(msg.Spilled, func(enc []byte) (*CandPosts, error) {
		cp, err := decodeCandPosts(enc)
		return &cp, err
	})
	if err != nil {
		return nil, fmt.Errorf("crowdstages: spill: candidate posteriors: %w", err)
	}
	return cp, nil
}

func encodeCandMsg(m candMsg) []byte {
	if m.Spilled.Path != "" {
		return refHeader(m.Spilled)
	}
	return append(refHeader(m.Spilled), encodeCandPosts(m.Cand)...)
}

func decodeCandMsg(b []byte) (candMsg, error) {
	var m candMsg
	var rest []byte
	var err error
	if m.Spilled, rest, err = readRefHeader(b); err != nil || m.Spilled.Path != "" {
		return m, err
	}
	m.Cand, err = decodeCandPosts(rest)
	return m, err
}

func init() {
	beam.RegisterCoder(reflect.TypeOf(modelMsg{}), encodeModelMsg, decodeModelMsg)
	beam.RegisterCoder(reflect.TypeOf(candMsg{}), encodeCandMsg, decodeCandMsg)
}
