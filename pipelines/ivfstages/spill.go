package ivfstages

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/schemas/wire"
)

// Spill keeps ivf mode's blocks and the states they send each other in local
// files while they wait between stages, and passes only references to them
// through the runner's shuffle.
//
// Why: the embedded runner (Prism) keeps a shuffle's whole input in memory,
// in several copies (the producing bundle's output, the stored elements, the
// consuming bundle's input), until its consumer has run. A round's join
// cannot start before every block of the previous round is done, so at each
// round's boundary every item's state and neighbourhood was in memory a few
// times over: 11 GiB at a million rows (docs/perf/scale.md). Spilled, the
// shuffle carries about 50 bytes per block and per message, and a worker holds
// only the blocks it is running. On Flink and Dataflow the shuffle spreads
// over workers and disks, so spilling is off there (Dir empty).
//
// Spilled, the search needs no waves either: the items' copies for the
// blocks (Part) go to files too, one per input batch.
//
// Files are named by generation and block key (or input batch), so a retried
// bundle rewrites the same bytes. A generation is removed by the first stage
// whose input waits for every reader of it (a GroupByKey's output needs all
// of its input): see the gen* constants. The caller removes Dir (and the
// last generation) when the pipeline is done.
type Spill struct {
	// Dir is a directory that every worker can read and write, and that
	// nothing else uses. Optional: empty means no spilling.
	Dir string
}

// On reports whether elements are spilled.
func (s Spill) On() bool { return s.Dir != "" }

// files is where the spill's files are kept (io/spillio).
func (s Spill) files() spillio.Dir { return spillio.Dir(s.Dir) }

// spillRef locates a spilled element; the zero value means the element is
// inline.
type spillRef = spillio.Ref

// Generations of spill files.
const (
	// genSearchIn: the items' copies for the blocks, read by the search;
	// removed by routeFn.
	genSearchIn = 0
	// genSearched: the search's blocks, read by requestFn and routeFn;
	// removed by round 0.
	genSearched = 1
	// genRouted: what routeFn sends round 0. Round r reads genRouted+r,
	// writes genRouted+r+1 and removes genRouted+r-1; the last round
	// writes its posteriors there in groups of batches (putBatchGroups),
	// read by rebatchSpillFn.
	genRouted = 2
	// genWrite: the batches' Items for the writer (stages.SpilledItems),
	// written by rebatchSpillFn and read by the writer's stages until the
	// run ends; removed with Dir. Far above any round's generation.
	genWrite = 1 << 20
)

func (s Spill) genDir(gen int) string { return s.files().Gen(gen) }

// write stores the encodings encs as the file name of generation gen
// (spillio.Dir.Write) and returns a reference to each.
func (s Spill) write(gen int, name string, encs ...[]byte) ([]spillRef, error) {
	refs, err := s.files().Write(gen, name, encs...)
	if err != nil {
		return nil, fmt.Errorf("ivfstages: spill: %w", err)
	}
	return refs, nil
}

// drop removes generation gen (see Spill).
func (s Spill) drop(gen int) error {
	if err := s.files().Drop(gen); err != nil {
		return fmt.Errorf("ivfstages: spill: %w", err)
	}
	return nil
}

// put writes block b and the messages it sends (msgs) into one file of
// generation gen and replaces them by references.
func (s Spill) put(gen int, b *Block, msgs []JoinMsg) error {
	encs := [][]byte{encodeBlock(*b)}
	for _, m := range msgs {
		encs = append(encs, encodeJoinMsg(m))
	}
	refs, err := s.write(gen, "b"+strconv.FormatInt(b.Key, 16), encs...)
	if err != nil {
		return err
	}
	*b = Block{Key: b.Key, Spilled: refs[0]}
	for i := range msgs {
		msgs[i] = JoinMsg{From: msgs[i].From, Spilled: refs[1+i]}
	}
	return nil
}

// putParts writes the parts one input batch (shard, offset) sends to
// blocks (wave w) into one file, named by the batch, after the batch's
// features x (float32 little-endian, row by row), and replaces them by
// references; the parts give their stored items by row (Part.At). It
// returns the offset where the features start.
//
// Why the features once: every item is stored in the blocks of NProbe
// partitions, which the search reaches at different times, so a copy of
// its features per block made the search's spill NProbe times the input
// (22 GB at 10M rows and d 64), more than the page cache holds.
func (s Spill) putParts(shard string, offset int64, w int, x []float32, parts []Part) (int64, error) {
	feat := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(feat[4*i:], math.Float32bits(v))
	}
	encs := [][]byte{feat}
	for i := range parts {
		encs = append(encs, encodePart(parts[i]))
	}
	refs, err := s.write(genSearchIn, batchName('s', shard, offset)+fmt.Sprintf("-w%d", w), encs...)
	if err != nil {
		return 0, err
	}
	for i := range parts {
		parts[i] = Part{Spilled: refs[1+i]}
	}
	return refs[0].Off, nil
}

