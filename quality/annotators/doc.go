// Package annotators measures the annotator-aware model (transforms/crowd) on
// the crowd sets of the shared data folder (../shared/data/crowd): it loads a
// set's annotations (and, where it has them, its items' features), runs the
// majority vote, plain Dawid-Skene and the crowd model, and scores each
// against the truth. TestQualityCrowd writes docs/QUALITY_CROWD.md from it.
package annotators
