package engine

import (
	"sort"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/mixture"
)

// Rounder runs one round of sample + MAP-EM (mixture.Round, METHOD.md steps
// 3-7) for every item of a batch: RunRound's contract, on some device. It
// returns the items' next states packed in item order and how many items
// ran (with mixture.Params.ActiveTol > 0 the others keep their state, and
// the result carries every item's Moved, as RunRound does).
//
// CPU is RunRound itself; gpu.Rounds runs the sampling and EM as CUDA
// kernels. Every Rounder passes the conformance suite of
// transforms/engine/roundstest: the same draws (the generator seeded by
// seed, item key and round), the same states within a stated tolerance,
// the same output for any split of the items into batches.
type Rounder interface {
	Round(b Batch, r int, p *mixture.Params) (mixture.States, int, error)
}

// CPU is the Rounder of RunRound, on Workers goroutines (0: one per CPU,
// as pool does) with the caller's Scratch (nil: a fresh one per call).
type CPU struct {
	Workers int
	Scratch *pool.Scratch[RoundScratch]
}

// Round is RunRound(b, r, c.Workers, c.Scratch, p); it never fails.
func (c CPU) Round(b Batch, r int, p *mixture.Params) (mixture.States, int, error) {
	next, ran := RunRound(b, r, c.Workers, c.Scratch, p)
	return next, ran, nil
}

var _ Rounder = CPU{}

// WithWorkers is r, or where r is nil or the zero CPU (what gpu.Resolve
// gives for the CPU, which leaves the goroutines and the scratch to its
// caller) CPU{workers, scratch}: a caller's rounds on the CPU then run as
// RunRound on its own goroutines and scratch, as they did before a device
// was resolved, and a device's Rounder is kept as it is.
func WithWorkers(r Rounder, workers int, scratch *pool.Scratch[RoundScratch]) Rounder {
	if r == nil || r == Rounder(CPU{}) {
		return CPU{Workers: workers, Scratch: scratch}
	}
	return r
}

// Flat is a round's input for some items of a batch, flattened into plain
// arrays for a device: each item's mixture components (mixture.Round's
// p~(y): its own state, its neighbours' and its given-label anchor's, each
// with the weight Round gives it) as references into the packed states
// they live in, so that a kernel needs no callback into the batch and no
// state is copied per item (a neighbour's state is read by K items).
type Flat struct {
	// Items is each flattened item's index in the batch.
	Items []int32
	// Keys is each item's key (Batch.Key), for seeding its draws.
	Keys []uint64
	// Sources are the packed states the components live in, the batch's
	// own states first: item Items[t] of Sources[0] is item t's own state,
	// which EM starts from and the next state blends with (METHOD.md steps
	// 5-6).
	Sources []*mixture.States
	// Item t's components are CompOff[t] to CompOff[t+1]-1, in
	// mixture.Round's order: item CompAt[j] of Sources[CompSrc[j]], with
	// weight CompW[j] (> 0; unnormalised, as Round passes them to the
	// sampler).
	CompOff         []int32
	CompSrc, CompAt []int32
	CompW           []float64
}

// Reset empties f, keeping storage.
func (f *Flat) Reset() {
	f.Items, f.Keys = f.Items[:0], f.Keys[:0]
	f.Sources = f.Sources[:0]
	f.CompOff = append(f.CompOff[:0], 0)
	f.CompSrc, f.CompAt, f.CompW = f.CompSrc[:0], f.CompAt[:0], f.CompW[:0]
}

// Len is the number of flattened items.
func (f *Flat) Len() int { return len(f.Items) }

// source returns ss's index in f.Sources, adding it.
func (f *Flat) source(ss *mixture.States) int32 {
	for i, x := range f.Sources {
		if x == ss {
			return int32(i)
		}
	}
	f.Sources = append(f.Sources, ss)
	return int32(len(f.Sources) - 1)
}

func (f *Flat) add(ss *mixture.States, at int, w float64) {
	f.CompSrc = append(f.CompSrc, f.source(ss))
	f.CompAt = append(f.CompAt, int32(at))
	f.CompW = append(f.CompW, w)
}

// Running returns the items of b that run in a round under p: every item,
// or with p.ActiveTol > 0 those that moved or whose neighbours moved more
// than it (RunRound's rule).
func (b *Batch) Running(p *mixture.Params) []int32 {
	run := make([]int32, 0, b.N)
	tol := float32(p.ActiveTol)
	for i := 0; i < b.N; i++ {
		if p.ActiveTol > 0 && !b.active(i, tol) {
			continue
		}
		run = append(run, int32(i))
	}
	return run
}

