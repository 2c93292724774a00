package ivf

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/knn"
)

// Index searches rows of x among all of x's rows in a partitioning: each
// query in its home partition only (its stored rows, every row that probes
// it), so a query costs about NProbe x partition size distances, not n. It
// is the search an incremental lake run makes for its few new rows and the
// old rows they reach; the full run's blocks search the same way
// (ivfstages). A query whose home partition holds fewer than k other rows
// is searched exactly among all rows instead (fillShort).
type Index struct {
	x       knn.Matrix
	keys    []int64
	pt      *Partitioning
	stored  [][]int32
	s       knn.Searcher
	metric  knn.Metric
	workers int
	// sq is every row's squared norm where the partitions are searched in
	// place (knn.CPU.IndexRows, L2), nil where they are copied.
	sq []float32
}

// NewIndex is the search of x's rows (keys their ids) in partitioning pt
// of parts partitions, with searcher s, on up to workers goroutines.
func NewIndex(x knn.Matrix, keys []int64, pt *Partitioning, parts int, s knn.Searcher, metric knn.Metric, workers int) *Index {
	count := make([]int32, parts)
	for _, q := range pt.Probe {
		count[q]++
	}
	stored := make([][]int32, parts)
	for q := range stored {
		stored[q] = make([]int32, 0, count[q])
	}
	for i := 0; i < x.Rows; i++ {
		for _, q := range pt.Probe[i*pt.NProbe : (i+1)*pt.NProbe] {
			stored[q] = append(stored[q], int32(i))
		}
	}
	v := &Index{x: x, keys: keys, pt: pt, stored: stored, s: s, metric: metric, workers: workers}
	if _, cpu := s.(knn.CPU); cpu && metric == knn.L2 {
		// A partition's search is a few queries against its stored rows:
		// copying those rows and summing their norms again for each search
		// was most of it. A row the norms refuse leaves the copies, whose
		// index names it.
		v.sq, _ = knn.RowNorms(x)
	}
	return v
}

