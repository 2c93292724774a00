package stages

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"

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
// blocks (IVFPart) go to files too, one per input batch.
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

// spillRef locates a spilled element: Len bytes at Off in the file Path.
// The zero value means the element is inline.
type spillRef struct {
	Path     string
	Off, Len int64
}

func putSpillRef(w *wire.Writer, r spillRef) {
	w.String(r.Path)
	w.Varint(r.Off)
	w.Varint(r.Len)
}

func getSpillRef(r *wire.Reader) spillRef {
	return spillRef{Path: r.String(), Off: r.Varint(), Len: r.Varint()}
}

// Generations of spill files.
const (
	// genSearchIn: the probed input batches and the items' copies for the
	// blocks, read by the search; removed by routeFn.
	genSearchIn = 0
	// genSearched: the search's blocks, read by requestFn and routeFn;
	// removed by round 0.
	genSearched = 1
	// genRouted: what routeFn sends round 0. Round r reads genRouted+r,
	// writes genRouted+r+1 and removes genRouted+r-1.
	genRouted = 2
)

func (s Spill) genDir(gen int) string {
	return filepath.Join(s.Dir, fmt.Sprintf("g%03d", gen))
}

// write stores data as the file name of generation gen. The file is written
// under a temporary name and renamed, so a reader never sees half of it.
func (s Spill) write(gen int, name string, data []byte) (string, error) {
	dir := s.genDir(gen)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("stages: ivf spill: %w", err)
	}
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return "", fmt.Errorf("stages: ivf spill: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("stages: ivf spill: %w", err)
	}
	return path, nil
}

// put writes block b and the messages it sends (msgs) into one file of
// generation gen and replaces them by references.
func (s Spill) put(gen int, b *IVFBlock, msgs []JoinMsg) error {
	buf := encodeIVFBlock(*b)
	blockLen := len(buf)
	offs := make([]int, len(msgs)+1)
	for i := range msgs {
		offs[i] = len(buf)
		buf = append(buf, encodeJoinMsg(msgs[i])...)
	}
	offs[len(msgs)] = len(buf)
	path, err := s.write(gen, "b"+strconv.FormatInt(b.Key, 16), buf)
	if err != nil {
		return err
	}
	refs := make([]spillRef, len(msgs))
	for i := range msgs {
		refs[i] = spillRef{Path: path, Off: int64(offs[i]), Len: int64(offs[i+1] - offs[i])}
	}
	*b = IVFBlock{Key: b.Key, Spilled: spillRef{Path: path, Len: int64(blockLen)}}
	for i := range msgs {
		msgs[i] = JoinMsg{From: msgs[i].From, Spilled: refs[i]}
	}
	return nil
}

// drop removes generation gen (see Spill).
func (s Spill) drop(gen int) error {
	if !s.On() || gen < 0 {
		return nil
	}
	if err := os.RemoveAll(s.genDir(gen)); err != nil {
		return fmt.Errorf("stages: ivf spill: %w", err)
	}
	return nil
}

func readSpilled(r spillRef) ([]byte, error) {
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, fmt.Errorf("stages: ivf spill: %w (was the spill directory removed while the job ran?)", err)
	}
	defer f.Close()
	b := make([]byte, r.Len)
	if _, err := f.ReadAt(b, r.Off); err != nil {
		return nil, fmt.Errorf("stages: ivf spill: reading %d bytes at %d of %s: %w", r.Len, r.Off, r.Path, err)
	}
	return b, nil
}

// unspill replaces a spilled block by its contents; an inline block stays.
func (b *IVFBlock) unspill() error {
	if b.Spilled.Path == "" {
		return nil
	}
	data, err := readSpilled(b.Spilled)
	if err != nil {
		return err
	}
	nb, err := decodeIVFBlock(data)
	if err != nil {
		return fmt.Errorf("stages: ivf spill: block %d in %s: %w", b.Key, b.Spilled.Path, err)
	}
	if nb.Key != b.Key {
		return fmt.Errorf("stages: ivf spill: %s holds block %d, want %d", b.Spilled.Path, nb.Key, b.Key)
	}
	*b = nb
	return nil
}

// batchName names the spill file of what input batch (shard, offset) makes.
func batchName(prefix, shard string, offset int64) string {
	h := fnv.New64a()
	h.Write([]byte(shard))
	return fmt.Sprintf("%s%016x-%x", prefix, h.Sum64(), offset)
}

// putProbed writes a probed input batch for the search and replaces it by
// its reference.
func (s Spill) putProbed(p *IVFProbed) error {
	data := encodeIVFProbed(*p)
	path, err := s.write(genSearchIn, batchName("p", p.Rows.Shard, p.Rows.Offset), data)
	if err != nil {
		return err
	}
	*p = IVFProbed{Spilled: spillRef{Path: path, Len: int64(len(data))}}
	return nil
}

// putParts writes the parts one input batch sends to blocks (wave w) into
// one file and replaces them by references.
func (s Spill) putParts(shard string, offset int64, w int, parts []IVFPart) error {
	var buf []byte
	offs := make([]int, len(parts)+1)
	for i := range parts {
		offs[i] = len(buf)
		buf = append(buf, encodeIVFPart(parts[i])...)
	}
	offs[len(parts)] = len(buf)
	path, err := s.write(genSearchIn, batchName("s", shard, offset)+fmt.Sprintf("-w%d", w), buf)
	if err != nil {
		return err
	}
	for i := range parts {
		parts[i] = IVFPart{Spilled: spillRef{Path: path, Off: int64(offs[i]), Len: int64(offs[i+1] - offs[i])}}
	}
	return nil
}

// unspill replaces a spilled part by its contents; an inline one stays.
func (p *IVFPart) unspill() error {
	if p.Spilled.Path == "" {
		return nil
	}
	data, err := readSpilled(p.Spilled)
	if err != nil {
		return err
	}
	np, err := decodeIVFPart(data)
	if err != nil {
		return fmt.Errorf("stages: ivf spill: part in %s at %d: %w", p.Spilled.Path, p.Spilled.Off, err)
	}
	*p = np
	return nil
}

// unspill replaces a spilled batch by its contents; an inline one stays.
func (p *IVFProbed) unspill() error {
	if p.Spilled.Path == "" {
		return nil
	}
	data, err := readSpilled(p.Spilled)
	if err != nil {
		return err
	}
	np, err := decodeIVFProbed(data)
	if err != nil {
		return fmt.Errorf("stages: ivf spill: batch in %s: %w", p.Spilled.Path, err)
	}
	*p = np
	return nil
}

// unspill replaces a spilled message by its contents; an inline one stays.
func (m *JoinMsg) unspill() error {
	if m.Spilled.Path == "" {
		return nil
	}
	data, err := readSpilled(m.Spilled)
	if err != nil {
		return err
	}
	nm, err := decodeJoinMsg(data)
	if err != nil {
		return fmt.Errorf("stages: ivf spill: message from block %d in %s: %w", m.From, m.Spilled.Path, err)
	}
	if nm.From != m.From {
		return fmt.Errorf("stages: ivf spill: %s at %d holds a message from block %d, want %d", m.Spilled.Path, m.Spilled.Off, nm.From, m.From)
	}
	*m = nm
	return nil
}
