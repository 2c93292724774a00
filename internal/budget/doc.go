// Package budget estimates, before any work, what a relabel run will need:
// its peak memory and the size of its output, from the input's metadata
// (rows, feature dimension d, classes C) and the options (K neighbours, c0
// classes kept, L count vectors of N trials, rounds). relabel refuses a run
// whose estimate does not fit the machine (exit 2, naming the flag that
// dominates the estimate, the estimate and the memory there is), rather
// than let it grow for minutes and die with "fatal error: runtime: out of
// memory".
//
// The estimate is a sum of terms, each proportional to the data a stage holds
// (every input row's features, every item's neighbour list and state, the
// per-class tables, ivf's blocks where its rounds hold them all at once),
// with coefficients measured against the process's peak resident memory at
// a few sizes (cmd/relabel's TestEstimateMeasured, -budget, and
// BenchmarkScaleRun). It is meant to be within 2x of the measured peak, which is
// enough to tell a run that fits from one that is 10x too large.
package budget
