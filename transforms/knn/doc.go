// Package knn finds the K nearest neighbours of a batch of embeddings in a
// candidate set, exactly: step 1 of METHOD.md, the neighbourhoods whose labels
// are blended into each item's noisy-label mixture.
//
// The search is a Searcher, a small interface that the CPU kernel here and the
// CUDA backend in gpu/ implement and that knntest.Run checks against a float64
// brute-force oracle. CPU computes distances as ||q||^2 + ||p||^2 - 2 q.p, the
// cross term by blocked SGEMM through gonum's blas32, and selects the top K of
// each GEMM tile while it is still in cache, so the B x S distance matrix is
// never materialised.
//
// # Which BLAS a build gets
//
// The SGEMM that dominates the search comes from whatever implementation is
// installed in gonum.org/v1/gonum/blas/blas32 (blas32.Use), chosen at build time:
//
//   - Default (no tags, and every CGO_ENABLED=0 build such as Beam's Dataflow
//     cross-compile): gonum's pure-Go blas32, about 8 GFLOP/s on 2 cores.
//   - -tags openblas with cgo enabled: this package's init installs
//     gonum.org/v1/netlib/blas/netlib, linked against the system OpenBLAS
//     (Debian: apt-get install libopenblas-dev; the package adds -lopenblas
//     itself, CGO_LDFLAGS=-lopenblas is also fine), 20x faster. Because Search
//     parallelises over query blocks with goroutines, init also sets OpenBLAS to
//     one thread (openblas_set_num_threads(1)); that setting is process-wide.
//     With -tags openblas but CGO_ENABLED=0 the build silently falls back to
//     pure Go.
//
// BLASImplementation reports which one the running binary has. Both builds
// pass the same conformance suite (knntest.Run).
package knn
