//go:build !noasm

package knn

import "golang.org/x/sys/cpu"

// The micro-kernels of gemm_amd64.s; see kernel for what they compute. They
// read kc*mr values of a and kc*nr of b, and c at i*ldc+j for i < mr, j < nr;
// the caller (kernel.gemm) slices its arguments to exactly that.
//
//go:noescape
func sgemmAVX512(kc int, a, b, c []float32, ldc int, load bool)

//go:noescape
func sgemmAVX2(kc int, a, b, c []float32, ldc int, load bool)

//go:noescape
func sgemmAVX2Rows(kc int, a []float32, off *[6]int, b, c []float32, ldc int)

//go:noescape
func sgemmAVX2Rows8(kc int, a []float32, off *[6]int, b, c []float32, ldc int)

var (
	avx512Kernel = &kernel{name: "AVX-512 12x32", mr: 12, nr: 32, fn: sgemmAVX512}
	avx2Kernel   = &kernel{name: "AVX2+FMA 6x16", mr: 6, nr: 16, fn: sgemmAVX2}
)

// kernels lists the micro-kernels this CPU can run, fastest first, checked
// at run time (golang.org/x/sys/cpu also checks that the OS saves the
// vector registers), so one binary runs everywhere.
func kernels() []*kernel {
	var ks []*kernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return ks
}

// rowsKernel is the kernel that reads A's rows in place (rowKernel), where
// this CPU runs it.
func rowsKernel() *rowKernel {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		return &rowKernel{mr: 6, nr: 16, fn: sgemmAVX2Rows, half: sgemmAVX2Rows8}
	}
	return nil
}
