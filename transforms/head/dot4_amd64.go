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

// dot4Kernel is dot4 where this CPU runs it (golang.org/x/sys/cpu also
// checks that the OS saves the vector registers), nil elsewhere.
var dot4Kernel = func() func(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int) {
	if cpu.X86.HasAVX512F {
		return dot4AVX512
	}
	return nil
}()
