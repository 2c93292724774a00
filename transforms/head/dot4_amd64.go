//go:build !noasm

package head

import "golang.org/x/sys/cpu"

// dot4AVX512 is dot4 in AVX-512 (dot4_amd64.s): eight lanes of a product
// row at a time, each lane's sum in its own register lane, added in the
// same order as the scalar loop. It multiplies and then adds (no fused
// multiply-add), so every lane rounds as the scalar code does: the same
// bits, only more of them at once.
//
//go:noescape
func dot4AVX512(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int)

// dot4AVX2Sums is dot4Sums in AVX2 (dot4_amd64.s) for CPUs without
// AVX-512: four lanes to a register, the columns in passes of up to twelve,
// multiply then add as dot4AVX512, the same bits.
//
//go:noescape
func dot4AVX2Sums(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int, flags int)

// dot4Kernel is dot4 where this CPU runs it (golang.org/x/sys/cpu also
// checks that the OS saves the vector registers), nil elsewhere. Without
// AVX-512 the products take dot4SumsKernel instead, which comes first.
var dot4Kernel = func() func(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int) {
	if cpu.X86.HasAVX512F {
		return dot4AVX512
	}
	return nil
}()

// dot4SumsKernel is dot4Sums where this CPU runs it and the products are
// faster for it: with AVX2 but not AVX-512 (dot4AVX512 takes sixteen
// columns in one pass, with its zero test in mask registers at no cost,
// and has no dot4Add), nil elsewhere.
var dot4SumsKernel = func() func(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n, flags int) {
	if !cpu.X86.HasAVX512F && cpu.X86.HasAVX2 {
		return dot4AVX2Sums
	}
	return nil
}()
