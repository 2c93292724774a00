// Package synth generates labelled embeddings for scale runs, deterministically
// from a seed, so that 10^6-row inputs need not be stored. Each class
// is a Gaussian cluster: a mean, a random low-rank spread (embeddings of one
// class vary along a few directions, not isotropically: kNN on isotropic
// 64-dimensional Gaussians is a needle-in-haystack case no embedding looks
// like) and a little isotropic noise. A fraction of the labels is flipped to
// a uniformly random other class (symmetric noise, data/README.md). Row i
// depends only on (Seed, i) and the class parameters on (Seed, class), so any
// range of rows can be generated on its own, in any order, by any worker.
package synth
