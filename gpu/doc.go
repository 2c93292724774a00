// Package gpu is relabel's CUDA backend: a knn.Searcher (Searcher) and an
// llc.Coder (Coder) whose kernels, in CUDA C under gpu/kernels, run on an
// NVIDIA GPU through the driver API of gorgonia.org/cu. It is the only package
// that imports cu, and only under the build tag cuda: the default build
// compiles a stub whose Available reports false and whose Searcher and Coder
// return ErrNotBuilt, so callers (the --device flag) need no build tags of
// their own. Under the tag cudaemu (and not cuda) the same host code drives a
// CPU emulator of the same kernel sources, which is how the kernels are tested
// where no GPU is present. README.md says how to build, test and deploy it.
package gpu
