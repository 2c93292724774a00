package knn

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Default tile shape of CPU, chosen by BenchmarkKNNBlocks on a 2-core
// AVX-512 Xeon with OpenBLAS (docs/perf/knn.md): a 512 x 1024 float32 tile
// is 2 MiB, one core's L2, so the top-K scan reads what the SGEMM just wrote
// from cache, and 512 query rows amortise the SGEMM's packing of each
// candidate block (+8% over 256 rows at d = 512). Search parallelises over
// query blocks, so a batch needs Workers x QueryBlock queries to use every
// core; set QueryBlock lower for small batches on many cores.
const (
	DefaultQueryBlock     = 512
	DefaultCandidateBlock = 1024
)

// maxSqNorm bounds squared norms so that ||q||^2 + ||p||^2 + 2|q.p| (at most
// 4 * maxSqNorm) cannot overflow float32: an infinite distance would be
// indistinguishable from padding.
const maxSqNorm = math.MaxFloat32 / 8

// CPU is the exact batched kNN Searcher for the CPU. The zero value is ready to
// use. Output does not depend on Workers. With a Go-assembly micro-kernel
// (the default build on AVX2 or AVX-512 CPUs) it does not depend on
// QueryBlock and CandidateBlock either; with blas32 (the OpenBLAS build, other
// CPUs) it does, through float32 rounding of the SGEMM (the tile shape
// changes the BLAS's summation order).
type CPU struct {
	// Workers is the number of goroutines a Search runs, each taking whole
	// query blocks. Optional, default runtime.GOMAXPROCS(0).
	Workers int
	// QueryBlock is the number of query rows per SGEMM tile. Optional, default
	// DefaultQueryBlock.
	QueryBlock int
	// CandidateBlock is the number of candidate rows per SGEMM tile. Optional,
	// default DefaultCandidateBlock.
	CandidateBlock int

	// kernel names the SGEMM of the tiles, for tests that run every kernel
	// on one machine: "" takes the build's default (tileKernel), "gonum"
	// forces blas32, anything else a micro-kernel of kernels() by name.
	kernel string
}

// Index prepares c (S x d) with one id per row. For Cosine it keeps a
// normalised copy of c; for L2 it keeps c.Data itself plus the S squared
// norms. It returns an error for non-finite values and, for L2, for squared
// norms too large for float32 distances (above MaxFloat32/8).
func (s CPU) Index(c Matrix, ids []int64, m Metric) (Index, error) {
	if c.Rows < 0 || c.Cols < 1 || len(c.Data) < c.Rows*c.Cols {
		return nil, fmt.Errorf("knn: CPU.Index: candidate matrix %dx%d with %d values", c.Rows, c.Cols, len(c.Data))
	}
	if c.Rows > math.MaxInt32 {
		return nil, fmt.Errorf("knn: CPU.Index: %d candidates, more than Result's int32 indices hold", c.Rows)
	}
	if len(ids) != c.Rows {
		return nil, fmt.Errorf("knn: CPU.Index: %d ids for %d candidates", len(ids), c.Rows)
	}
	if m != L2 && m != Cosine {
		return nil, fmt.Errorf("knn: CPU.Index: unknown metric %v", m)
	}
	s, kern, err := s.resolve()
	if err != nil {
		return nil, err
	}
	x := &cpuIndex{
		kern:   kern,
		opt:    s,
		metric: m,
		n:      c.Rows,
		d:      c.Cols,
		ids:    ids,
		bias:   make([]float32, c.Rows),
	}
	data := c.Data[:c.Rows*c.Cols]
	if m == Cosine {
		// Normalise once here so every search is a plain dot product; the
		// per-candidate term of 1 - cos is then 0 (bias stays zero).
		x.data = make([]float32, len(data))
		for i := 0; i < c.Rows; i++ {
			row := data[i*c.Cols : (i+1)*c.Cols]
			if !Normalise(x.data[i*c.Cols:(i+1)*c.Cols], row) {
				return nil, fmt.Errorf("knn: CPU.Index: candidate row %d: %w", i, CheckRow(row, math.Inf(1)))
			}
		}
	} else {
		x.data = data
		for i := 0; i < c.Rows; i++ {
			row := data[i*c.Cols : (i+1)*c.Cols]
			s := SqNorm(row)
			if !(s <= maxSqNorm) { // also catches NaN and Inf values
				return nil, fmt.Errorf("knn: CPU.Index: candidate row %d: %w", i, CheckRow(row, maxSqNorm))
			}
			x.bias[i] = float32(s)
		}
	}
	x.pool.New = func() any { return x.newWorkspace() }
	if kern != nil && c.Rows > 0 {
		x.packOnce = sync.OnceFunc(x.packAll)
	}
	return x, nil
}

