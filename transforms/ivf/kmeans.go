package ivf

import (
	"fmt"
	"math"

	"github.com/relabel/relabel/transforms/knn"
)

// Model is a fitted partitioning: P centroids in the search space and how many
// blocks each partition's items are split into. It is plain data (the Beam
// side input of the assignment).
type Model struct {
	D int
	// Centroids is P x D, row-major.
	Centroids []float32
	// Blocks[p] is the number of blocks partition p's items are searched in:
	// its expected size (its share of the sample times the row count) over
	// BlockRows, rounded up.
	Blocks []int32
	// Seed spreads a partition's items over its blocks (Block).
	Seed uint64
	// Metric ranks centroids: L2, or Cosine for spherical k-means.
	Metric knn.Metric
}

// P is the number of partitions.
func (m *Model) P() int { return len(m.Blocks) }

// Index indexes the centroids for probing: Search(dst, q, nil, nprobe) on it
// writes each query's nprobe nearest partitions, nearest first (ties to the
// lower partition).
func (m *Model) Index(s knn.Searcher) (knn.Index, error) {
	ids := make([]int64, m.P())
	for i := range ids {
		ids[i] = int64(i)
	}
	return s.Index(knn.Matrix{Rows: m.P(), Cols: m.D, Data: m.Centroids}, ids, m.Metric)
}

// Block returns the block of partition p that the item key is searched in.
func (m *Model) Block(p int32, key int64) int32 {
	b := m.Blocks[p]
	if b <= 1 {
		return 0
	}
	return int32(Hash(m.Seed^0x5bd1e995, key) % uint64(b))
}

// Fit runs k-means (Lloyd's algorithm, Params.Iters iterations) on sample
// (rows in the deterministic sample order, already in the search space) into
// p.Partitions centroids, and sizes the blocks for a dataset of n rows. The
// initial centroids are the first Partitions sample rows: the sample is in
// hash order, so they are a uniform random subset (faiss's initialisation).
// For Metric Cosine the sample rows are normalised first (spherical k-means).
// An emptied centroid takes half of the largest partition (faiss's split:
// the two copies are nudged apart by a relative 1/1024), so no partition stays
// empty. p must be complete (DefaultParams). The result depends only on
// the sample, p and s's arithmetic, not on threads.
func Fit(sample knn.Matrix, n int64, p Params, s knn.Searcher) (*Model, error) {
	rows, d := sample.Rows, sample.Cols
	if rows < 1 {
		return nil, fmt.Errorf("ivf: fitting %d partitions on an empty sample", p.Partitions)
	}
	k := min(p.Partitions, rows)
	m := &Model{D: d, Centroids: make([]float32, k*d), Blocks: make([]int32, k), Seed: p.Seed, Metric: p.Metric}
	if p.Metric == knn.Cosine {
		// Spherical k-means: means of unit vectors (the index normalises
		// the centroids and queries it ranks).
		sample = unitRows(sample)
	}
	copy(m.Centroids, sample.Data[:k*d])
	sums := make([]float64, k*d)
	counts := make([]int64, k)
	var res knn.Result
	assign := func() error {
		idx, err := m.Index(s)
		if err != nil {
			return fmt.Errorf("ivf: indexing %d centroids: %w", k, err)
		}
		defer idx.Close()
		if err := idx.Search(&res, sample, nil, 1); err != nil {
			return fmt.Errorf("ivf: assigning the sample: %w", err)
		}
		clear(counts)
		for _, c := range res.Index {
			counts[c]++
		}
		return nil
	}
	for it := 0; it < p.Iters; it++ {
		if err := assign(); err != nil {
			return nil, err
		}
		clear(sums)
		for i, c := range res.Index {
			row := sample.Data[i*d : (i+1)*d]
			acc := sums[int(c)*d : int(c+1)*d]
			for j, v := range row {
				acc[j] += float64(v)
			}
		}
		for c := 0; c < k; c++ {
			if counts[c] == 0 {
				continue
			}
			inv := 1 / float64(counts[c])
			for j := 0; j < d; j++ {
				m.Centroids[c*d+j] = float32(sums[c*d+j] * inv)
			}
		}
		splitEmpty(m.Centroids, counts, d)
	}
	if err := assign(); err != nil {
		return nil, err
	}
	bl := int64(max(p.BlockRows, 1))
	for c := range m.Blocks {
		// Expected rows of partition c, rounded up so that a partition
		// seen once in the sample still counts.
		est := (counts[c]*max(n, 1) + int64(rows) - 1) / int64(rows)
		m.Blocks[c] = int32(max(1, (est+bl-1)/bl))
	}
	return m, nil
}

// unitRows returns a copy of x with every nonzero row scaled to unit length.
func unitRows(x knn.Matrix) knn.Matrix {
	out := knn.Matrix{Rows: x.Rows, Cols: x.Cols, Data: make([]float32, x.Rows*x.Cols)}
	for i := 0; i < x.Rows; i++ {
		row := x.Row(i)
		var s float64
		for _, v := range row {
			s += float64(v) * float64(v)
		}
		if s == 0 {
			continue
		}
		inv := 1 / math.Sqrt(s)
		for j, v := range row {
			out.Data[i*x.Cols+j] = float32(float64(v) * inv)
		}
	}
	return out
}

// splitEmpty gives every empty centroid (ascending) half of the currently
// largest partition (ties to the lower index).
func splitEmpty(cent []float32, counts []int64, d int) {
	const eps = 1.0 / 1024
	for c := range counts {
		if counts[c] != 0 {
			continue
		}
		big := 0
		for j, n := range counts {
			if n > counts[big] {
				big = j
			}
		}
		if counts[big] < 2 {
			return
		}
		src, dst := cent[big*d:(big+1)*d], cent[c*d:(c+1)*d]
		for j, v := range src {
			sign := float32(1)
			if j%2 == 1 {
				sign = -1
			}
			if v == 0 {
				// A relative nudge leaves a zero coordinate where it is.
				dst[j], src[j] = sign*eps, -sign*eps
				continue
			}
			dst[j] = v * (1 + sign*eps)
			src[j] = v * (1 - sign*eps)
		}
		counts[c] = counts[big] / 2
		counts[big] -= counts[c]
	}
}
