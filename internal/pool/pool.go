// Package pool runs a loop over item indices on all cores, in chunks, with
// one scratch value per goroutine: the shape of every per-item step of
// relabel (neighbour gathering and mixture.Round in the engine, in the exact
// rounds and in ivf's joined rounds, and the lake's searches, weights and
// file writes). It is the one worker pool of the module: nothing else
// starts a pool of goroutines by hand.
//
// By hand rather than golang.org/x/sync/errgroup: errgroup bounds goroutines
// but gives them no scratch of their own and stops at the first error, while
// these loops cannot fail and need a reusable workspace per goroutine.
package pool

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Chunk is how many consecutive indices a goroutine takes at a time: large
// enough that handing out work costs nothing next to a round, small enough
// that the last chunks spread over all goroutines.
const Chunk = 64

// Scratch recycles per-goroutine workspaces across calls of Each (a DoFn
// keeps one for all its bundles). The zero value is ready to use.
type Scratch[W any] struct {
	p sync.Pool
}

func (s *Scratch[W]) get() *W {
	if s == nil {
		return new(W)
	}
	if w, ok := s.p.Get().(*W); ok {
		return w
	}
	return new(W)
}

func (s *Scratch[W]) put(w *W) {
	if s != nil {
		s.p.Put(w)
	}
}

// Each calls f(w, i) for every i in [0, n) on workers goroutines (<= 0:
// GOMAXPROCS), Chunk indices at a time; w is the calling goroutine's
// workspace, from scratch (nil: a fresh one per goroutine). Calls for
// different i run concurrently, so f must write only to i's own output and
// to w. Each returns once every call has.
func Each[W any](n, workers int, scratch *Scratch[W], f func(w *W, i int)) {
	EachChunk(n, workers, scratch, func(w *W, c, lo, hi int) {
		for i := lo; i < hi; i++ {
			f(w, i)
		}
	})
}

// EachChunk is Each handing out whole chunks: f(w, c, lo, hi) runs indices
// [lo, hi) of chunk c (lo = c Chunk) in order on one goroutine, so f can
// pack a chunk's outputs into chunk c's own buffer and the caller join the
// buffers in chunk order (a round packs its states that way instead of
// allocating one state per item). Chunks run concurrently.
func EachChunk[W any](n, workers int, scratch *Scratch[W], f func(w *W, c, lo, hi int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	next := make(chan int, workers)
	go func() {
		for lo := 0; lo < n; lo += Chunk {
			next <- lo
		}
		close(next)
	}()
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := scratch.get()
			defer scratch.put(w)
			for lo := range next {
				f(w, lo/Chunk, lo, min(lo+Chunk, n))
			}
		}()
	}
	wg.Wait()
}

// EachIndex calls f(i) for every i in [0, n) on workers goroutines (<= 0:
// GOMAXPROCS), handing out one index at a time: for a few large pieces of
// work (ivfstages runs whole blocks of hundreds of items each), where
// EachChunk's chunks of Chunk indices would give one goroutine all of them.
func EachIndex(n, workers int, f func(i int)) {
	EachIndexWith(n, workers, func(_ *struct{}, i int) error { f(i); return nil })
}

// EachIndexErr is EachIndex for calls that can fail: every call runs, and
// it returns the error of the lowest failing index (nil if none), so the
// error reported does not depend on which goroutine got there first.
func EachIndexErr(n, workers int, f func(i int) error) error {
	return EachIndexWith(n, workers, func(_ *struct{}, i int) error { return f(i) })
}

// EachIndexWith is EachIndexErr with a workspace per goroutine: w starts as
// a fresh W on each goroutine and is kept by it for every index it takes
// (buffers a search or a weight batch reuses).
func EachIndexWith[W any](n, workers int, f func(w *W, i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := new(W)
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				errs[i] = f(w, i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Workspaces is EachIndex with a workspace per goroutine made by mk, and
// returns the workspaces of the goroutines that ran, in no particular
// order: for loops whose goroutines each accumulate a result the caller then
// merges (the kNN vote's private candidate lists, merged in an order that
// does not depend on which goroutine held which).
func Workspaces[W any](n, workers int, mk func() *W, f func(w *W, i int)) []*W {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ws := make([]*W, max(0, min(workers, n)))
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range ws {
		ws[g] = mk()
		wg.Add(1)
		go func(w *W) {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(w, i)
			}
		}(ws[g])
	}
	wg.Wait()
	return ws
}

// Chunks is the number of chunks EachChunk splits n indices into.
func Chunks(n int) int { return (n + Chunk - 1) / Chunk }