// resolve fills s's defaults and finds its tile kernel (nil: blas32).
func (s CPU) resolve() (CPU, *kernel, error) {
	if s.Workers < 0 || s.QueryBlock < 0 || s.CandidateBlock < 0 {
		return s, nil, fmt.Errorf("knn: CPU.Index: negative option in %+v", s)
	}
	if s.Workers == 0 {
		s.Workers = runtime.GOMAXPROCS(0)
	}
	if s.QueryBlock == 0 {
		s.QueryBlock = DefaultQueryBlock
	}
	if s.CandidateBlock == 0 {
		s.CandidateBlock = DefaultCandidateBlock
	}
	kern := tileKernel()
	if s.kernel != "" {
		kern = nil
		for _, k := range kernels() {
			if k.name == s.kernel {
				kern = k
			}
		}
		if kern == nil && s.kernel != "gonum" {
			return s, nil, fmt.Errorf("knn: CPU.Index: no kernel %q on this CPU", s.kernel)
		}
	}
	return s, kern, nil
}

// RowNorms returns every row's squared norm as Index keeps it for L2
// (float32(SqNorm(row))), for IndexRows; ok is false where a row is not
// finite or too large for L2's distances (Index names it).
func RowNorms(x Matrix) (sq []float32, ok bool) {
	sq = make([]float32, x.Rows)
	for i := range sq {
		s := SqNorm(x.Row(i))
		if !(s <= maxSqNorm) {
			return nil, false
		}
		sq[i] = float32(s)
	}
	return sq, true
}

// IndexRows is Index (L2) over the rows of x that rows names, in that order,
// one id each, with sqNorm the RowNorms of x: the candidates are read where
// they are and their norms not summed again. A search over a few hundred
// rows of a large matrix for a few queries (an ivf partition's stored rows)
// is otherwise mostly their copy and their norms. Searches give the bits
// Index gives over a copy of those rows (with blas32, whose sums depend on
// where a block starts in memory, where the copy's blocks start at 64-byte
// multiples, as at the default block sizes).
func (s CPU) IndexRows(x Matrix, rows []int32, sqNorm []float32, ids []int64) (Index, error) {
	if x.Rows < 0 || x.Cols <= 0 || len(x.Data) < x.Rows*x.Cols || len(sqNorm) != x.Rows {
		return nil, fmt.Errorf("knn: CPU.IndexRows: matrix %dx%d with %d values and %d norms", x.Rows, x.Cols, len(x.Data), len(sqNorm))
	}
	if len(ids) != len(rows) {
		return nil, fmt.Errorf("knn: CPU.IndexRows: %d ids for %d rows", len(ids), len(rows))
	}
	s, kern, err := s.resolve()
	if err != nil {
		return nil, err
	}
	x2 := &cpuIndex{kern: kern, opt: s, metric: L2, n: len(rows), d: x.Cols, ids: ids,
		src: x.Data, rows: rows, bias: make([]float32, len(rows))}
	if kern != nil {
		x2.rk = rowsKernel()
	}
	for i, r := range rows {
		if r < 0 || int(r) >= x.Rows {
			return nil, fmt.Errorf("knn: CPU.IndexRows: row %d outside the matrix of %d rows", r, x.Rows)
		}
		if v := sqNorm[r]; !(float64(v) <= maxSqNorm) {
			return nil, fmt.Errorf("knn: CPU.IndexRows: candidate row %d: %w", i, CheckRow(x.Row(int(r)), maxSqNorm))
		}
		x2.bias[i] = sqNorm[r]
	}
	x2.pool.New = func() any { return x2.newWorkspace() }
	return x2, nil
}

