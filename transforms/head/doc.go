// Package head is the linear head: a multinomial logistic
// regression (softmax) on the item's features, fitted to relabel's current
// posteriors out of fold, whose class probabilities enter each round as one
// more mixture component beside the item's neighbours: in process through
// engine.Options.NewComponent (Factory), in relabel run's exact and sample
// modes through pipelines/stages' rounds, which keep one head across the
// rounds and give the same bits. It is fitted on, and
// applied to, the candidate set (every item in exact mode). Once its fitted
// share falls under OffShare it is off for the rest of the run (--head,
// options.DefaultHead).
// It is the frozen-embedding analogue of the seed paper's classifier trained
// between rounds, and it carries information where Euclidean neighbours are
// weak but a linear rule on the features is not (text-like embeddings;
// internal/weak builds such features from the dev data). Every item's
// probabilities come from a model fitted without it: the folds are a hash of
// (seed, key), so the head never echoes an item's own label back to it.
package head
