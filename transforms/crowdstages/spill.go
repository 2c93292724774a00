package crowdstages

import (
	"fmt"
	"hash/fnv"

	"github.com/relabel/relabel/io/spillio"
)

// Spill keeps the EM iterations' batches in local files while they wait
// between stages, and passes only references to them through the runner's
// shuffle.
//
// Why: the embedded runner (Prism) keeps what a stage emits in memory, in
// several copies, and every iteration emits every batch anew (its
// posteriors change): 30 iterations of 300,000 items held 4.96 GiB at the
// peak, growing with items x iterations (docs/PERFORMANCE.md). Spilled, an
// iteration shuffles about 100 bytes per batch, and a worker holds only the
// batches it is running. On Flink and Dataflow the shuffle spreads over
// workers and disks, so spilling is off there (Dir empty).
//
// Generation r holds the batches of iteration r (0: the join's). Files are
// named by batch, so a retried bundle rewrites the same bytes. Iteration
// r's batches are read by that iteration's statistics (and, with features,
// candidate posteriors) and by iteration r+1's E step; the M step of
// iteration r+1 (estimateFn, whose input is a combine over every batch
// iteration r+1's E step wrote) is the first stage that runs after all of
// them, and removes generation r. The caller removes Dir, and with it the
// last generation, when the pipeline is done.
type Spill struct {
	// Dir is a directory that every worker can read and write, and that
	// nothing else uses. Optional: empty means no spilling.
	Dir string
}

// On reports whether batches are spilled.
func (s Spill) On() bool { return s.Dir != "" }

func (s Spill) files() spillio.Dir { return spillio.Dir(s.Dir) }

// put writes b into generation gen and replaces it by a reference (Shard
// and Offset stay, for errors); nothing when s is off.
func (s Spill) put(gen int, b *Batch) error {
	if !s.On() {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(b.Shard))
	refs, err := s.files().Write(gen, fmt.Sprintf("b%016x-%x", h.Sum64(), b.Offset), encodeBatch(*b))
	if err != nil {
		return fmt.Errorf("crowdstages: spill: %s rows %d..: %w", b.Shard, b.Offset, err)
	}
	*b = Batch{Shard: b.Shard, Offset: b.Offset, Spilled: refs[0]}
	return nil
}

// drop removes generation gen; nothing when s is off or gen < 0.
func (s Spill) drop(gen int) error {
	if gen < 0 {
		return nil
	}
	if err := s.files().Drop(gen); err != nil {
		return fmt.Errorf("crowdstages: spill: %w", err)
	}
	return nil
}

// unspill replaces a spilled batch by its contents; an inline batch stays.
func (b *Batch) unspill() error {
	if b.Spilled.Path == "" {
		return nil
	}
	enc, err := spillio.Read(b.Spilled)
	if err != nil {
		return fmt.Errorf("crowdstages: spill: %s rows %d..: %w", b.Shard, b.Offset, err)
	}
	nb, err := decodeBatch(enc)
	if err != nil {
		return fmt.Errorf("crowdstages: spill: %s rows %d.. in %s at %d: %w", b.Shard, b.Offset, b.Spilled.Path, b.Spilled.Off, err)
	}
	if nb.Shard != b.Shard || nb.Offset != b.Offset {
		return fmt.Errorf("crowdstages: spill: %s at %d holds %s rows %d.., want %s rows %d..", b.Spilled.Path, b.Spilled.Off, nb.Shard, nb.Offset, b.Shard, b.Offset)
	}
	*b = nb
	return nil
}
