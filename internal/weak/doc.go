// Package weak turns a dev dataset's features into weak-neighbour features
// for the weak-neighbour check (docs/QUALITY.md, "Weak neighbours"): features on
// which a linear model on the features stays strong while Euclidean
// neighbours become weak, as with text embeddings, where much of the
// variance is topic and style that says nothing about the class. The
// transform is fixed and seeded, not fitted to any result: the features are
// z-scored, as many class-independent standard normal dimensions are
// appended (half the variance becomes nuisance), and the whole is rotated by
// a random orthogonal matrix so that no coordinate-wise standardisation or
// selection can peel the nuisance off again. A linear model is invariant to
// the rotation and learns near-zero weights for the nuisance; a distance
// sees the nuisance as much as the signal.
package weak
