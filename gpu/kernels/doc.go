// Package kernels holds the CUDA C kernels of the gpu package (knn.cu, llc.cu)
// and, under build tag cuda, their PTX (compiled by ptx.sh, embedded with
// go:embed). Under build tag cudaemu it also compiles the same sources as host
// C++ into a CPU emulator, so the gpu package's tests can run the real kernel
// code on machines without a GPU. See README.md for how the PTX is made.
package kernels
