// Package ivf groups candidate neighbours at scale with an inverted-file
// (IVF) index: k-means centroids fitted on a deterministic sample of the
// items split the feature space into partitions, every item is stored in its
// NProbe nearest partitions and searched, exactly (transforms/knn), against
// the items stored in its nearest one. Each partition is searched on its own,
// so the work of one search is bounded by the partition size, not by the
// dataset, and the total cost grows linearly in rows at a fixed partition size
// (docs/perf/scale.md). It is pure Go and imports no Beam: the pipeline's
// DoFns (pipelines/ivfstages) call Fit, Model.Probe and Block, and
// Search runs the same grouping in memory for tests and the quality harness.
//
// The probing is on the stored side: item y is stored in partitions
// probe(y), item x is searched in home(x) = probe(x)[0], so y is found for x
// when home(x) is among y's NProbe nearest centroids. The usual query-side
// IVF (x searched in its NProbe nearest partitions, y stored in its nearest
// one) finds y when home(y) is among x's NProbe nearest: for near neighbours,
// the same condition seen from the other end, with the same recall and the
// same cost (NProbe copies of every feature vector either way). Storing the
// copies instead of probing with them means every item is searched exactly
// once, against one candidate set holding all its neighbours, so there is no
// per-item merge of partial top-K lists, and the neighbours' features (which
// the LLC weights need) are at hand where the search ran.
package ivf
