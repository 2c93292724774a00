// Package knn finds the K nearest neighbours of a batch of embeddings in a
// candidate set, exactly: step 1 of METHOD.md, the neighbourhoods whose labels
// are blended into each item's noisy-label mixture.
//
// The search is a Searcher, a small interface that the CPU kernel here and the
// CUDA backend in gpu/ implement and that knntest.Run checks against a float64
// brute-force oracle. CPU computes squared L2 distances as
// ||q||^2 + ||p||^2 - 2 q.p (cosine as 1 - q.p on normalised copies), the
// cross term by SGEMM on tiles of QueryBlock x CandidateBlock, and merges each tile into per-query top-K lists while it is
// still in cache: a filter against the current K-th distance (SSE assembly on
// amd64, 8 candidates per step; Go elsewhere or with -tags noasm) rejects
// almost every candidate, so the B x S distance matrix is never materialised
// and the selection costs a small fraction of the SGEMM (docs/perf/knn.md).
// Each query is scanned by one goroutine in candidate order, so results,
// including the lower-index tie-break, do not depend on the worker count.
//
// # Which SGEMM a build gets
//
// The SGEMM that dominates the search is chosen at build time and, in the
// default build, at run time:
//
//   - Default (no tags, and every CGO_ENABLED=0 build such as Beam's Dataflow
//     cross-compile): a register-blocked micro-kernel in Go assembly with
//     packed operands (gemm.go), AVX-512 (12 x 32) or AVX2+FMA (6 x 16),
//     picked by CPU feature when the process starts; on other CPUs, other
//     architectures and with -tags noasm, gonum's pure-Go blas32 (about ten
//     times slower). Each distance is then one FMA chain in dimension order
//     whatever the kernel or tile, so AVX2 and AVX-512 machines give
//     bit-identical results.
//   - -tags openblas with cgo enabled: this package's init installs
//     gonum.org/v1/netlib/blas/netlib in blas32, linked against the system
//     OpenBLAS (Debian: apt-get install libopenblas-dev; the package adds
//     -lopenblas itself, so CGO_LDFLAGS=-lopenblas is optional). The install
//     is process-wide: every blas32 user in the binary gets OpenBLAS. Because
//     Search already runs one goroutine per core on separate query blocks,
//     init also makes OpenBLAS single-threaded (openblas_set_num_threads(1)),
//     again for the whole process. With -tags openblas but CGO_ENABLED=0 the
//     build silently falls back to the default.
//
// The two are about equally fast on the AVX-512 machine measured in
// docs/perf/knn.md.
//
// BLASImplementation reports which one the running binary has. Both builds
// pass the same conformance suite (knntest.Run).
package knn
