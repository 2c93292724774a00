package evaluate

import (
	"fmt"
	"math"

	"github.com/relabel/relabel/internal/pool"
)

// KNNVote is the kNN baseline of the data README: every item gets the
// majority label among the given labels of its k nearest other items
// (squared L2, on z-scored features when standardise), ties broken towards
// the lowest class. An item with no other item to vote keeps its label.
// features is row-major n x d; labels (given, in [0,C)) has n entries.
func KNNVote(features []float32, n, d int, labels []int32, C, k int, standardise bool) []int32 {
	if len(labels) != n {
		panic(fmt.Sprintf("evaluate: KNNVote: %d labels for %d items", len(labels), n))
	}
	nb := Neighbours(features, n, d, k, standardise)
	out := make([]int32, n)
	count := make([]int32, C)
	for i := range n {
		clear(count)
		for _, j := range nb[i*k : (i+1)*k] {
			if j >= 0 {
				l := labels[j]
				if l < 0 || int(l) >= C {
					panic(fmt.Sprintf("evaluate: KNNVote: item %d: label %d outside [0,%d)", j, l, C))
				}
				count[l]++
			}
		}
		out[i] = argmax(count)
		if out[i] < 0 {
			out[i] = labels[i]
		}
	}
	return out
}

// Standardise returns a copy of the row-major n x d matrix x with every column
// shifted to mean 0 and scaled to standard deviation 1 (population, as
// scikit-learn's StandardScaler). A constant column is only centred.
func Standardise(x []float32, n, d int) []float32 {
	checkMatrix("Standardise", x, n, d)
	mean, scale := columnStats(x, n, d)
	out := make([]float32, len(x))
	for i := range n {
		for c := range d {
			out[i*d+c] = float32((float64(x[i*d+c]) - mean[c]) * scale[c])
		}
	}
	return out
}

func checkMatrix(fn string, x []float32, n, d int) {
	if n < 0 || d < 1 || len(x) != n*d {
		panic(fmt.Sprintf("evaluate: %s: %d values for %d x %d", fn, len(x), n, d))
	}
}

// columnStats returns per-column means and 1/std (1 where std is 0), in two
// float64 passes: features on raw scales lose digits in one float32 pass.
func columnStats(x []float32, n, d int) (mean, scale []float64) {
	mean, scale = make([]float64, d), make([]float64, d)
	for i := range n {
		for c, v := range x[i*d : (i+1)*d] {
			mean[c] += float64(v)
		}
	}
	for c := range mean {
		mean[c] /= float64(max(n, 1))
	}
	for i := range n {
		for c, v := range x[i*d : (i+1)*d] {
			dv := float64(v) - mean[c]
			scale[c] += dv * dv
		}
	}
	for c, ss := range scale {
		sd := math.Sqrt(ss / float64(max(n, 1)))
		scale[c] = 1
		if sd > 0 {
			scale[c] = 1 / sd
		}
	}
	return mean, scale
}

// tileRows is the side of the square tiles the pair matrix is cut into: two
// 256 x d blocks stay in L2 for the d of embeddings (up to a few hundred).
// It is a multiple of the micro-kernel's 4 rows.
const tileRows = 256

// Neighbours returns the k nearest other items of every item by squared L2
// distance, exactly (brute force): item i's are at [i*k:(i+1)*k], nearest
// first, ties towards the lower index, padded with -1 when n-1 < k. With
// standardise the features are z-scored first (Standardise).
//
// Distances are |x|^2 + |y|^2 - 2 x.y in float32 over centred features (the
// centring costs nothing and keeps the cancellation small), computed once per
// unordered pair: the n x n pair matrix is cut into tiles, only tiles on or
// above the diagonal are computed, and each feeds both its rows' and its
// columns' candidate lists. Goroutines (GOMAXPROCS, internal/pool) take tiles
// from a shared counter and keep private lists, merged at the end; every pair's distance
// comes from the same code whichever goroutine computes it, so the result
// does not depend on scheduling.
func Neighbours(features []float32, n, d, k int, standardise bool) []int32 {
	checkMatrix("Neighbours", features, n, d)
	if k < 1 {
		panic(fmt.Sprintf("evaluate: Neighbours: k = %d", k))
	}
	// Pad to a multiple of 4 rows with zero rows, so the micro-kernel never
	// sees a ragged edge; padded columns are skipped when scanning.
	np := (n + 3) &^ 3
	x := make([]float32, np*d)
	mean, scale := columnStats(features, n, d)
	if !standardise {
		for c := range scale {
			scale[c] = 1
		}
	}
	sq := make([]float32, np)
	for i := range n {
		var s float64
		for c := range d {
			v := float32((float64(features[i*d+c]) - mean[c]) * scale[c])
			x[i*d+c] = v
			s += float64(v) * float64(v)
		}
		sq[i] = float32(s)
	}

	nt := (np + tileRows - 1) / tileRows
	ntasks := nt * (nt + 1) / 2
	type worker struct {
		l   *topk
		buf []float32
	}
	ws := pool.Workspaces(ntasks, 0, func() *worker {
		return &worker{l: newTopK(n, k), buf: make([]float32, 4*tileRows)}
	}, func(w *worker, t int) {
		ti, tj := triangle(t, nt)
		w.l.tile(w.buf, x, sq, n, np, d, ti*tileRows, tj*tileRows)
	})
	out := ws[0].l
	for _, w := range ws[1:] {
		out.merge(w.l)
	}
	return out.idx
}

