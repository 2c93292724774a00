package knn

// SetBLASThreads lets the external benchmarks time a plain SGEMM with the
// BLAS's own threading.
var SetBLASThreads = setBLASThreads
