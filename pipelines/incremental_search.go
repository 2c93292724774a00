package pipelines

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

// The incremental run's neighbour search: the K nearest neighbours of a few
// rows (the new ones, then the old ones they reached) among all N rows.
//
// Exact (tables below options.AutoIVFRows, or --neighbours exact) it is the SGEMM
// kernel of transforms/knn over all N rows, O(queries x N x d): at 1M rows
// with a 1% append its second pass alone (up to K x new old rows) is about
// 10^11 distances, more than a whole ivf run. So where a full run over the
// table would use ivf, the incremental run does too, the way the full run
// partitions (transforms/ivf: k-means on the deterministic hash sample,
// every row stored in its NProbe nearest partitions), and searches each
// query in its home partition only: O(N x P x d) to probe every row (the
// stored side needs all of them; P = N / 500 by default), plus queries x
// NProbe x 500 x d for the searches. Same seed and options, same sample and
// centroids as the full run's partitioning, up to the standardisation's
// float rounding (the full run standardises in its stages).

// incrementalMode is the neighbour search of an incremental run over rows
// rows: ivf where a full run would use it, else exact (a --candidates
// sample is a full run's approximation of exact; the few queried rows can
// afford the exact search).
func incrementalMode(o *options.Options, rows int64) string {
	if o.NeighbourMode(rows) == options.NeighboursIVF {
		return options.NeighboursIVF
	}
	return options.NeighboursExact
}

// incIndex answers "the k nearest of these rows among all rows": dst gets
// len(rows) x k global row indices (-1 padding) and distances.
type incIndex interface {
	search(dst *knn.Result, rows []int, k int) error
	Close() error
}

// exactIndex is the exact search over every row.
type exactIndex struct {
	idx  knn.Index
	x    knn.Matrix
	keys []int64
}

func (e *exactIndex) Close() error { return e.idx.Close() }

func (e *exactIndex) search(dst *knn.Result, rows []int, k int) error {
	dst.Reset(len(rows), k)
	var res knn.Result
	q := knn.Matrix{Cols: e.x.Cols}
	var qids []int64
	// Batches of several query blocks: the CPU kernel runs one block per
	// worker.
	const batch = 4 * knn.DefaultQueryBlock
	for lo := 0; lo < len(rows); lo += batch {
		hi := min(lo+batch, len(rows))
		q.Rows, q.Data, qids = hi-lo, q.Data[:0], qids[:0]
		for _, i := range rows[lo:hi] {
			q.Data = append(q.Data, e.x.Row(i)...)
			qids = append(qids, e.keys[i])
		}
		if err := e.idx.Search(&res, q, qids, k); err != nil {
			return err
		}
		copy(dst.Index[lo*k:hi*k], res.Index)
		copy(dst.Dist[lo*k:hi*k], res.Dist)
	}
	return nil
}

// ivfIndex is the partitioned search: every row's probes, and each
// partition's stored rows.
type ivfIndex struct {
	x       knn.Matrix
	keys    []int64
	pt      *ivf.Partitioning
	stored  [][]int32
	s       knn.Searcher
	metric  knn.Metric
	workers int
}

// fitIVF fits and assigns the partitioning of x (already standardised) as
// ivfstages does for a full run with the same options.
func fitIVF(x knn.Matrix, keys []int64, o *options.Options, s knn.Searcher) (*ivf.Model, *ivf.Partitioning, error) {
	n := x.Rows
	p := ivfParams(o, int64(n))
	sm := ivf.Sample{Cap: p.Sample, D: x.Cols}
	for i := 0; i < n; i++ {
		sm.Add(ivf.Hash(o.Seed, keys[i]), keys[i], x.Row(i))
	}
	sm.Trim()
	model, err := ivf.Fit(knn.Matrix{Rows: sm.Len(), Cols: x.Cols, Data: sm.Features}, int64(n), p, s)
	if err != nil {
		return nil, nil, err
	}
	pt, err := ivf.Assign(x, model, p.NProbe, s)
	if err != nil {
		return nil, nil, err
	}
	return model, pt, nil
}

// newIVFIndex is the search of x's rows in partitioning pt (of parts
// partitions).
func newIVFIndex(x knn.Matrix, keys []int64, pt *ivf.Partitioning, parts int, s knn.Searcher, metric knn.Metric, workers int) *ivfIndex {
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
	return &ivfIndex{x: x, keys: keys, pt: pt, stored: stored, s: s, metric: metric, workers: workers}
}

func (v *ivfIndex) Close() error { return nil }

// search searches each query row in its home partition, the partitions in
// parallel; the result does not depend on the worker count.
func (v *ivfIndex) search(dst *knn.Result, rows []int, k int) error {
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
			w.cm = append(w.cm, v.x.Row(int(i))...)
			w.cids = append(w.cids, v.keys[i])
		}
		w.qm, w.qids = w.qm[:0], w.qids[:0]
		for _, a := range pos[g.lo:g.hi] {
			w.qm = append(w.qm, v.x.Row(rows[a])...)
			w.qids = append(w.qids, v.keys[rows[a]])
		}
		idx, err := v.groupSearcher(len(w.qids)).Index(knn.Matrix{Rows: len(w.cids), Cols: d, Data: w.cm}, w.cids, v.metric)
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
func (v *ivfIndex) groupSearcher(queries int) knn.Searcher {
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
func (v *ivfIndex) fillShort(dst *knn.Result, rows []int, k int) error {
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
	e := &exactIndex{idx: idx, x: v.x, keys: v.keys}
	defer e.Close()
	q := make([]int, len(short))
	for j, a := range short {
		q[j] = rows[a]
	}
	var res knn.Result
	if err := e.search(&res, q, k); err != nil {
		return err
	}
	for j, a := range short {
		copy(dst.Index[a*k:(a+1)*k], res.Index[j*k:(j+1)*k])
		copy(dst.Dist[a*k:(a+1)*k], res.Dist[j*k:(j+1)*k])
	}
	return nil
}

// neighbourWeights computes the weights of rows' neighbours nb (from an
// incIndex) in batches of engine.BatchRows, the batches in parallel.
func neighbourWeights(x knn.Matrix, rows []int, nb *knn.Result, w engine.Weighting, lp llc.Params, coder llc.Coder, workers int) ([]float64, error) {
	k := nb.K
	wt := make([]float64, len(rows)*k)
	type work struct {
		wb engine.WeightBuffer
		q  knn.Matrix
	}
	batches := (len(rows) + engine.BatchRows - 1) / engine.BatchRows
	err := pool.EachIndexWith(batches, max(1, workers), func(ws *work, b int) error {
		lo := b * engine.BatchRows
		hi := min(lo+engine.BatchRows, len(rows))
		ws.q.Cols, ws.q.Rows, ws.q.Data = x.Cols, hi-lo, ws.q.Data[:0]
		for _, i := range rows[lo:hi] {
			ws.q.Data = append(ws.q.Data, x.Row(i)...)
		}
		res := knn.Result{K: k, Index: nb.Index[lo*k : hi*k], Dist: nb.Dist[lo*k : hi*k]}
		if err := ws.wb.Weights(wt[lo*k:hi*k], ws.q, x, &res, w, lp, coder); err != nil {
			return fmt.Errorf("rows %d..%d: %w", lo, hi, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return wt, nil
}
