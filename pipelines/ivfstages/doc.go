// Package ivfstages is relabel's path for large inputs (--neighbours ivf): the
// Beam stages that partition the items by k-means (transforms/ivf), search
// each partition's blocks on their own (Neighbours), and run the rounds with
// neighbours' states joined to each block by key (JoinRounds), so no worker
// ever holds the whole dataset. It has its own element types and coders
// (Part, Block, JoinMsg, BatchItems, Probed), a packed state coder, and
// spill files (Spill) for the embedded runner. It shares with
// pipelines/stages only what both paths need: Stats, Items (what it hands
// back for stages.Write), the standardisation, the kernels' Backends and
// stages.ReadAgain.
package ivfstages
