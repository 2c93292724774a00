// Package noise corrupts clean class labels in the ways label-noise benchmarks
// do, so that relabel (or any cleaner) can be measured against a known truth:
// symmetric and pair-flip noise, instance-dependent noise in the style of
// Xia et al. 2020 (the seed paper's synthetic benchmark, ../shared/data
// README "Noise kinds"), partly structured class-conditional noise (a seeded
// derangement, a few seeded targets per class, pair flips on half the
// classes) and several simulated annotators of differing accuracy per item.
// Every random draw of row i comes from its own stream rand.NewPCG(seed,
// uint64(id_i)), and class-level structure from the seed alone, so the
// output depends only on the seed and the rows, never on row order, batching
// or the clock. The package is pure Go: the CLI command `relabel noise` does
// the Arrow I/O around it.
package noise
