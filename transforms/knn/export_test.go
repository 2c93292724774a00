package knn

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// WithKernel returns s computing its tiles with the named micro-kernel, or
// with blas32 for "gonum", so that the tests run every kernel of the CPU.
func WithKernel(s CPU, name string) CPU {
	s.kernel = name
	return s
}

// KernelNames lists the micro-kernels this CPU runs, fastest first.
func KernelNames() []string {
	var names []string
	for _, k := range kernels() {
		names = append(names, k.name)
	}
	return names
}

// Gemm sets c = alpha a b^T (a m x k, b n x k, c m x n with row stride ldc)
// single-threaded with the search's SGEMM: the build's micro-kernel, packing
// b in blocks of DefaultCandidateBlock rows as the search does, or blas32.
// The benchmarks compare the search with it.
func Gemm(m, n, k int, alpha float32, a, b, c []float32, ldc int) {
	kn := tileKernel()
	if kn == nil {
		blas32.Gemm(blas.NoTrans, blas.Trans, alpha,
			blas32.General{Rows: m, Cols: k, Stride: k, Data: a},
			blas32.General{Rows: n, Cols: k, Stride: k, Data: b},
			0, blas32.General{Rows: m, Cols: n, Stride: ldc, Data: c})
		return
	}
	ap := make([]float32, packedLen(m, k, kn.mr))
	pack(ap, a, m, k, kn.mr, alpha)
	bp := make([]float32, packedLen(DefaultCandidateBlock, k, kn.nr))
	edge := make([]float32, kn.mr*kn.nr)
	for j0 := 0; j0 < n; j0 += DefaultCandidateBlock {
		nb := min(DefaultCandidateBlock, n-j0)
		pack(bp, b[j0*k:(j0+nb)*k], nb, k, kn.nr, 1)
		kn.gemm(m, nb, k, ap, bp, c[j0:], ldc, edge)
	}
}
