package ivf

import (
	"errors"
	"fmt"

	"github.com/relabel/relabel/internal/splitmix"
	"github.com/relabel/relabel/transforms/knn"
)

// Defaults, chosen on fashion_mnist_pca50 (70k x 50, docs/perf/scale.md):
// partitions of about DefaultPartitionSize items searched with DefaultNProbe
// copies give Recall@10 >= 0.95 against the exact search.
const (
	// DefaultPartitionSize is the mean partition size Params.Partitions
	// defaults to. The search costs NProbe x PartitionSize distance
	// evaluations per item, whatever the row count.
	DefaultPartitionSize = 500
	// DefaultNProbe is how many partitions store each item.
	DefaultNProbe = 8
	// DefaultIters is the number of Lloyd iterations.
	DefaultIters = 10
	// DefaultSamplePerPartition is the k-means sample size per centroid
	// (faiss warns below 39; more buys little for a partitioning).
	DefaultSamplePerPartition = 64
	// DefaultBlockRows bounds the items searched under one key: a larger
	// partition is split into blocks of its items, each searched against
	// all the partition's stored items, so no key is hot.
	DefaultBlockRows = 4096
	// MaxSample caps the k-means sample (rows).
	MaxSample = 1 << 16
)

// Params configures the partitioning. Every field is required and holds
// the value used: DefaultParams(rows) gives them for a dataset of rows rows,
// and WithPartitions and WithNProbe change one choice and what depends on
// it. No field has a "use the default" value.
type Params struct {
	// Partitions is the number of k-means centroids: DefaultParams gives
	// ceil(rows / DefaultPartitionSize); at most Sample.
	Partitions int
	// NProbe is how many nearest partitions store each item:
	// DefaultNProbe, at most Partitions.
	NProbe int
	// Iters is the number of Lloyd iterations: DefaultIters.
	Iters int
	// Sample is the number of items k-means is fitted on:
	// DefaultSamplePerPartition x Partitions, at most MaxSample and the rows.
	Sample int
	// BlockRows bounds the items searched under one key: DefaultBlockRows.
	BlockRows int
	// Metric is the search's: partitions are cells of L2 distance to the
	// centroids, of the normalised vectors for Cosine (spherical k-means).
	// DefaultParams gives knn.L2.
	Metric knn.Metric
	// Seed selects the sample and spreads items over blocks (0 is a seed).
	Seed uint64
}

// DefaultParams are the parameters for a dataset of rows rows (at least 1):
// partitions of about DefaultPartitionSize items, each item stored in
// DefaultNProbe of them, seed 0, L2.
func DefaultParams(rows int64) Params {
	rows = max(rows, 1)
	p := Params{Iters: DefaultIters, BlockRows: DefaultBlockRows, Metric: knn.L2}
	return p.WithPartitions(rows, int((rows+DefaultPartitionSize-1)/DefaultPartitionSize))
}

// WithPartitions is p with k partitions for a dataset of rows rows, the
// sample sized for them (DefaultSamplePerPartition each, at most MaxSample
// and the rows) and NProbe their default, DefaultNProbe (WithNProbe after
// it sets another); k is clamped to the sample, NProbe to k.
func (p Params) WithPartitions(rows int64, k int) Params {
	rows = max(rows, 1)
	p.Sample = int(min(int64(min(DefaultSamplePerPartition*k, MaxSample)), rows))
	p.Partitions = max(1, min(k, p.Sample))
	p.NProbe = min(DefaultNProbe, p.Partitions)
	return p
}

// WithNProbe is p with each item stored in its np nearest partitions (at
// most Partitions).
func (p Params) WithNProbe(np int) Params {
	p.NProbe = min(np, p.Partitions)
	return p
}

// Validate checks that every field holds a usable value.
func (p Params) Validate() error {
	var errs []error
	if p.Partitions < 1 || p.Sample < p.Partitions {
		errs = append(errs, fmt.Errorf("partitions = %d, sample = %d, want 1 <= partitions <= sample", p.Partitions, p.Sample))
	}
	if p.NProbe < 1 || p.NProbe > p.Partitions {
		errs = append(errs, fmt.Errorf("nprobe = %d, want 1..%d (the partitions)", p.NProbe, p.Partitions))
	}
	if p.Iters < 1 || p.BlockRows < 1 {
		errs = append(errs, fmt.Errorf("iters = %d, block rows = %d, want >= 1", p.Iters, p.BlockRows))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ivf: %w", err)
	}
	return nil
}

// Hash orders items for the k-means sample: a keyed hash (splitmix64 of the
// key under a seed-derived mask), so the sample is a pure function of (seed,
// key), independent of input order and of how a runner splits the data. The
// mask differs from engine.CandidateHash's so that the sample and a
// --candidates subset are independent.
func Hash(seed uint64, key int64) uint64 {
	return splitmix.Mix64(uint64(key) ^ (seed*splitmix.Golden + 0x632be59bd9b4e019))
}