// triangle maps task t to the tile (i, j), j >= i, of an nt x nt grid,
// row by row.
func triangle(t, nt int) (i, j int) {
	for t >= nt-i {
		t -= nt - i
		i++
	}
	return i, i + t
}

// topk holds, for each of n items, its k best candidates sorted by
// (distance, index); the last entry is the one to beat.
type topk struct {
	k    int
	dist []float32
	idx  []int32
}

func newTopK(n, k int) *topk {
	l := &topk{k: k, dist: make([]float32, n*k), idx: make([]int32, n*k)}
	for i := range l.dist {
		l.dist[i] = float32(math.Inf(1))
		l.idx[i] = -1
	}
	return l
}

// push offers candidate j at distance v to item i.
func (l *topk) push(i int, v float32, j int32) {
	dist, idx := l.dist[i*l.k:(i+1)*l.k], l.idx[i*l.k:(i+1)*l.k]
	p := l.k - 1
	if !less(v, j, dist[p], idx[p]) {
		return
	}
	for p > 0 && less(v, j, dist[p-1], idx[p-1]) {
		dist[p], idx[p] = dist[p-1], idx[p-1]
		p--
	}
	dist[p], idx[p] = v, j
}

// less orders candidates by distance then index; an empty slot (index -1,
// distance +Inf) loses to every real candidate, and NaN distances never win.
func less(v float32, j int32, w float32, i int32) bool {
	if v != w {
		return v < w
	}
	return i < 0 || j < i
}

// merge folds another goroutine's candidates into l.
func (l *topk) merge(o *topk) {
	for e, j := range o.idx {
		if j >= 0 {
			l.push(e/l.k, o.dist[e], j)
		}
	}
}

// tile computes the distances between rows [r0, r0+tileRows) and columns
// [c0, c0+tileRows) (r0 <= c0) and offers each pair to both its items, in
// strips of 4 rows so that buf stays in L1.
func (l *topk) tile(buf, x, sq []float32, n, np, d, r0, c0 int) {
	r1, c1 := min(r0+tileRows, np), min(c0+tileRows, np)
	nc := c1 - c0
	cn := min(c1, n) // columns beyond n are padding
	for r := r0; r < r1 && r < n; r += 4 {
		dot4x2(buf[:4*nc], nc, x[r*d:(r+4)*d], x[c0*d:c1*d], d)
		for a := range 4 {
			i := r + a
			if i >= n {
				break
			}
			j0 := c0
			if r0 == c0 {
				j0 = i + 1 // diagonal tile: each unordered pair once, never self
			}
			row := buf[a*nc : (a+1)*nc]
			sqi := sq[i]
			// Most pairs lose to both items' current k-th candidate: test that
			// inline (<= lets push break ties by index) before calling push.
			last := l.k - 1
			worst := l.dist[i*l.k+last]
			for j := j0; j < cn; j++ {
				v := sqi + sq[j] - 2*row[j-c0]
				if v < 0 {
					v = 0 // cancellation on (near-)duplicates
				}
				if v <= worst {
					l.push(i, v, int32(j))
					worst = l.dist[i*l.k+last]
				}
				if v <= l.dist[j*l.k+last] {
					l.push(j, v, int32(i))
				}
			}
		}
	}
}

// dot4x2 writes the dot products of the 4 rows of a (4 x d) with the nc rows
// of b (nc x d, nc even) to dst[r*nc+c]. The 4 x 2 register block does 8
// multiply-adds per 6 loads, the best of the blockings measured in pure Go
// (4x4 and 4x3 spill accumulators); each dot product is a single accumulator
// summed in order, so its value does not depend on where the pair falls.
func dot4x2(dst []float32, nc int, a, b []float32, d int) {
	a0 := a[0*d : 1*d]
	a1 := a[1*d : 2*d]
	a2 := a[2*d : 3*d]
	a3 := a[3*d : 4*d]
	a1, a2, a3 = a1[:len(a0)], a2[:len(a0)], a3[:len(a0)]
	d0, d1, d2, d3 := dst[0*nc:1*nc], dst[1*nc:2*nc], dst[2*nc:3*nc], dst[3*nc:4*nc]
	for c := 0; c+2 <= nc; c += 2 {
		b0 := b[c*d : (c+1)*d]
		b1 := b[(c+1)*d : (c+2)*d]
		b0, b1 = b0[:len(a0)], b1[:len(a0)]
		var s00, s01, s10, s11, s20, s21, s30, s31 float32
		for k, x := range a0 {
			y0, y1 := b0[k], b1[k]
			s00 += x * y0
			s01 += x * y1
			x = a1[k]
			s10 += x * y0
			s11 += x * y1
			x = a2[k]
			s20 += x * y0
			s21 += x * y1
			x = a3[k]
			s30 += x * y0
			s31 += x * y1
		}
		d0[c], d0[c+1] = s00, s01
		d1[c], d1[c+1] = s10, s11
		d2[c], d2[c+1] = s20, s21
		d3[c], d3[c+1] = s30, s31
	}
}
