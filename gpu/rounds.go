//go:build cuda || cudaemu

package gpu

import (
	"fmt"
	"math"
	"runtime"
	"sort"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// Launch shape of gpu/kernels/rounds.cu; it must match ROUNDS_THREADS.
const (
	roundsThreads      = 64
	defaultRoundsBlock = 65536
)

var _ engine.Rounder = Rounds{}

// roundsWork is the device and host memory of one Round call, kept for the
// next (as llcWork).
type roundsWork struct {
	flat engine.Flat
	// all is the flattened items' sources in one packed States, base each
	// source's first item there.
	all  mixture.States
	base []int32
	// Per component its item in all; per item its own state's item, its
	// classes over all components, its class-set bound and its EM
	// scratch in doubles and ints.
	hIdx, hOwn, hMb    []int32
	hEntries, hWs, hWi []int64
	// A chunk's offsets: components (rebased), cum and EM scratch.
	cOff                 []int32
	cCum, cWsOff, cWiOff []int64

	// the states, once per call
	sItemOff, sCls, sPi, sRem, sRowOff, sCat, sP buffer
	// a chunk's inputs
	compOff, compIdx, compW, keys, ownIdx, cumOff, wsOff, wiOff, mbOf buffer
	// the draws
	nvec, off, cat, cnt, w, cum, centry buffer
	// EM scratch and the next states
	ws, wi, outN, ocls, opi, orem, olen, ocat, op buffer
}

var roundsPool freeList[roundsWork]

func (w *roundsWork) buffers() []*buffer {
	return []*buffer{&w.sItemOff, &w.sCls, &w.sPi, &w.sRem, &w.sRowOff, &w.sCat, &w.sP,
		&w.compOff, &w.compIdx, &w.compW, &w.keys, &w.ownIdx, &w.cumOff, &w.wsOff, &w.wiOff, &w.mbOf,
		&w.nvec, &w.off, &w.cat, &w.cnt, &w.w, &w.cum, &w.centry,
		&w.ws, &w.wi, &w.outN, &w.ocls, &w.opi, &w.orem, &w.olen, &w.ocat, &w.op}
}

func (w *roundsWork) held() int64 {
	var n int64
	for _, b := range w.buffers() {
		n += int64(b.n)
	}
	return n
}

// roundsSupported says whether the kernels run p (see Rounds).
func roundsSupported(p *mixture.Params) bool {
	return p.Variant == mixture.Paper && p.N <= MaxRoundTrials && p.MaxRowEntries <= MaxRoundEntries
}

// chunkStates is one chunk's next states as the kernels wrote them: per item its
// class count (-1: keep its state), then c0 slots of class, pi, remainder
// and up to maxEntries entries.
type chunkStates struct {
	n        []int32
	cls, len []int32
	pi, rem  []float32
	cat      []int32
	p        []float32
}

// Round implements engine.Rounder: engine.RunRound's contract, the
// sampling and EM of every running item on the device, the rest (which
// items run, packing, Moved) as RunRound does it on the host.
func (g Rounds) Round(b engine.Batch, r int, p *mixture.Params) (mixture.States, int, error) {
	if err := p.Validate(); err != nil {
		return mixture.States{}, 0, err
	}
	if !roundsSupported(p) {
		next, ran := engine.RunRound(b, r, runtime.GOMAXPROCS(0), nil, p)
		return next, ran, nil
	}
	run := b.Running(p)
	var res []chunkStates
	var starts []int
	err := g.each(b, run, r, p, true, func(w *roundsWork, lo, n int) error {
		c0, me := p.C0, p.MaxRowEntries
		x := chunkStates{n: make([]int32, n), cls: make([]int32, n*c0), len: make([]int32, n*c0),
			pi: make([]float32, n*c0), rem: make([]float32, n*c0), cat: make([]int32, n*c0*me), p: make([]float32, n*c0*me)}
		d, _ := device()
		for _, e := range []error{
			download(d, x.n, &w.outN), download(d, x.cls, &w.ocls), download(d, x.len, &w.olen),
			download(d, x.pi, &w.opi), download(d, x.rem, &w.orem), download(d, x.cat, &w.ocat), download(d, x.p, &w.op),
		} {
			if e != nil {
				return fmt.Errorf("gpu: Rounds: copying the next states: %w", e)
			}
		}
		res = append(res, x)
		starts = append(starts, lo)
		return nil
	})
	if err != nil {
		return mixture.States{}, 0, err
	}
	out := b.Collect(run, p, 0, func(t int, dst *mixture.State) bool {
		c := sort.SearchInts(starts, t+1) - 1 // the chunk holding t
		return res[c].state(t-starts[c], p, dst)
	})
	return out, len(run), nil
}

// state unpacks item t of the chunk into dst; false when the item keeps
// its own state.
func (x *chunkStates) state(t int, p *mixture.Params, dst *mixture.State) bool {
	n := int(x.n[t])
	if n < 0 {
		return false
	}
	c0, me := p.C0, p.MaxRowEntries
	dst.Class, dst.Pi = dst.Class[:0], dst.Pi[:0]
	if cap(dst.Rows) < n {
		dst.Rows = append(dst.Rows[:cap(dst.Rows)], make([]mixture.Row, n-cap(dst.Rows))...)
	}
	dst.Rows = dst.Rows[:n]
	for k := 0; k < n; k++ {
		s := t*c0 + k
		dst.Class = append(dst.Class, x.cls[s])
		dst.Pi = append(dst.Pi, float64(x.pi[s]))
		row := &dst.Rows[k]
		row.Cat, row.P = row.Cat[:0], row.P[:0]
		for e := 0; e < int(x.len[s]); e++ {
			row.Cat = append(row.Cat, x.cat[s*me+e])
			row.P = append(row.P, float64(x.p[s*me+e]))
		}
		row.Rem = float64(x.rem[s])
	}
	return true
}

// Samples implements roundstest.Sampler: whether Round draws on the
// device under p.
func (Rounds) Samples(p *mixture.Params) bool { return roundsSupported(p) }

// Sample implements roundstest.Sampler: the count vectors rounds_sample
// draws for the running items of b, in item order.
func (g Rounds) Sample(b engine.Batch, r int, p *mixture.Params) ([]mixture.Counts, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if !roundsSupported(p) {
		return nil, fmt.Errorf("gpu: Rounds: %v EM, N = %d, %d row entries: not run on the device", p.Variant, p.N, p.MaxRowEntries)
	}
	run := b.Running(p)
	out := make([]mixture.Counts, 0, len(run))
	err := g.each(b, run, r, p, false, func(w *roundsWork, lo, n int) error {
		d, _ := device()
		l, tr := p.L, p.N
		nvec, off := make([]int32, n), make([]int32, n*(l+1))
		cat, cnt, wt := make([]int32, n*l*tr), make([]int32, n*l*tr), make([]int32, n*l)
		for _, e := range []error{download(d, nvec, &w.nvec), download(d, off, &w.off),
			download(d, cat, &w.cat), download(d, cnt, &w.cnt), download(d, wt, &w.w)} {
			if e != nil {
				return fmt.Errorf("gpu: Rounds: copying the draws: %w", e)
			}
		}
		for t := 0; t < n; t++ {
			var y mixture.Counts
			y.Reset()
			for v := 0; v < int(nvec[t]); v++ {
				lo, hi := off[t*(l+1)+v], off[t*(l+1)+v+1]
				for e := lo; e < hi; e++ {
					y.Cat = append(y.Cat, cat[t*l*tr+int(e)])
					y.Cnt = append(y.Cnt, float64(cnt[t*l*tr+int(e)]))
				}
				y.Off = append(y.Off, int32(len(y.Cat)))
				y.W = append(y.W, float64(wt[t*l+v]))
				y.Trials = append(y.Trials, float64(tr))
			}
			out = append(out, y)
		}
		return nil
	})
	return out, err
}

// each runs the kernels over the items of run in chunks that fit the
// device (rounds_em only when em), calling done after each chunk's
// launches with the chunk's first position in run and its length. The
// states every component and own state live in go to the device once; a
// chunk uploads only references, weights and keys.
func (g Rounds) each(b engine.Batch, run []int32, r int, p *mixture.Params, em bool, done func(w *roundsWork, lo, n int) error) error {
	if g.Block < 0 || g.MemoryFraction < 0 || g.MemoryFraction > 1 {
		return fmt.Errorf("gpu: Rounds: option out of range in %+v", g)
	}
	if len(run) == 0 {
		return nil
	}
	d, err := device()
	if err != nil {
		return err
	}
	w := roundsPool.get()
	defer roundsPool.put(w)
	w.flat.Reset()
	b.FlattenOn(&w.flat, run, p, 0)
	w.layout(p)
	release, err := d.bind()
	if err != nil {
		return err
	}
	defer release()
	s := &w.all
	for _, e := range []error{
		upload(d, &w.sItemOff, s.ItemOff), upload(d, &w.sCls, s.Class), upload(d, &w.sPi, s.Pi),
		upload(d, &w.sRem, s.Rem), upload(d, &w.sRowOff, s.RowOff), upload(d, &w.sCat, s.Cat), upload(d, &w.sP, s.P),
	} {
		if e != nil {
			return fmt.Errorf("gpu: Rounds: uploading the states: %w", e)
		}
	}
	fixed := int64(w.sItemOff.n + w.sCls.n + w.sPi.n + w.sRem.n + w.sRowOff.n + w.sCat.n + w.sP.n)
	block := g.Block
	if block == 0 {
		block = defaultRoundsBlock
	}
	for lo := 0; lo < len(run); {
		avail, err := budget(d, g.MemoryFraction)
		if err != nil {
			return err
		}
		// What this call holds is available to it again, less the states.
		avail += w.held() - fixed
		n, need := 0, int64(0)
		for lo+n < len(run) && n < block {
			x := w.itemBytes(lo+n, p)
			if need+x > avail {
				break
			}
			need += x
			n++
		}
		if n == 0 {
			return fmt.Errorf("gpu: Rounds: %d bytes of device memory cannot hold one item's round (%d bytes)", avail, w.itemBytes(lo, p))
		}
		if err := w.launch(d, lo, n, r, p, em); err != nil {
			return err
		}
		if err := done(w, lo, n); err != nil {
			return err
		}
		lo += n
	}
	return nil
}

// layout joins the flattened sources into one packed States and sizes
// every item's scratch (rounds.cu's layout).
func (w *roundsWork) layout(p *mixture.Params) {
	f := &w.flat
	parts := make([]mixture.States, len(f.Sources))
	w.base = w.base[:0]
	var items int32
	for i, s := range f.Sources {
		parts[i] = *s
		parts[i].Moved = nil
		w.base = append(w.base, items)
		items += int32(s.Len())
	}
	w.all.Concat(parts)
	s := &w.all
	w.hIdx = w.hIdx[:0]
	for j := range f.CompW {
		w.hIdx = append(w.hIdx, w.base[f.CompSrc[j]]+f.CompAt[j])
	}
	n := f.Len()
	l, tr, c := int64(p.L), int64(p.N), int64(p.C)
	ob := min(c, l*tr)
	w.hOwn, w.hMb, w.hEntries, w.hWs, w.hWi = w.hOwn[:0], w.hMb[:0], w.hEntries[:0], w.hWs[:0], w.hWi[:0]
	for t := 0; t < n; t++ {
		own := w.base[0] + f.Items[t]
		w.hOwn = append(w.hOwn, own)
		var entries int64
		for _, x := range w.hIdx[f.CompOff[t]:f.CompOff[t+1]] {
			entries += int64(s.ItemOff[x+1] - s.ItemOff[x])
		}
		mb := max(min(c, entries), 1)
		oc := int64(s.ItemOff[own+1] - s.ItemOff[own])
		w.hEntries = append(w.hEntries, entries)
		w.hMb = append(w.hMb, int32(mb))
		w.hWs = append(w.hWs, 7*mb+mb+oc+2*ob*mb)
		w.hWi = append(w.hWi, mb+ob+l*tr+3*(mb+oc))
	}
}

// itemBytes is the device memory item t's round takes beyond the states.
func (w *roundsWork) itemBytes(t int, p *mixture.Params) int64 {
	l, tr := int64(p.L), int64(p.N)
	c0, me := int64(p.C0), int64(p.MaxRowEntries)
	comps := int64(w.flat.CompOff[t+1] - w.flat.CompOff[t])
	return 4 + 16*comps + // compOff, compIdx, compW (and slack)
		8 + 4 + 8 + 8 + 8 + 4 + // keys, ownIdx, cumOff, wsOff, wiOff, mbOf
		4 + 4*(l+1) + 8*l*tr + 4*l + // the draws
		12*w.hEntries[t] + // cum, centry
		8*w.hWs[t] + 4*w.hWi[t] +
		4 + 16*c0 + 8*c0*me // the next states
}

// launch uploads the chunk of items lo .. lo+n-1 and runs rounds_sample
// (and rounds_em) on it.
func (w *roundsWork) launch(d backend, lo, n, r int, p *mixture.Params, em bool) error {
	f := &w.flat
	j0, j1 := f.CompOff[lo], f.CompOff[lo+n]
	w.cOff = w.cOff[:0]
	for _, x := range f.CompOff[lo : lo+n+1] {
		w.cOff = append(w.cOff, x-j0)
	}
	w.cCum, w.cWsOff, w.cWiOff = w.cCum[:0], w.cWsOff[:0], w.cWiOff[:0]
	var cum, ws, wi int64
	for t := lo; t < lo+n; t++ {
		w.cCum, w.cWsOff, w.cWiOff = append(w.cCum, cum), append(w.cWsOff, ws), append(w.cWiOff, wi)
		cum, ws, wi = cum+w.hEntries[t], ws+w.hWs[t], wi+w.hWi[t]
	}
	for _, e := range []error{
		upload(d, &w.compOff, w.cOff), upload(d, &w.compIdx, w.hIdx[j0:j1]), upload(d, &w.compW, f.CompW[j0:j1]),
		upload(d, &w.keys, f.Keys[lo:lo+n]), upload(d, &w.ownIdx, w.hOwn[lo:lo+n]), upload(d, &w.cumOff, w.cCum),
		upload(d, &w.wsOff, w.cWsOff), upload(d, &w.wiOff, w.cWiOff), upload(d, &w.mbOf, w.hMb[lo:lo+n]),
	} {
		if e != nil {
			return fmt.Errorf("gpu: Rounds: uploading: %w", e)
		}
	}
	l, tr := p.L, p.N
	c0, me := p.C0, p.MaxRowEntries
	for _, e := range []error{
		w.nvec.reserve(d, 4*n), w.off.reserve(d, 4*n*(l+1)), w.cat.reserve(d, 4*n*l*tr),
		w.cnt.reserve(d, 4*n*l*tr), w.w.reserve(d, 4*n*l),
		w.cum.reserve(d, int(8*max(cum, 1))), w.centry.reserve(d, int(4*max(cum, 1))),
	} {
		if e != nil {
			return e
		}
	}
	grid := [3]int{(n + roundsThreads - 1) / roundsThreads, 1, 1}
	iid := 0
	if p.Draws == mixture.IID {
		iid = 1
	}
	if err := d.launch("rounds_sample", grid, [3]int{roundsThreads, 1, 1}, 0, args(
		w.nvec.p, w.off.p, w.cat.p, w.cnt.p, w.w.p, w.cum.p, w.centry.p,
		w.sItemOff.p, w.sCls.p, w.sPi.p, w.sRem.p, w.sRowOff.p, w.sCat.p, w.sP.p,
		w.compOff.p, w.compIdx.p, w.compW.p, w.keys.p, w.cumOff.p,
		n, l, tr, p.C, iid, int64(p.Seed), r)); err != nil {
		return fmt.Errorf("gpu: Rounds: rounds_sample: %w", err)
	}
	if !em {
		return nil
	}
	for _, e := range []error{
		w.ws.reserve(d, int(8*max(ws, 1))), w.wi.reserve(d, int(4*max(wi, 1))),
		w.outN.reserve(d, 4*n), w.ocls.reserve(d, 4*n*c0), w.opi.reserve(d, 4*n*c0), w.orem.reserve(d, 4*n*c0),
		w.olen.reserve(d, 4*n*c0), w.ocat.reserve(d, 4*n*c0*me), w.op.reserve(d, 4*n*c0*me),
	} {
		if e != nil {
			return e
		}
	}
	if err := d.launch("rounds_em", grid, [3]int{roundsThreads, 1, 1}, 0, args(
		w.outN.p, w.ocls.p, w.opi.p, w.orem.p, w.olen.p, w.ocat.p, w.op.p,
		w.ws.p, w.wsOff.p, w.wi.p, w.wiOff.p, w.mbOf.p,
		w.nvec.p, w.off.p, w.cat.p, w.cnt.p, w.w.p,
		w.sItemOff.p, w.sCls.p, w.sPi.p, w.sRem.p, w.sRowOff.p, w.sCat.p, w.sP.p,
		w.compOff.p, w.compIdx.p, w.compW.p, w.ownIdx.p,
		n, l, tr, p.C, c0, me, p.EMIters,
		p.EMTol, p.Alpha, p.Beta, p.Gamma, p.Smooth, p.MinClassMass, math.Exp(-40))); err != nil {
		return fmt.Errorf("gpu: Rounds: rounds_em: %w", err)
	}
	return nil
}
