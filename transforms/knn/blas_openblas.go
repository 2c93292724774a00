//go:build openblas && cgo

package knn

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/netlib/blas/netlib"

	"github.com/relabel/relabel/transforms/knn/internal/openblas"
)

// init routes every blas32 call in the binary to OpenBLAS through netlib's
// cblas bindings. OpenBLAS is made single-threaded because Search already
// runs one goroutine per core on separate query blocks; a multi-threaded
// OpenBLAS under concurrent callers oversubscribes the cores.
func init() {
	blas32.Use(netlib.Implementation{})
	openblas.SetNumThreads(1)
}

// BLASImplementation names the SGEMM this build uses: OpenBLAS through
// gonum.org/v1/netlib (cgo), with OpenBLAS's build configuration.
func BLASImplementation() string {
	return "OpenBLAS via gonum.org/v1/netlib (cgo): " + openblas.Config()
}

// tileKernel is nil: this build computes the search's tiles with OpenBLAS.
func tileKernel() *kernel { return nil }
