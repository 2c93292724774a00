package budget

import "github.com/relabel/relabel/transforms/mixture"

// LocalRounds estimates the memory ivf mode's local rounds
// (pipelines/ivfstages' localRoundsFn) hold for rows items with k
// neighbours: every block's items, neighbourhoods and weights, and two
// rounds' states at their largest (c0 classes, rows of p.MaxRowEntries
// entries). With the linear head (headD, the feature dimension, > 0; 0:
// none) each row adds localHeadRowBytes. The run's resolution (whether the
// rounds run locally, and so whether the head can) and the stage (how
// tightly to collect) both read it.
func LocalRounds(rows int64, k int, p mixture.Params, headD int) int64 {
	perRow := 96 + 12*int64(k) + 2*MaxPackedState(p)
	if headD > 0 {
		perRow += localHeadRowBytes(headD, k, p)
	}
	return max(rows, 1) * perRow
}

// LocalExact estimates the memory the exact and sample modes' stages run
// in one (pipelines/stages' localFn) hold for rows items of dimension d
// with k neighbours: LocalRounds' items and states (with the head's
// features where headD > 0), and the input's features twice, as read and
// standardised for the search.
func LocalExact(rows int64, d, k int, p mixture.Params, headD int) int64 {
	return LocalRounds(rows, k, p, headD) + max(rows, 1)*8*int64(d)
}

// StreamedRounds estimates the memory ivf mode's streamed rounds
// (pipelines/ivfstages' localRoundsFn.streamed) hold for rows items with k
// neighbours: one round's states (the next round's go to spill files), each
// item's external neighbours' places (8 bytes a neighbour) and, while they
// are located once, their keys and blocks (16 more).
func StreamedRounds(rows int64, k int, p mixture.Params) int64 {
	return max(rows, 1) * (16 + 24*int64(k) + MaxPackedState(p))
}

// localHeadRowBytes is what the linear head adds to LocalRounds per
// row of dimension d: the block's copy of its features (4 d), the head's
// z-scored matrix with the intercept (8 (d+1)), its per-class buffers
// (targets, probabilities, the neighbours' vote and the fold-ordered
// targets: 4 x 8 c), the items' states gathered in key order and the
// head's component states (2 states at their largest), and the item's
// place in key order and its neighbours' (16 + 4 k).
func localHeadRowBytes(d, k int, p mixture.Params) int64 {
	return 4*int64(d) + 8*int64(d+1) + 32*int64(p.C) + 2*MaxPackedState(p) + 16 + 4*int64(k)
}

// MaxPackedState is the bytes of one packed state at its largest: p.C0
// classes with rows of p.MaxRowEntries entries (mixture.States packed).
func MaxPackedState(p mixture.Params) int64 {
	return int64(p.C0) * int64(12+5*p.MaxRowEntries)
}
