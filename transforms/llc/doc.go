// Package llc computes locality-constrained linear codes: for each item, the
// convex weights A_i over its K nearest neighbours that best reconstruct it,
// step 2 of METHOD.md. The weights blend the neighbours' label distributions
// into the item's approximate noisy-label mixture (step 3).
//
// Each neighbourhood is one small QP on the probability simplex,
//
//	min_a a^T G a  s.t. a >= 0, 1^T a = 1,
//
// with G the K x K Gram matrix of the neighbours centred on the query, plus the
// optional locality adaptor and a ridge relative to the trace (Params). A
// Coder solves a whole batch of them. CPU is the exact pure-Go solver (an
// active-set method with an updated Cholesky factor); the CUDA backend in gpu/
// implements the same interface, and llctest.Run checks any Coder against the
// KKT conditions and a brute-force oracle.
//
// Unlike the authors' code (OSQP at tolerance 1e-3, then clipping negatives
// and renormalising) the solution is exact to Params.Tol.
package llc
