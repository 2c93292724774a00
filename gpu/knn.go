//go:build cuda || cudaemu

package gpu

import (
	"fmt"
	"math"
	"sync"

	"github.com/relabel/relabel/transforms/knn"
)

// Launch shapes of gpu/kernels/knn.cu; they must match its #defines.
const (
	distThreads = 256  // DIST_THREADS
	distTileM   = 64   // BM: queries per knn_dist block
	distTileN   = 64   // BN: candidates per knn_dist block
	topkThreads = 256  // TOPK_THREADS
	topkP       = 2048 // TOPK_P

	defaultQueryBlock     = 8192
	defaultCandidateBlock = 65536
)

// maxSqNorm bounds squared norms, as in knn.CPU, so that ||q||^2 + ||p||^2 +
// 2|q.p| cannot overflow float32 and an infinite distance always means
// padding.
const maxSqNorm = math.MaxFloat32 / 8

var _ knn.Searcher = Searcher{}

// Index uploads c (S x d), its ids and per-candidate norm terms to the device,
// where they stay until Close: for Cosine a normalised copy, for L2 c itself
// and the squared norms. Validation matches knn.CPU: non-finite values and
// squared norms above MaxFloat32/8 are errors.
func (s Searcher) Index(c knn.Matrix, ids []int64, m knn.Metric) (knn.Index, error) {
	if c.Rows < 0 || c.Cols < 1 || len(c.Data) < c.Rows*c.Cols {
		return nil, fmt.Errorf("gpu: Searcher.Index: candidate matrix %dx%d with %d values", c.Rows, c.Cols, len(c.Data))
	}
	if len(ids) != c.Rows {
		return nil, fmt.Errorf("gpu: Searcher.Index: %d ids for %d candidates", len(ids), c.Rows)
	}
	if m != knn.L2 && m != knn.Cosine {
		return nil, fmt.Errorf("gpu: Searcher.Index: unknown metric %v", m)
	}
	if s.QueryBlock < 0 || s.CandidateBlock < 0 || s.MemoryFraction < 0 || s.MemoryFraction > 1 {
		return nil, fmt.Errorf("gpu: Searcher.Index: option out of range in %+v", s)
	}
	if s.QueryBlock == 0 {
		s.QueryBlock = defaultQueryBlock
	}
	if s.CandidateBlock == 0 {
		s.CandidateBlock = defaultCandidateBlock
	}
	d, err := device()
	if err != nil {
		return nil, err
	}

	n, dim := c.Rows, c.Cols
	data := c.Data[:n*dim]
	bias := make([]float32, n)
	if m == knn.Cosine {
		norm := make([]float32, len(data))
		for i := 0; i < n; i++ {
			row := data[i*dim : (i+1)*dim]
			if !knn.Normalise(norm[i*dim:(i+1)*dim], row) {
				return nil, fmt.Errorf("gpu: Searcher.Index: candidate row %d: %w", i, knn.CheckRow(row, math.Inf(1)))
			}
		}
		data = norm
	} else {
		for i := 0; i < n; i++ {
			row := data[i*dim : (i+1)*dim]
			sq := knn.SqNorm(row)
			if !(sq <= maxSqNorm) { // also catches NaN and Inf values
				return nil, fmt.Errorf("gpu: Searcher.Index: candidate row %d: %w", i, knn.CheckRow(row, maxSqNorm))
			}
			bias[i] = float32(sq)
		}
	}

	x := &index{opt: s, dev: d, metric: m, n: n, d: dim}
	release, err := d.bind()
	if err != nil {
		return nil, err
	}
	defer release()
	for _, e := range []error{upload(d, &x.data, data), upload(d, &x.bias, bias), upload(d, &x.ids, ids)} {
		if e != nil {
			x.freeAll()
			return nil, fmt.Errorf("gpu: Searcher.Index: uploading %d candidates: %w", n, e)
		}
	}
	return x, nil
}

