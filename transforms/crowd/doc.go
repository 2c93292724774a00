// Package crowd is relabel's annotator-aware model (docs/METHOD.md, "Who gave
// the label"): every annotator has a C x C confusion matrix (row c: how it
// labels items whose true class is c), estimated jointly with the items'
// class posteriors by EM, as Dawid and Skene (1979) do, with two changes.
// Each row has a Dirichlet prior centred on the pooled matrix of all
// annotators adjusted to the annotator's own accuracy (itself shrunk toward
// the pool's: a one-coin layer between the two), worth Params.Strength
// labels, so that an annotator with few labels is shrunk toward the crowd's
// average behaviour, one with some dozens keeps its own skill, and only one
// with many keeps its own matrix (see Model); and where items have features, an
// item's prior over classes is the weighted mean of its K nearest neighbours'
// posteriors (mixed with the class prior) instead of one global class prior,
// iterated with the rest.
//
// Statistics (the E step's expected counts) accumulate in fixed point, so
// their sum does not depend on the order in which a runner merges partial
// sums: the in-memory Fit and the Beam stages (pipelines/crowdstages) build
// bit-identical models. The package imports neither Beam nor Arrow.
package crowd
