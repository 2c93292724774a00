// Package stages holds the Beam DoFns and CombineFns that fan relabel's pure
// kernels (transforms/knn, transforms/llc, transforms/mixture) out over a
// pipeline, and the element types that flow between them, each with a bulk
// coder (schemas/wire): Read, ComputeStats, Neighbours, Rounds and Write for
// the exact and sample modes. The ivf mode's stages are in
// pipelines/ivfstages, which uses this package's Stats, Items and Write.
// pipelines/ wires them together.
package stages