// index is the Index of Searcher. Searches on one index are serialised (they
// share its device buffers); the device runs one kernel at a time anyway.
type index struct {
	opt    Searcher
	dev    backend
	metric knn.Metric
	n, d   int

	mu              sync.Mutex
	closed          bool
	data, bias, ids buffer // resident candidates
	q, qterm, qids  buffer // one query block
	tile            buffer // query block x candidate block distances
	bestD, bestI    buffer // query block x k running lists
	hostQ           []float32
	hostTerm        []float32
}

// Close frees the index's device memory. Searching a closed index panics.
func (x *index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	release, err := x.dev.bind()
	if err != nil {
		return err
	}
	defer release()
	x.freeAll()
	return nil
}

func (x *index) freeAll() {
	for _, b := range []*buffer{&x.data, &x.bias, &x.ids, &x.q, &x.qterm, &x.qids, &x.tile, &x.bestD, &x.bestI} {
		b.release(x.dev)
	}
}

// Search implements knn.Index with knn.CPU's contract: a nil qIDs excludes
// nothing; a non-finite query row, or one whose squared norm exceeds
// MaxFloat32/8, is an error naming the lowest such row. k above MaxK is an
// error.
func (x *index) Search(dst *knn.Result, q knn.Matrix, qIDs []int64, k int) error {
	if q.Cols != x.d {
		panic(fmt.Sprintf("gpu: Search: query dimension %d, index dimension %d", q.Cols, x.d))
	}
	if q.Rows < 0 || len(q.Data) < q.Rows*q.Cols {
		panic(fmt.Sprintf("gpu: Search: query matrix %dx%d with %d values", q.Rows, q.Cols, len(q.Data)))
	}
	if qIDs != nil && len(qIDs) != q.Rows {
		panic(fmt.Sprintf("gpu: Search: %d query ids for %d queries", len(qIDs), q.Rows))
	}
	if k < 0 {
		panic(fmt.Sprintf("gpu: Search: negative k %d", k))
	}
	if k > MaxK {
		return fmt.Errorf("gpu: Search: k = %d exceeds the CUDA backend's MaxK = %d", k, MaxK)
	}
	dst.Reset(q.Rows, k)
	if k == 0 || q.Rows == 0 {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		panic("gpu: Search on a closed index")
	}

	// Per-query terms (and normalised rows for Cosine) on the host: O(B d),
	// and validation with knn.CPU's errors.
	rows, dim := q.Rows, x.d
	qdata := q.Data[:rows*dim]
	x.hostTerm = grow(x.hostTerm, rows)
	if x.metric == knn.Cosine {
		x.hostQ = grow(x.hostQ, rows*dim)
		for i := 0; i < rows; i++ {
			row := qdata[i*dim : (i+1)*dim]
			if !knn.Normalise(x.hostQ[i*dim:(i+1)*dim], row) {
				return fmt.Errorf("gpu: Search: query row %d: %w", i, knn.CheckRow(row, math.Inf(1)))
			}
			x.hostTerm[i] = 1
		}
		qdata = x.hostQ[:rows*dim]
	} else {
		for i := 0; i < rows; i++ {
			row := qdata[i*dim : (i+1)*dim]
			sq := knn.SqNorm(row)
			if !(sq <= maxSqNorm) {
				return fmt.Errorf("gpu: Search: query row %d: %w", i, knn.CheckRow(row, maxSqNorm))
			}
			x.hostTerm[i] = float32(sq)
		}
	}
	if x.n == 0 {
		for i := range dst.Index {
			dst.Index[i], dst.Dist[i] = -1, float32(math.Inf(1))
		}
		return nil
	}

	d := x.dev
	release, err := d.bind()
	if err != nil {
		return err
	}
	defer release()
	bq, bc, err := x.plan(rows, k)
	if err != nil {
		return err
	}
	if err := x.reserve(bq, bc, k); err != nil {
		return err
	}
	alpha := -2.0
	if x.metric == knn.Cosine {
		alpha = -1
	}
	for r0 := 0; r0 < rows; r0 += bq {
		nr := min(bq, rows-r0)
		if err := upload(d, &x.q, qdata[r0*dim:(r0+nr)*dim]); err != nil {
			return err
		}
		if err := upload(d, &x.qterm, x.hostTerm[r0:r0+nr]); err != nil {
			return err
		}
		var qids dptr
		if qIDs != nil {
			if err := upload(d, &x.qids, qIDs[r0:r0+nr]); err != nil {
				return err
			}
			qids = x.qids.p
		}
		for c0 := 0; c0 < x.n; c0 += bc {
			nc := min(bc, x.n-c0)
			grid := [3]int{ceilDiv(nc, distTileN), ceilDiv(nr, distTileM), 1}
			if err := d.launch("knn_dist", grid, [3]int{distThreads, 1, 1}, 0, args(
				x.tile.p, x.q.p, x.data.p, x.qterm.p, x.bias.p, qids, x.ids.p,
				nr, nc, dim, c0, alpha)); err != nil {
				return fmt.Errorf("gpu: Search: knn_dist: %w", err)
			}
			first := 0
			if c0 == 0 {
				first = 1
			}
			if err := d.launch("knn_topk", [3]int{nr, 1, 1}, [3]int{topkThreads, 1, 1}, 0, args(
				x.bestD.p, x.bestI.p, x.tile.p, nr, nc, k, c0, first)); err != nil {
				return fmt.Errorf("gpu: Search: knn_topk: %w", err)
			}
		}
		if err := download(d, dst.Dist[r0*k:(r0+nr)*k], &x.bestD); err != nil {
			return fmt.Errorf("gpu: Search: copying results: %w", err)
		}
		if err := download(d, dst.Index[r0*k:(r0+nr)*k], &x.bestI); err != nil {
			return fmt.Errorf("gpu: Search: copying results: %w", err)
		}
	}
	return nil
}

