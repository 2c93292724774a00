//go:build !amd64 || noasm

package head

// asmKernels is empty here: no dot4 assembly is built.
func asmKernels() []namedKernel { return nil }