// Search writes into dst the k nearest neighbours of each of x's rows
// named in rows (row indices of x, -1 padding) and their distances, among
// the other rows of x, nearest first. The partitions are searched in
// parallel; the result does not depend on the worker count.
func (v *Index) Search(dst *knn.Result, rows []int, k int) error {
	dst.Reset(len(rows), k)
	// Query positions grouped by home partition, partitions ascending.
	pos := make([]int, len(rows))
	for a := range pos {
		pos[a] = a
	}
	home := func(a int) int32 { return v.pt.Home(rows[a]) }
	slices.SortStableFunc(pos, func(a, b int) int { return cmp.Compare(home(a), home(b)) })
	type group struct{ lo, hi int }
	var groups []group
	for lo := 0; lo < len(pos); {
		hi := lo + 1
		for hi < len(pos) && home(pos[hi]) == home(pos[lo]) {
			hi++
		}
		groups = append(groups, group{lo, hi})
		lo = hi
	}
	d := v.x.Cols
	type work struct {
		cm, qm     []float32
		cids, qids []int64
		res        knn.Result
	}
	err := pool.EachIndexWith(len(groups), max(1, v.workers), func(w *work, gi int) error {
		g := groups[gi]
		q := home(pos[g.lo])
		st := v.stored[q]
		w.cm, w.cids = w.cm[:0], w.cids[:0]
		for _, i := range st {
			if v.sq == nil {
				w.cm = append(w.cm, v.x.Row(int(i))...)
			}
			w.cids = append(w.cids, v.keys[i])
		}
		w.qm, w.qids = w.qm[:0], w.qids[:0]
		for _, a := range pos[g.lo:g.hi] {
			w.qm = append(w.qm, v.x.Row(rows[a])...)
			w.qids = append(w.qids, v.keys[rows[a]])
		}
		var idx knn.Index
		var err error
		if gs := v.groupSearcher(len(w.qids)); v.sq != nil {
			idx, err = gs.(knn.CPU).IndexRows(v.x, st, v.sq, w.cids)
		} else {
			idx, err = gs.Index(knn.Matrix{Rows: len(w.cids), Cols: d, Data: w.cm}, w.cids, v.metric)
		}
		if err == nil {
			err = idx.Search(&w.res, knn.Matrix{Rows: len(w.qids), Cols: d, Data: w.qm}, w.qids, k)
			idx.Close()
		}
		if err != nil {
			return fmt.Errorf("partition %d: %w", q, err)
		}
		for j, a := range pos[g.lo:g.hi] {
			for t := 0; t < k; t++ {
				c := w.res.Index[j*k+t]
				dst.Dist[a*k+t] = w.res.Dist[j*k+t]
				if c < 0 {
					dst.Index[a*k+t] = -1
				} else {
					dst.Index[a*k+t] = st[c]
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return v.fillShort(dst, rows, k)
}

// groupSearcher is the searcher of one partition's queries. The CPU
// searcher's default query block (knn.DefaultQueryBlock rows) sizes a
// workspace of 2 MiB that each new index allocates and clears: for the few
// dozen queries of a partition, most of the search's time. So it gets a
// block just large enough, and one worker (the partitions already run in
// parallel). The distances do not depend on the blocking: each is one dot
// product over d, computed the same way in any tile.
func (v *Index) groupSearcher(queries int) knn.Searcher {
	c, ok := v.s.(knn.CPU)
	if !ok {
		return v.s
	}
	if c.QueryBlock == 0 {
		c.QueryBlock = knn.DefaultQueryBlock
	}
	c.QueryBlock = min(c.QueryBlock, (queries+15)/16*16)
	c.Workers = 1
	return c
}

// fillShort searches exactly, among all rows, the queries whose home
// partition held fewer than k other rows (a row alone in its k-means cell:
// a sampled outlier can keep a centroid to itself). They are rare, and a row
// left without neighbours could not be relabelled at all.
func (v *Index) fillShort(dst *knn.Result, rows []int, k int) error {
	want := min(k, v.x.Rows-1)
	var short []int
	for a := range rows {
		if want > 0 && dst.Index[a*k+want-1] < 0 {
			short = append(short, a)
		}
	}
	if len(short) == 0 {
		return nil
	}
	idx, err := v.s.Index(v.x, v.keys, v.metric)
	if err != nil {
		return err
	}
	defer idx.Close()
	q := make([]int, len(short))
	for j, a := range short {
		q[j] = rows[a]
	}
	var res knn.Result
	if err := SearchRows(&res, idx, v.x, v.keys, q, k); err != nil {
		return err
	}
	for j, a := range short {
		copy(dst.Index[a*k:(a+1)*k], res.Index[j*k:(j+1)*k])
		copy(dst.Dist[a*k:(a+1)*k], res.Dist[j*k:(j+1)*k])
	}
	return nil
}

// SearchRows writes into dst the k nearest neighbours in idx (an index of x's
// rows, keys their ids) of the rows of x named in rows, each excluding
// itself: an exact search of a few rows among all.
func SearchRows(dst *knn.Result, idx knn.Index, x knn.Matrix, keys []int64, rows []int, k int) error {
	dst.Reset(len(rows), k)
	var res knn.Result
	q := knn.Matrix{Cols: x.Cols}
	var qids []int64
	// Batches of several query blocks: the CPU kernel runs one block per
	// worker.
	const batch = 4 * knn.DefaultQueryBlock
	for lo := 0; lo < len(rows); lo += batch {
		hi := min(lo+batch, len(rows))
		q.Rows, q.Data, qids = hi-lo, q.Data[:0], qids[:0]
		for _, i := range rows[lo:hi] {
			q.Data = append(q.Data, x.Row(i)...)
			qids = append(qids, keys[i])
		}
		if err := idx.Search(&res, q, qids, k); err != nil {
			return err
		}
		copy(dst.Index[lo*k:hi*k], res.Index)
		copy(dst.Dist[lo*k:hi*k], res.Dist)
	}
	return nil
}