// cpuIndex is the Index of CPU. It is safe for concurrent Searches: each
// Search draws its workspaces from pool.
type cpuIndex struct {
	// kern is the micro-kernel that computes the tiles, or nil for
	// blas32.Gemm (the OpenBLAS build, and CPUs without a kernel).
	kern   *kernel
	opt    CPU
	metric Metric
	n, d   int
	ids    []int64
	data   []float32 // S x d, normalised for Cosine
	// src and rows are IndexRows' candidates: row i is src's row rows[i]
	// (data nil).
	src  []float32
	rows []int32
	// rk, where the CPU runs it, computes IndexRows' tiles from the rows in
	// place (with the queries packed) instead of packing each candidate
	// block: the same bits as kern.
	rk *rowKernel
	// bias is the per-candidate term of the distance: ||p||^2 for L2, 0 for
	// Cosine (where the per-query term is the 1 of 1 - cos).
	bias []float32
	pool sync.Pool
	// bpacked is every candidate block packed for kern, once (packAll), for
	// an index searched a second time or with more than one query block:
	// each query block packed every candidate block again, N / QueryBlock
	// copies of the candidates per search of N queries. It costs a copy of
	// the candidates for the index's life. nil until then.
	bpacked  []float32
	packOnce func() // packAll, once (sync.OnceFunc, made with the index)
	searches atomic.Int64
}

// packAll packs every candidate block into bpacked, block b at
// b * packedLen(CandidateBlock, d, nr), as searchBlock would pack it.
func (x *cpuIndex) packAll() {
	kn, cb := x.kern, x.opt.CandidateBlock
	full := packedLen(cb, x.d, kn.nr)
	last := x.n - (x.n-1)/cb*cb
	buf := make([]float32, (x.n-1)/cb*full+packedLen(last, x.d, kn.nr))
	for c0 := 0; c0 < x.n; c0 += cb {
		cols := min(cb, x.n-c0)
		pack(buf[c0/cb*full:], x.data[c0*x.d:(c0+cols)*x.d], cols, x.d, kn.nr, 1)
	}
	x.bpacked = buf
}

// workspace is one worker's scratch: the SGEMM tile, the query block's
// per-row distance terms, a normalised copy of the query block (Cosine), the
// fill count of each query's top-K list and, with a micro-kernel, the packed
// query block, the packed candidate block and the kernel's edge tile.
type workspace struct {
	tile  []float32
	qterm []float32
	qbuf  []float32
	fill  []int
	apack []float32
	bpack []float32
	edge  []float32
	// gather holds a candidate block of IndexRows for blas32.
	gather []float32
	// qpack and tileT are rk's packed query block and its tile, candidates
	// by queries.
	qpack, tileT []float32
}

func (x *cpuIndex) newWorkspace() any {
	qb, cb := x.opt.QueryBlock, x.opt.CandidateBlock
	cb = min(cb, max(x.n, 1))
	w := &workspace{
		tile:  make([]float32, qb*cb),
		qterm: make([]float32, qb),
		fill:  make([]int, qb),
	}
	if x.metric == Cosine {
		w.qbuf = make([]float32, qb*x.d)
	}
	if rk := x.rk; rk != nil {
		w.qpack = make([]float32, packedLen(qb, x.d, rk.nr))
		w.tileT = make([]float32, roundUp(cb, rk.mr)*roundUp(qb, rk.nr))
	} else if kn := x.kern; kn != nil {
		w.apack = make([]float32, packedLen(qb, x.d, kn.mr))
		w.bpack = make([]float32, packedLen(cb, x.d, kn.nr))
		w.edge = make([]float32, kn.mr*kn.nr)
	} else if x.rows != nil {
		w.gather = make([]float32, cb*x.d)
	}
	return w
}

// Close releases nothing: the CPU index holds only Go memory.
func (x *cpuIndex) Close() error { return nil }

