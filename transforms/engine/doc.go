// Package engine runs a whole relabelling in one process, without Beam: feature
// standardisation, candidate selection, kNN, neighbour weights (LLC), and R
// rounds of sample + EM per item. It calls exactly the kernels the Beam pipeline
// fans out (transforms/knn, transforms/llc, transforms/mixture) in the same
// order with the same seeds, so the pipeline's labels equal the engine's; the
// quality harness and the pipeline-overhead benchmark run it directly.
package engine
