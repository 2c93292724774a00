package ivf

import (
	"errors"
	"fmt"

	"github.com/relabel/relabel/transforms/internal/splitmix"
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

// Params configures the partitioning.
type Params struct {
	// Partitions is the number of k-means centroids. Optional, default
	// ceil(rows / DefaultPartitionSize), at most the sample size.
	Partitions int
	// NProbe is how many nearest partitions store each item. Optional,
	// default DefaultNProbe (at most Partitions).
	NProbe int
	// Iters is the number of Lloyd iterations. Optional, default DefaultIters.
	Iters int
	// Sample is the number of items k-means is fitted on. Optional, default
	// DefaultSamplePerPartition x Partitions, at most MaxSample and the rows.
	Sample int
	// BlockRows bounds the items searched under one key. Optional, default
	// DefaultBlockRows.
	BlockRows int
	// Metric is the search's: partitions are cells of L2 distance to the
	// centroids, of the normalised vectors for Cosine (spherical k-means).
	// Optional, default knn.L2.
	Metric knn.Metric
	// Seed selects the sample and spreads items over blocks. Required (0 is a
	// seed).
	Seed uint64
}

// WithDefaults fills unset fields for a dataset of n rows.
func (p Params) WithDefaults(n int64) Params {
	n = max(n, 1)
	if p.Partitions <= 0 {
		p.Partitions = int((n + DefaultPartitionSize - 1) / DefaultPartitionSize)
	}
	if p.Sample <= 0 {
		p.Sample = min(DefaultSamplePerPartition*p.Partitions, MaxSample)
	}
	p.Sample = int(min(int64(p.Sample), n))
	p.Partitions = max(1, min(p.Partitions, p.Sample))
	if p.NProbe <= 0 {
		p.NProbe = DefaultNProbe
	}
	p.NProbe = min(p.NProbe, p.Partitions)
	if p.Iters <= 0 {
		p.Iters = DefaultIters
	}
	if p.BlockRows <= 0 {
		p.BlockRows = DefaultBlockRows
	}
	return p
}

// Validate checks explicitly set fields (before or after WithDefaults).
func (p Params) Validate() error {
	var errs []error
	if p.Partitions < 0 {
		errs = append(errs, fmt.Errorf("partitions = %d, want >= 0", p.Partitions))
	}
	if p.NProbe < 0 {
		errs = append(errs, fmt.Errorf("nprobe = %d, want >= 0", p.NProbe))
	}
	if p.Iters < 0 || p.Sample < 0 || p.BlockRows < 0 {
		errs = append(errs, fmt.Errorf("iters = %d, sample = %d, block rows = %d, want >= 0", p.Iters, p.Sample, p.BlockRows))
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
