package ivf

import (
	"fmt"

	"github.com/relabel/relabel/transforms/knn"
)

// Partitioning is every item's probes: Probe[i*NProbe : (i+1)*NProbe] are
// item i's NProbe nearest partitions, nearest (its home) first.
type Partitioning struct {
	NProbe int
	Probe  []int32
}

// Home returns item i's nearest partition.
func (pt *Partitioning) Home(i int) int32 { return pt.Probe[i*pt.NProbe] }

// Assign probes every row of x (n x d, in the model's search space).
func Assign(x knn.Matrix, m *Model, nprobe int, s knn.Searcher) (*Partitioning, error) {
	nprobe = min(nprobe, m.P())
	idx, err := m.Index(s)
	if err != nil {
		return nil, fmt.Errorf("ivf: indexing %d centroids: %w", m.P(), err)
	}
	defer idx.Close()
	pt := &Partitioning{NProbe: nprobe, Probe: make([]int32, x.Rows*nprobe)}
	var res knn.Result
	const chunk = 8192
	for lo := 0; lo < x.Rows; lo += chunk {
		hi := min(lo+chunk, x.Rows)
		q := knn.Matrix{Rows: hi - lo, Cols: x.Cols, Data: x.Data[lo*x.Cols : hi*x.Cols]}
		if err := idx.Search(&res, q, nil, nprobe); err != nil {
			return nil, fmt.Errorf("ivf: probing rows %d..%d: %w", lo, hi, err)
		}
		copy(pt.Probe[lo*nprobe:hi*nprobe], res.Index)
	}
	return pt, nil
}

// SearchStats describes one in-memory search.
type SearchStats struct {
	// Partitions is P; Stored and Searched are the largest partition's
	// stored items and searched (home) items.
	Partitions, MaxStored, MaxSearched int
	// Pairs is the number of distances evaluated (sum over partitions of
	// searched x stored): NProbe x n x mean partition size.
	Pairs int64
}

// Search finds the k nearest neighbours of every row of x among the other rows
// the way the pipeline does: rows are partitioned by pt, each partition's
// stored rows (ascending row index) are indexed and its home rows searched
// against them, excluding the row itself (by key). dst.Index holds row
// indices of x (-1 padding), nearest first, ties to the lower row.
func Search(dst *knn.Result, x knn.Matrix, keys []int64, pt *Partitioning, p int, k int, metric knn.Metric, s knn.Searcher) (SearchStats, error) {
	n, d := x.Rows, x.Cols
	stored := make([][]int32, p)
	home := make([][]int32, p)
	for i := 0; i < n; i++ {
		for j, q := range pt.Probe[i*pt.NProbe : (i+1)*pt.NProbe] {
			stored[q] = append(stored[q], int32(i))
			if j == 0 {
				home[q] = append(home[q], int32(i))
			}
		}
	}
	dst.Reset(n, k)
	st := SearchStats{Partitions: p}
	var (
		cm, qm []float32
		cids   []int64
		qids   []int64
		res    knn.Result
	)
	for q := 0; q < p; q++ {
		if len(home[q]) == 0 {
			continue
		}
		st.MaxStored = max(st.MaxStored, len(stored[q]))
		st.MaxSearched = max(st.MaxSearched, len(home[q]))
		st.Pairs += int64(len(stored[q])) * int64(len(home[q]))
		cm, cids = gather(cm[:0], cids[:0], x, keys, stored[q])
		qm, qids = gather(qm[:0], qids[:0], x, keys, home[q])
		idx, err := s.Index(knn.Matrix{Rows: len(cids), Cols: d, Data: cm}, cids, metric)
		if err != nil {
			return st, fmt.Errorf("ivf: indexing partition %d: %w", q, err)
		}
		err = idx.Search(&res, knn.Matrix{Rows: len(qids), Cols: d, Data: qm}, qids, k)
		idx.Close()
		if err != nil {
			return st, fmt.Errorf("ivf: searching partition %d: %w", q, err)
		}
		for a, i := range home[q] {
			for j := 0; j < k; j++ {
				c := res.Index[a*k+j]
				dst.Dist[int(i)*k+j] = res.Dist[a*k+j]
				if c < 0 {
					dst.Index[int(i)*k+j] = -1
				} else {
					dst.Index[int(i)*k+j] = stored[q][c]
				}
			}
		}
	}
	return st, nil
}

func gather(f []float32, ids []int64, x knn.Matrix, keys []int64, rows []int32) ([]float32, []int64) {
	for _, i := range rows {
		f = append(f, x.Row(int(i))...)
		ids = append(ids, keys[i])
	}
	return f, ids
}
