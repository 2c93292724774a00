//go:build !noasm

package head

import "golang.org/x/sys/cpu"

// asmKernels lists the dot4 assembly kernels this CPU runs, for the tests
// to compare with the Go loops and with each other: on an AVX-512 machine
// both, so that the AVX2 kernel (and its dot4Sums, which the products use
// only without AVX-512) is checked there too.
func asmKernels() []namedKernel {
	var ks []namedKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, namedKernel{"dot4AVX512", dot4AVX512, nil})
	}
	if cpu.X86.HasAVX2 {
		ks = append(ks, namedKernel{"dot4AVX2", dot4AVX2, dot4AVX2Sums})
	}
	return ks
}

// dot4AVX2 is dot4AVX2Sums without flags: dot4AVX512's contract, so that
// the tests hold both kernels to it.
func dot4AVX2(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int) {
	dot4AVX2Sums(a, as, ai, b, bs, out, os, steps, n, 0)
}
