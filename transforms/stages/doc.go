// Package stages holds the Beam DoFns and CombineFns that fan relabel's pure
// kernels (transforms/knn, transforms/llc, transforms/mixture) out over a
// pipeline, and the element types that flow between them, each with a bulk
// coder (schemas/wire). pipelines/ wires them together.
package stages