// Search implements Index. A nil qIDs excludes nothing. A query row that is
// not finite or, for L2, whose squared norm exceeds MaxFloat32/8 is an error
// (the lowest such row is reported, and dst's contents are then unspecified).
// Work is split by query block, so a batch of fewer than Workers*QueryBlock
// queries leaves some cores idle.
func (x *cpuIndex) Search(dst *Result, q Matrix, qIDs []int64, k int) error {
	if q.Cols != x.d {
		panic(fmt.Sprintf("knn: Search: query dimension %d, index dimension %d", q.Cols, x.d))
	}
	if q.Rows < 0 || len(q.Data) < q.Rows*q.Cols {
		panic(fmt.Sprintf("knn: Search: query matrix %dx%d with %d values", q.Rows, q.Cols, len(q.Data)))
	}
	if qIDs != nil && len(qIDs) != q.Rows {
		panic(fmt.Sprintf("knn: Search: %d query ids for %d queries", len(qIDs), q.Rows))
	}
	if k < 0 {
		panic(fmt.Sprintf("knn: Search: negative k %d", k))
	}
	dst.Reset(q.Rows, k)
	if k == 0 || q.Rows == 0 {
		return nil
	}
	blocks := (q.Rows + x.opt.QueryBlock - 1) / x.opt.QueryBlock
	workers := min(x.opt.Workers, blocks)
	var packed []float32
	if x.packOnce != nil {
		if n := x.searches.Add(1); blocks > 1 || n > 1 {
			x.packOnce()
			packed = x.bpacked
		}
	}

	// bad is the lowest invalid query row seen by any worker, so the error
	// reported does not depend on scheduling.
	bad := int64(math.MaxInt64)
	if workers <= 1 {
		w := x.pool.Get().(*workspace)
		for b := 0; b < blocks; b++ {
			bad = min(bad, x.searchBlock(w, dst, q, qIDs, b, packed))
		}
		x.pool.Put(w)
	} else {
		var next, shared atomic.Int64
		shared.Store(math.MaxInt64)
		var wg sync.WaitGroup
		packed := packed // the goroutines' copy: the one above stays on the stack
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := x.pool.Get().(*workspace)
				defer x.pool.Put(w)
				for {
					b := int(next.Add(1) - 1)
					if b >= blocks {
						return
					}
					setMin(&shared, x.searchBlock(w, dst, q, qIDs, b, packed))
				}
			}()
		}
		wg.Wait()
		bad = shared.Load()
	}
	if r := bad; r != math.MaxInt64 {
		limit := maxSqNorm
		if x.metric == Cosine {
			limit = math.Inf(1)
		}
		return fmt.Errorf("knn: Search: query row %d: %w", r, CheckRow(q.Row(int(r)), limit))
	}
	return nil
}