// Flatten appends items (batch indices) of b to f, each with the
// components and weights that mixture.Round builds from its inputs: the
// same float64 expressions in the same order, so a device that samples
// from them draws what Round draws.
func (b *Batch) Flatten(f *Flat, items []int32, p *mixture.Params) {
	if len(f.CompOff) == 0 {
		f.Reset()
	}
	if len(f.Sources) == 0 {
		f.Sources = append(f.Sources, b.Own)
	}
	type comp struct {
		ss *mixture.States
		at int
		w  float64
	}
	var neigh []comp
	for _, i32 := range items {
		i := int(i32)
		f.Items = append(f.Items, i32)
		f.Keys = append(f.Keys, b.Key(i))
		neigh = neigh[:0]
		var nw float64
		for j := 0; j < b.K; j++ {
			ss, at, wt := b.Neighbour(i, j)
			if ss == nil {
				continue
			}
			neigh = append(neigh, comp{ss, at, wt})
			if wt > 0 && size(ss, at) > 0 {
				nw += wt
			}
		}
		own := size(b.Own, i)
		mu := p.Mu
		if own == 0 || nw == 0 {
			mu = 0
			if own > 0 {
				mu = 1
			}
		}
		if own > 0 && mu > 0 {
			f.add(b.Own, i, mu)
		}
		if nw > 0 && mu < 1 {
			for _, c := range neigh {
				if c.w > 0 && size(c.ss, c.at) > 0 {
					f.add(c.ss, c.at, (1-mu)*c.w/nw)
				}
			}
		}
		if b.Init != nil && b.Init.Len() > 0 {
			if iw := p.AnchorWeight(b.Annotations(i)); iw > 0 && size(b.Init, i) > 0 {
				f.add(b.Init, i, iw)
			}
		}
		f.CompOff = append(f.CompOff, int32(len(f.CompW)))
	}
}

// size is how many classes item at of ss holds.
func size(ss *mixture.States, at int) int { return int(ss.ItemOff[at+1] - ss.ItemOff[at]) }

// Collect packs round results in item order, as RunRound does, on workers
// goroutines (<= 0: GOMAXPROCS): an item of run (Running's list,
// ascending) gets the state next writes for its position t in run (next
// returns false to keep the item's own state: an empty mixture), quantised
// as packed states are; every other item keeps its own state. With
// p.ActiveTol > 0 it tracks Moved as RunRound does. next is called
// concurrently unless workers is 1, each call with its own dst.
func (b *Batch) Collect(run []int32, p *mixture.Params, workers int, next func(t int, dst *mixture.State) bool) mixture.States {
	track := p.ActiveTol > 0
	tol := float32(p.ActiveTol)
	var moved []float32
	if track {
		moved = make([]float32, b.N)
	}
	type scratch struct{ own, dst mixture.State }
	parts := make([]mixture.States, pool.Chunks(b.N))
	pool.EachChunk(b.N, workers, nil, func(w *scratch, c, lo, hi int) {
		part := &parts[c]
		cl, en := b.Own.Sizes(lo, hi)
		part.Reserve(hi-lo, cl+cl/4+8, en+en/4+32)
		t := sort.Search(len(run), func(x int) bool { return int(run[x]) >= lo })
		for i := lo; i < hi; i++ {
			if t >= len(run) || int(run[t]) != i {
				if track {
					moved[i] = b.Own.Moved[i]
				}
				part.AppendFrom(b.Own, i)
				continue
			}
			b.Own.Get(&w.own, i)
			if !next(t, &w.dst) {
				w.dst.CopyFrom(&w.own)
			}
			w.dst.Quantize()
			if track {
				moved[i] = movedAfter(b.Own, i, tol, &w.own, &w.dst, p.C)
			}
			part.Append(&w.dst)
			t++
		}
		part.Moved = part.Moved[:0] // Moved goes on whole, below
	})
	var out mixture.States
	out.Concat(parts)
	out.Moved = moved
	return out
}

// FlattenOn is Flatten on workers goroutines (<= 0: GOMAXPROCS): the items
// in chunks, each flattened alone, then joined in order with the sources
// merged in order of first use, so f is what Flatten makes. A device's
// round flattens every item of a batch, and one core doing it would be
// slower than the kernels.
func (b *Batch) FlattenOn(f *Flat, items []int32, p *mixture.Params, workers int) {
	if len(f.CompOff) == 0 {
		f.Reset()
	}
	if len(f.Sources) == 0 {
		f.Sources = append(f.Sources, b.Own)
	}
	parts := make([]Flat, pool.Chunks(len(items)))
	pool.EachChunk(len(items), workers, nil, func(_ *struct{}, c, lo, hi int) {
		parts[c].Reset()
		parts[c].Sources = append(parts[c].Sources, b.Own)
		b.Flatten(&parts[c], items[lo:hi], p)
	})
	var remap []int32
	for c := range parts {
		x := &parts[c]
		remap = remap[:0]
		for _, s := range x.Sources {
			remap = append(remap, f.source(s))
		}
		base := f.CompOff[len(f.CompOff)-1]
		f.Items = append(f.Items, x.Items...)
		f.Keys = append(f.Keys, x.Keys...)
		for _, off := range x.CompOff[1:] {
			f.CompOff = append(f.CompOff, base+off)
		}
		for _, s := range x.CompSrc {
			f.CompSrc = append(f.CompSrc, remap[s])
		}
		f.CompAt = append(f.CompAt, x.CompAt...)
		f.CompW = append(f.CompW, x.CompW...)
	}
}