// plan picks the query block bq and candidate block bc of a search of rows
// queries: as large as the options allow and the memory budget holds, the
// candidate block shrinking first when even 256 query rows do not fit.
func (x *index) plan(rows, k int) (bq, bc int, err error) {
	avail, err := budget(x.dev, x.opt.MemoryFraction)
	if err != nil {
		return 0, 0, err
	}
	// Buffers already held by this index count as available.
	for _, b := range []*buffer{&x.q, &x.qterm, &x.qids, &x.tile, &x.bestD, &x.bestI} {
		avail += int64(b.n)
	}
	bc = min(x.n, x.opt.CandidateBlock)
	perRow := func(bc int) int64 { return int64(4*x.d + 4 + 8 + 8*k + 4*bc) }
	// knn_dist's grid has ceil(bq/64) rows, at most 65535.
	want := min(rows, x.opt.QueryBlock, 65535*distTileM)
	for avail/perRow(bc) < int64(min(want, 256)) && bc > 4096 {
		bc /= 2
	}
	bq = int(min(avail/perRow(bc), int64(want)))
	if bq < 1 {
		return 0, 0, fmt.Errorf("gpu: Search: %d bytes of device memory cannot hold one query row (%d bytes)", avail, perRow(bc))
	}
	if bq > distTileM && bq < rows {
		bq -= bq % distTileM
	}
	return bq, bc, nil
}

func (x *index) reserve(bq, bc, k int) error {
	d := x.dev
	for _, r := range []struct {
		b *buffer
		n int
	}{
		{&x.q, 4 * bq * x.d}, {&x.qterm, 4 * bq}, {&x.qids, 8 * bq},
		{&x.tile, 4 * bq * bc}, {&x.bestD, 4 * bq * k}, {&x.bestI, 4 * bq * k},
	} {
		if err := r.b.reserve(d, r.n); err != nil {
			return fmt.Errorf("gpu: Search: %w", err)
		}
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
