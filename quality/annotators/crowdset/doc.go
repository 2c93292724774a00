// Package crowdset holds the crowd sets the quality harness measures
// (quality/annotators): the shared data folder's real and simulated
// crowds (Load), generated crowds with the properties real crowds have and
// the shared ones lack (Gen), and the classical references relabel's
// label-only mode is held to (the majority vote and plain Dawid-Skene). It
// imports no Beam, so that its tests and the model-choice checks build and
// run in seconds.
package crowdset
