package engine

import (
	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/mixture"
)

// Batch is one round's input for a batch of n items, wherever their states
// live: Run's whole dataset, an exact-mode batch (pipelines/stages) or an
// ivf block (pipelines/ivfstages). RunRound is the one round loop all
// three share, so they skip and seed items the same way and a pipeline
// computes bit for bit what Run computes.
type Batch struct {
	// N is the number of items, K the neighbour slots per item.
	N, K int
	// Own holds the items' states of the previous round, item i at i.
	Own *mixture.States
	// Init holds their initial states (nil or empty: no anchor).
	Init *mixture.States
	// Neighbour locates item i's neighbour j's state of the previous round:
	// packed item at of ss, with its mixture weight; ss nil for none.
	Neighbour func(i, j int) (ss *mixture.States, at int, weight float64)
	// Annotations is item i's annotation count (mixture.Params.AnchorWeight).
	Annotations func(i int) int
	// Key is item i's key, for seeding its draws.
	Key func(i int) uint64
}

// RunRound runs round r (mixture.Round) for every item of b on workers
// goroutines and returns their next states, packed in item order, and how
// many items ran. With p.ActiveTol > 0 an item runs only when it or one of
// its neighbours moved more than the tolerance (States.Moved); the others
// keep their state, and the result carries every item's Moved. With 0 every
// item runs and nothing is tracked.
func RunRound(b Batch, r, workers int, scratch *pool.Scratch[RoundScratch], p *mixture.Params) (mixture.States, int) {
	n, k := b.N, b.K
	// Each chunk of items packs its next states into its own States, in
	// item order, and the chunks are joined in order: no state is
	// allocated per item (a per-item State cost a tenth of a round in
	// allocation and GC).
	parts := make([]mixture.States, pool.Chunks(n))
	ran := make([]int, len(parts))
	var moved []float32
	track := p.ActiveTol > 0
	if track {
		moved = make([]float32, n)
	}
	tol := float32(p.ActiveTol)
	pool.EachChunk(n, workers, scratch, func(w *RoundScratch, c, lo, hi int) {
		part := &parts[c]
		// Next states are about as large as the last (a quarter more
		// covers most growth without a copy).
		cl, en := b.Own.Sizes(lo, hi)
		part.Reserve(hi-lo, cl+cl/4+8, en+en/4+32)
		for i := lo; i < hi; i++ {
			if track && !b.active(i, tol) {
				moved[i] = b.Own.Moved[i]
				part.AppendFrom(b.Own, i)
				continue
			}
			w.Reset(k)
			for j := 0; j < k; j++ {
				if ss, at, wt := b.Neighbour(i, j); ss != nil {
					ss.Get(w.Neighbour(wt), at)
				}
			}
			b.Own.Get(&w.Own, i)
			var init *mixture.State
			if b.Init != nil && b.Init.Len() > 0 {
				b.Init.Get(&w.Init, i)
				init = &w.Init
			}
			iw := p.AnchorWeight(b.Annotations(i))
			w.WS.Round(&w.Dst, &w.Own, init, iw, w.Neigh, w.W, b.Key(i), r, p)
			// What the packed states carry: the distance, and so which items
			// run next round, is the same in process and in a pipeline.
			w.Dst.Quantize()
			if track {
				moved[i] = movedAfter(b.Own, i, tol, &w.Own, &w.Dst, p.C)
			}
			part.Append(&w.Dst)
			ran[c]++
		}
		part.Moved = part.Moved[:0] // Moved goes on whole, below
	})
	var next mixture.States
	next.Concat(parts)
	count := 0
	for _, r := range ran {
		count += r
	}
	next.Moved = moved
	return next, count
}

// active reports whether item i must run: its own state or a neighbour's
// (with weight, as mixture.Round counts them) moved more than tol.
func (b *Batch) active(i int, tol float32) bool {
	if b.Own.MovedOf(i) > tol {
		return true
	}
	for j := 0; j < b.K; j++ {
		if ss, at, wt := b.Neighbour(i, j); ss != nil && wt > 0 && ss.MovedOf(at) > tol {
			return true
		}
	}
	return false
}

// movedAfter is item i's accumulated move once its state went from own to
// dst: the distance added to what it had moved since it last ran its
// neighbours. A move over the tolerance was announced (it made this item and
// its neighbours run), so the count starts afresh from there. Every backend
// packs the same value, so which items run next round is the same in
// process, in a pipeline and on a device.
func movedAfter(ss *mixture.States, i int, tol float32, own, dst *mixture.State, c int) float32 {
	prev := ss.MovedOf(i)
	if prev > tol {
		prev = 0
	}
	return prev + float32(mixture.Distance(own, dst, c))
}