// batchName names a spill file of one input batch (shard, offset): kind,
// a hash of the shard's name (of any length and characters) and the offset.
func batchName(kind byte, shard string, offset int64) string {
	h := fnv.New64a()
	h.Write([]byte(shard))
	return fmt.Sprintf("%c%016x-%x", kind, h.Sum64(), offset)
}

// batchGroups is how many groups the input batches fall into where the
// last round's posteriors are spilled (putBatchGroups).
const batchGroups = 32

// putBatchGroups writes the items block key sends back to their input
// batches (the last round's output; rs[i] is batch batches[i]'s) into one
// file of generation gen, one encoding per group of batches (a hash of
// the batch key, batchGroups groups), and returns the groups' keys and a
// reference to each.
//
// Why groups: a block's items come from nearly every batch once there are
// more batches than items in a block, so one reference per block and batch
// made about one shuffle element per row (10 million at 10M rows, each
// held several times over by the embedded runner); per group of batches
// it is at most batchGroups per block.
func (s Spill) putBatchGroups(gen int, key int64, batches []string, rs []BatchItems) ([]string, []BatchItems, error) {
	byGroup := map[int][]int{}
	for i, bk := range batches {
		h := fnv.New32a()
		h.Write([]byte(bk))
		g := int(h.Sum32() % batchGroups)
		byGroup[g] = append(byGroup[g], i)
	}
	groups := slices.Sorted(maps.Keys(byGroup))
	encs := make([][]byte, len(groups))
	for j, g := range groups {
		var w wire.Writer
		w.Uvarint(uint64(len(byGroup[g])))
		for _, i := range byGroup[g] {
			w.String(string(encodeBatchItems(rs[i])))
		}
		encs[j] = w.B
	}
	refs, err := s.write(gen, "o"+strconv.FormatInt(key, 16), encs...)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, len(groups))
	out := make([]BatchItems, len(groups))
	for j, g := range groups {
		keys[j] = "g" + strconv.Itoa(g)
		out[j] = BatchItems{Spilled: refs[j]}
	}
	return keys, out, nil
}

// loadBatchGroup reads the batches' items a group reference points to
// (putBatchGroups).
func loadBatchGroup(ref spillRef) ([]BatchItems, error) {
	return load(ref, func(b []byte) ([]BatchItems, error) {
		r := wire.Reader{B: b}
		n := r.Uvarint()
		if n > uint64(len(b)) {
			return nil, fmt.Errorf("%d batches in %d bytes", n, len(b))
		}
		out := make([]BatchItems, 0, n)
		for range n {
			enc := r.String() // "" once r fails: r.Err says so below
			x, err := decodeBatchItems([]byte(enc))
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, r.Err()
	}, "posteriors")
}

// load reads and decodes the element ref points to (spillio.Load; what
// names it in errors).
func load[T any](ref spillRef, decode func([]byte) (T, error), what string) (T, error) {
	v, err := spillio.Load(ref, decode)
	if err != nil {
		return v, fmt.Errorf("ivfstages: spill: %s: %w", what, err)
	}
	return v, nil
}

// unspill replaces a spilled block by its contents; an inline block stays.
func (b *Block) unspill() error {
	if b.Spilled.Path == "" {
		return nil
	}
	nb, err := load(b.Spilled, decodeBlock, fmt.Sprintf("block %d", b.Key))
	if err != nil {
		return err
	}
	if nb.Key != b.Key {
		return fmt.Errorf("ivfstages: spill: %s holds block %d, want %d", b.Spilled.Path, nb.Key, b.Key)
	}
	*b = nb
	return nil
}

// unspill replaces a spilled message by its contents; an inline one stays.
func (m *JoinMsg) unspill() error {
	if m.Spilled.Path == "" {
		return nil
	}
	nm, err := load(m.Spilled, decodeJoinMsg, fmt.Sprintf("message from block %d", m.From))
	if err != nil {
		return err
	}
	if nm.From != m.From {
		return fmt.Errorf("ivfstages: spill: %s at %d holds a message from block %d, want %d", m.Spilled.Path, m.Spilled.Off, nm.From, m.From)
	}
	*m = nm
	return nil
}
