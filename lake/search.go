package lake

import (
	"fmt"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

// The incremental run's neighbour search: the K nearest neighbours of a few
// rows (the new ones, then the old ones they reached) among all N rows.
//
// Exact (tables below ivf mode's automatic threshold, or --neighbours exact) it is the SGEMM
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
func incrementalMode(plan *job.Job, rows int64) string {
	if plan.ModeFor(rows) == job.ModeIVF {
		return job.ModeIVF
	}
	return job.ModeExact
}

// incIndex answers "the k nearest of these rows among all rows": dst gets
// len(rows) x k global row indices (-1 padding) and distances.
type incIndex interface {
	search(dst *knn.Result, rows []int, k int) error
	Close() error
}

// incQueryBlock is the query block of the incremental run's exact search
// (knn.CPU.QueryBlock): the lists do not depend on it.
const incQueryBlock = 64

// exactIndex is the exact search over every row.
type exactIndex struct {
	idx  knn.Index
	x    knn.Matrix
	keys []int64
}

func (e *exactIndex) Close() error { return e.idx.Close() }

func (e *exactIndex) search(dst *knn.Result, rows []int, k int) error {
	return ivf.SearchRows(dst, e.idx, e.x, e.keys, rows, k)
}

// ivfIndex is the partitioned search (ivf.Index).
type ivfIndex struct{ *ivf.Index }

func (v ivfIndex) search(dst *knn.Result, rows []int, k int) error { return v.Search(dst, rows, k) }

func (ivfIndex) Close() error { return nil }

// fitIVF fits and assigns the partitioning of x (already standardised) as
// ivfstages does for a full run of the same job.
func fitIVF(x knn.Matrix, keys []int64, plan *job.Job, s knn.Searcher) (*ivf.Model, *ivf.Partitioning, error) {
	n := x.Rows
	p := plan.IVFParams(int64(n))
	sm := ivf.Sample{Cap: p.Sample, D: x.Cols}
	for i := 0; i < n; i++ {
		sm.Add(ivf.Hash(plan.Seed(), keys[i]), keys[i], x.Row(i))
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

// newIncIndex indexes every row of d for the update's searches: in an ivf
// partitioning where a full run would use ivf (the kept one, extended to
// the new rows, where it is usable; else fitted again: state is the one to
// keep for the next run), else exactly. cm is the rows' standardised
// features the searches and weights read.
func newIncIndex(d *incData, plan *job.Job, kept *keptio.IVF, keyRow map[int64]int, s knn.Searcher, workers int) (ix incIndex, cm knn.Matrix, state *keptio.IVF, err error) {
	np := plan.NeighbourParams()
	if incrementalMode(plan, int64(d.n)) != job.ModeIVF {
		feats, _, _ := standardised(d, np.Standardise)
		cm = knn.Matrix{Rows: d.n, Cols: d.d, Data: feats}
		if cpu, ok := s.(knn.CPU); ok && cpu.QueryBlock == 0 {
			// A few hundred queries, not all N: blocks of incQueryBlock
			// keep every core busy (the CPU index splits its work by query
			// block; the default block, 512 rows, is one core's), and the
			// candidates are packed once for all of them.
			cpu.QueryBlock = incQueryBlock
			s = cpu
		}
		idx, err := s.Index(cm, d.keys, np.Metric)
		if err != nil {
			return nil, cm, nil, fmt.Errorf("relabel: incremental: indexing %d rows: %w", d.n, err)
		}
		return &exactIndex{idx: idx, x: cm, keys: d.keys}, cm, nil, nil
	}
	var pt *ivf.Partitioning
	if kept != nil {
		if why := usable(kept, plan, d.n); why != "" {
			progress.Notef("--incremental: the kept ivf partitioning is not used (%s): partitioning all %d rows again", why, d.n)
		} else if pt, state, err = keptPartitioning(kept, d, keyRow, s); err != nil {
			return nil, cm, nil, err
		} else if pt == nil {
			progress.Notef("--incremental: the kept ivf partitioning holds rows the input no longer holds, or holds as new: partitioning all %d rows again", d.n)
		} else {
			feats, _, _ := standardised(d, np.Standardise)
			cm = knn.Matrix{Rows: d.n, Cols: d.d, Data: feats}
		}
	}
	if pt == nil {
		if state, pt, cm, err = newIVFState(d, plan, s); err != nil {
			return nil, cm, nil, fmt.Errorf("relabel: incremental: partitioning %d rows: %w", d.n, err)
		}
	}
	return ivfIndex{ivf.NewIndex(cm, d.keys, pt, state.Model.P(), s, np.Metric, workers)}, cm, state, nil
}
