//go:build !amd64 || noasm

package knn

// kernels is empty here: without the amd64 assembly the search uses
// gonum's blas32.
func kernels() []*kernel { return nil }

// rowsKernel is nil here: IndexRows' searches pack their candidates.
func rowsKernel() *rowKernel { return nil }
