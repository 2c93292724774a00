//go:build !openblas || !cgo

package knn

// BLASImplementation names the SGEMM this build's search uses: the fastest
// Go-assembly micro-kernel the CPU runs (gemm.go), or gonum's pure-Go
// blas32 on CPUs without one. Either way the binary needs no cgo.
func BLASImplementation() string {
	if k := tileKernel(); k != nil {
		return "pure Go (" + k.name + " Go-assembly SGEMM micro-kernel)"
	}
	return "pure Go (gonum blas32)"
}

// tileKernel is the micro-kernel of the search's tiles: the fastest this
// CPU runs, chosen at run time, or nil for gonum's blas32.
func tileKernel() *kernel {
	if ks := kernels(); len(ks) > 0 {
		return ks[0]
	}
	return nil
}
