// Package grid is relabel's quality benchmark over the dev grid: it runs the
// relabelling engine in process (transforms/engine, the same rounds the Beam
// pipeline runs, without its I/O) over a grid of noisy datasets with known
// truth, scores every cell with transforms/evaluate against the baselines a
// user could run instead (the given labels, a K = 10 kNN vote, cleanlab on
// its out-of-sample vote fractions (CleanlabKNN), the majority vote of
// annotators, the peer figures of the data README), and renders
// the result as the markdown of docs/QUALITY.md. DevGrid is the grid of the
// development data (../shared/data); RunCell and Sweep are what a parameter
// sweep calls. Datasets and the baselines' neighbours are loaded once per
// process and cached, so repeated runs pay only for the engine. It reads the
// dev data's files and writes docs/QUALITY.md, so it lives with the other
// harness under quality/, not among the math of transforms/.
package grid
