// Package knn finds the K nearest neighbours of a batch of embeddings in a
// candidate set, exactly: step 1 of METHOD.md, the neighbourhoods whose labels
// are blended into each item's noisy-label mixture.
//
// The search is a Searcher, a small interface that the CPU kernel here and the
// CUDA backend in gpu/ implement and that knntest.Run checks against a float64
// brute-force oracle. CPU computes squared L2 distances as
// ||q||^2 + ||p||^2 - 2 q.p (cosine as 1 - q.p on normalised copies), the
// cross term by SGEMM through gonum's blas32 on tiles of QueryBlock x
// CandidateBlock, and merges each tile into per-query top-K lists while it is
// still in cache: a filter against the current K-th distance (SSE assembly on
// amd64, 8 candidates per step; Go elsewhere or with -tags noasm) rejects
// almost every candidate, so the B x S distance matrix is never materialised
// and the selection costs a small fraction of the SGEMM (docs/perf/knn.md).
// Each query is scanned by one goroutine in candidate order, so results,
// including the lower-index tie-break, do not depend on the worker count.
//
// # Which BLAS a build gets
//
// The SGEMM that dominates the search comes from whatever implementation is
// installed in gonum.org/v1/gonum/blas/blas32 (blas32.Use), chosen at build time:
//
//   - Default (no tags, and every CGO_ENABLED=0 build such as Beam's Dataflow
//     cross-compile): gonum's pure-Go blas32, about 8-13 GFLOP/s on 2 cores.
//   - -tags openblas with cgo enabled: this package's init installs
//     gonum.org/v1/netlib/blas/netlib in blas32, linked against the system
//     OpenBLAS (Debian: apt-get install libopenblas-dev; the package adds
//     -lopenblas itself, so CGO_LDFLAGS=-lopenblas is optional), 10-20x
//     faster. The install is process-wide: every blas32 user in the binary
//     gets OpenBLAS. Because Search already runs one goroutine per core on
//     separate query blocks, init also makes OpenBLAS single-threaded
//     (openblas_set_num_threads(1)), again for the whole process. With
//     -tags openblas but CGO_ENABLED=0 the build silently falls back to pure
//     Go.
//
// BLASImplementation reports which one the running binary has. Both builds
// pass the same conformance suite (knntest.Run).
package knn
