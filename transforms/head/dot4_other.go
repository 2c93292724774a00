//go:build !amd64 || noasm

package head

// dot4Kernel and dot4SumsKernel are nil here: without the amd64 assembly
// the products run the Go loops.
var (
	dot4Kernel     func(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int)
	dot4SumsKernel func(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n, flags int)
)