// searchBlock writes the top-K lists of query block b into dst. Each query
// row is handled by exactly one call, which scans the candidates in index
// order; that is what makes the output independent of the worker count and
// lets strict comparisons implement the lower-index tie-break. packed is
// bpacked where the search uses it (nil: each candidate block is packed
// here). It returns the lowest invalid query row of the block, or MaxInt64.
func (x *cpuIndex) searchBlock(w *workspace, dst *Result, q Matrix, qIDs []int64, b int, packed []float32) (bad int64) {
	d, k := x.d, dst.K
	r0 := b * x.opt.QueryBlock
	rows := min(x.opt.QueryBlock, q.Rows-r0)
	qdata := q.Data[r0*d : (r0+rows)*d]
	bad = math.MaxInt64

	// Per-query term and, for Cosine, the normalised queries.
	qterm := w.qterm[:rows]
	alpha := float32(-2)
	if x.metric == Cosine {
		alpha = -1
		for i := range rows {
			if !Normalise(w.qbuf[i*d:(i+1)*d], qdata[i*d:(i+1)*d]) {
				bad = min(bad, int64(r0+i))
			}
			qterm[i] = 1
		}
		qdata = w.qbuf[:rows*d]
	} else {
		for i := range rows {
			s := SqNorm(qdata[i*d : (i+1)*d])
			if !(s <= maxSqNorm) { // also catches NaN and Inf values
				bad = min(bad, int64(r0+i))
			}
			qterm[i] = float32(s)
		}
	}
	fill := w.fill[:rows]
	clear(fill)

	a := blas32.General{Rows: rows, Cols: d, Stride: d, Data: qdata}
	kn, rk := x.kern, x.rk
	qpad := 0
	if rk != nil {
		pack(w.qpack, qdata, rows, d, rk.nr, alpha)
		qpad = roundUp(rows, rk.nr)
	} else if kn != nil {
		// The query block is packed once (times alpha, exact: a power of
		// two) for all its candidate blocks.
		pack(w.apack, qdata, rows, d, kn.mr, alpha)
	}
	for c0 := 0; c0 < x.n; c0 += x.opt.CandidateBlock {
		cols := min(x.opt.CandidateBlock, x.n-c0)
		var pdata []float32
		if x.rows == nil {
			pdata = x.data[c0*d : (c0+cols)*d]
		}
		t := blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: w.tile[:rows*cols]}
		// tile = alpha * Q P^T: -2 q.p for L2, -cos for Cosine.
		if rk != nil {
			rk.gemm(cols, rows, d, x.src, x.rows[c0:c0+cols], w.qpack, w.tileT, qpad)
			for i := range rows {
				trow := t.Data[i*cols : (i+1)*cols]
				for j := range trow {
					trow[j] = w.tileT[j*qpad+i]
				}
			}
		} else if kn != nil {
			bp := w.bpack
			switch {
			case packed != nil:
				off := c0 / x.opt.CandidateBlock * packedLen(x.opt.CandidateBlock, d, kn.nr)
				bp = packed[off : off+packedLen(cols, d, kn.nr)]
			case x.rows != nil:
				packRows(bp, x.src, x.rows[c0:c0+cols], d, kn.nr)
			default:
				pack(bp, pdata, cols, d, kn.nr, 1)
			}
			kn.gemm(rows, cols, d, w.apack, bp, t.Data, cols, w.edge)
		} else {
			if x.rows != nil {
				pdata = w.gather[:cols*d]
				for i, r := range x.rows[c0 : c0+cols] {
					copy(pdata[i*d:(i+1)*d], x.src[int(r)*d:(int(r)+1)*d])
				}
			}
			p := blas32.General{Rows: cols, Cols: d, Stride: d, Data: pdata}
			blas32.Gemm(blas.NoTrans, blas.Trans, alpha, a, p, 0, t)
		}
		bias := x.bias[c0 : c0+cols]
		for i := range rows {
			var qid int64
			self := qIDs != nil
			if self {
				qid = qIDs[r0+i]
			}
			row := r0 + i
			fill[i] = scanTile(
				dst.Dist[row*k:(row+1)*k], dst.Index[row*k:(row+1)*k], fill[i],
				t.Data[i*cols:(i+1)*cols], bias, qterm[i], int32(c0),
				x.ids[c0:c0+cols], self, qid)
		}
	}
	// Pad lists that found fewer than k eligible candidates.
	for i := range rows {
		row := r0 + i
		for j := fill[i]; j < k; j++ {
			dst.Dist[row*k+j] = float32(math.Inf(1))
			dst.Index[row*k+j] = -1
		}
	}
	return bad
}

// setMin lowers v to r if r is smaller.
func setMin(v *atomic.Int64, r int64) {
	for {
		cur := v.Load()
		if r >= cur || v.CompareAndSwap(cur, r) {
			return
		}
	}
}

// CheckRow, SqNorm and Normalise are exported so that gpu.Searcher checks,
// measures and normalises rows exactly as CPU does (one copy of each rule).
//
// CheckRow reports why a vector cannot be searched: a non-finite value, or a
// squared norm above limit (for L2, large enough to overflow a distance).
func CheckRow(v []float32, limit float64) error {
	var s float64
	for j, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("column %d is %v", j, x)
		}
		s += float64(x) * float64(x)
	}
	if s > limit {
		return fmt.Errorf("squared norm %g exceeds %g", s, limit)
	}
	return nil
}

// SqNorm returns ||v||^2, accumulated in float64 so that the norms, which
// enter every distance, carry no more error than one float32 rounding. It is
// NaN or +Inf when v holds a NaN or an infinity.
func SqNorm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return s
}

// Normalise writes v/||v|| to dst and reports whether v is finite. A zero
// vector stays zero, so that its cosine distance to
// everything is 1 - 0 = 1.
func Normalise(dst, v []float32) bool {
	s := SqNorm(v)
	if s == 0 || !(s <= math.MaxFloat64) {
		clear(dst[:len(v)])
		return s == 0
	}
	inv := 1 / math.Sqrt(s)
	for j, x := range v {
		dst[j] = float32(float64(x) * inv)
	}
	return true
}

// roundUp is n rounded up to a multiple of r.
func roundUp(n, r int) int { return (n + r - 1) / r * r }
