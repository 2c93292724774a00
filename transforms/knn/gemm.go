package knn

// kernel is a register-blocked float32 GEMM micro-kernel with the packing
// and loop nest around it (the GotoBLAS/BLIS scheme), used by the default
// (pure-Go, CGO_ENABLED=0-compatible) build instead of gonum's blas32.Sgemm,
// which runs at a tenth of OpenBLAS's speed here (docs/perf/knn.md).
//
// Libraries looked at before writing this: gonum's blas/gonum Sgemm (what
// blas32 does without cgo: a blocked loop over its SSE axpy, about 10
// GFLOP/s on 2 cores); gomlx's simplego/packgemm (part of an ML framework
// with a large dependency tree, and its fast path needs the Go highway or
// GOEXPERIMENT=simd work); Go 1.26's simd/archsimd (behind GOEXPERIMENT=simd,
// so not in a default build). None is a small maintained pure-Go SGEMM, so the
// micro-kernels are Go assembly (gemm_amd64.s), chosen at run time by CPU
// feature (kernels in gemm_amd64.go), with gonum's blas32 as the fallback on
// every other CPU.
//
// fn computes, for i < mr and j < nr,
//
//	c[i*ldc+j] = (load ? c[i*ldc+j] : 0) + sum over p < kc of a[p*mr+i]*b[p*nr+j]
//
// as one fused multiply-add per p, in increasing p. Every element of the
// product is therefore the same FMA chain whatever the kernel, tile shape or
// k blocking: results depend only on the inputs (and alpha, folded into the
// packed A), which keeps the search's output independent of QueryBlock and
// CandidateBlock on these kernels.
type kernel struct {
	name   string
	mr, nr int
	fn     func(kc int, a, b, c []float32, ldc int, load bool)
}

// kcBlock is the depth of one pass of the micro-kernel. A packed B panel of
// kcBlock x nr floats (32 KiB at nr = 32) stays in L1 while the kernel walks
// the A panels, which stay in L2; d <= kcBlock (the common embedding widths)
// is a single pass.
const kcBlock = 256

// packedLen is the length of a packed operand of n rows of depth k in
// panels of r rows (the last one zero-padded).
func packedLen(n, k, r int) int { return roundUp(n, r) * k }

// pack copies the m x k row-major matrix a (row stride k), times alpha, into
// dst as panels of r rows: row i, column p lands at (i/r)*r*k + p*r + i%r, so
// that the micro-kernel reads r consecutive values per step of p. Rows past m
// in the last panel are zero.
func pack(dst, a []float32, m, k, r int, alpha float32) {
	a = a[:m*k]
	packWith(dst, m, k, r, alpha, func(i int) []float32 { return a[i*k : (i+1)*k] })
}

// packRows is pack (alpha 1) of the matrix whose row i is src's row rows[i]
// (row stride k): the same panels as packing a copy of those rows.
func packRows(dst, src []float32, rows []int32, k, r int) {
	packWith(dst, len(rows), k, r, 1, func(i int) []float32 { return src[int(rows[i])*k : (int(rows[i])+1)*k] })
}

// packWith is pack of the m rows that row returns.
func packWith(dst []float32, m, k, r int, alpha float32, row func(i int) []float32) {
	dst = dst[:packedLen(m, k, r)]
	for i0 := 0; i0 < m; i0 += r {
		panel := dst[i0*k : i0*k+r*k]
		rows := min(r, m-i0)
		for i := range rows {
			for p, v := range row(i0 + i) {
				panel[p*r+i] = alpha * v
			}
		}
		for i := rows; i < r; i++ {
			for p := range k {
				panel[p*r+i] = 0
			}
		}
	}
}

// gemm sets c[i*ldc+j] = sum over p < k of A[i,p]*B[j,p] for i < m, j < n,
// from ap and bp packed by pack with kn.mr and kn.nr. edge is scratch of
// mr*nr floats for the partial tiles at the bottom and right edges.
func (kn *kernel) gemm(m, n, k int, ap, bp, c []float32, ldc int, edge []float32) {
	mr, nr := kn.mr, kn.nr
	if k == 0 {
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
		return
	}
	edge = edge[:mr*nr]
	for k0 := 0; k0 < k; k0 += kcBlock {
		kc := min(kcBlock, k-k0)
		load := k0 > 0
		for j0 := 0; j0 < n; j0 += nr {
			nb := min(nr, n-j0)
			b := bp[j0*k+k0*nr : j0*k+(k0+kc)*nr]
			for i0 := 0; i0 < m; i0 += mr {
				mb := min(mr, m-i0)
				a := ap[i0*k+k0*mr : i0*k+(k0+kc)*mr]
				off := i0*ldc + j0
				if mb == mr && nb == nr {
					kn.fn(kc, a, b, c[off:off+(mr-1)*ldc+nr], ldc, load)
					continue
				}
				if load {
					for i := range mb {
						copy(edge[i*nr:i*nr+nb], c[off+i*ldc:off+i*ldc+nb])
					}
				}
				kn.fn(kc, a, b, edge, nr, load)
				for i := range mb {
					copy(c[off+i*ldc:off+i*ldc+nb], edge[i*nr:i*nr+nb])
				}
			}
		}
	}
}

// rowKernel is a micro-kernel whose A operand is mr rows read where they
// are, each from its own offset of one slice, not a packed panel: fn
// computes, for i < mr and j < nr,
//
//	c[i*ldc+j] = sum over p < kc of a[off[i]+p]*b[p*nr+j]
//
// as one fused multiply-add per p in increasing p: the chain every kernel
// computes, so the same bits. It is for IndexRows' candidates searched by a
// few queries (an ivf partition's stored rows): packing a candidate block
// is one pass over its rows per search, as much work as the products of a
// dozen queries, while here the few queries are packed instead.
//
// half is fn over the first nr/2 columns only (c's others untouched), for
// a panel of nr/2 queries or fewer: a partition's few queries often fill
// less than half of one.
type rowKernel struct {
	mr, nr   int
	fn, half func(kc int, a []float32, off *[6]int, b, c []float32, ldc int)
}

// gemm sets c[j*ldc+i] = sum over p < k of src[rows[j]*k+p]*B[i,p] for
// j < n (candidates, rows of src of k values) and i < m (queries, packed
// in bp by pack with rk.nr), every tile whole: c holds n rounded up to mr
// rows (the rows past n repeat row rows[n-1]) of ldc >= m rounded up to nr;
// its columns past m are left unspecified.
func (rk *rowKernel) gemm(n, m, k int, src []float32, rows []int32, bp, c []float32, ldc int) {
	mr, nr := rk.mr, rk.nr
	var off [6]int
	for j0 := 0; j0 < n; j0 += mr {
		for t := range mr {
			off[t] = int(rows[min(j0+t, n-1)]) * k
		}
		for i0 := 0; i0 < m; i0 += nr {
			fn := rk.fn
			if m-i0 <= nr/2 {
				fn = rk.half
			}
			fn(k, src, &off, bp[i0*k:(i0+nr)*k], c[j0*ldc+i0:(j0+mr-1)*ldc+i0+nr], ldc)
		}
	}
}
