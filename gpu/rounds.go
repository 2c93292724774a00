//go:build cuda || cudaemu

package gpu

import (
	"fmt"
	"math"
	"runtime"
	"sync"

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
	// inputs: the components' and the own states, weights, keys, the
	// items' scratch offsets and class-set bounds
	cItemOff, cCls, cPi, cRem, cRowOff, cCat, cP buffer
	oItemOff, oCls, oPi, oRem, oRowOff, oCat, oP buffer
	compOff, compW, keys, wsOff, wiOff, mbOf     buffer
	// the draws
	nvec, off, cat, cnt, w, cum, centry buffer
	// EM scratch and the next states
	ws, wi, outN, ocls, opi, orem, olen, ocat, op buffer

	hWsOff, hWiOff []int64
	hMb            []int32
	// wsTotal and wiTotal are the chunk's EM scratch, in doubles and ints.
	wsTotal, wiTotal int64
}

var roundsPool struct {
	sync.Mutex
	free []*roundsWork
}

func getRoundsWork() *roundsWork {
	roundsPool.Lock()
	defer roundsPool.Unlock()
	if n := len(roundsPool.free); n > 0 {
		w := roundsPool.free[n-1]
		roundsPool.free = roundsPool.free[:n-1]
		return w
	}
	return new(roundsWork)
}

func putRoundsWork(w *roundsWork) {
	roundsPool.Lock()
	defer roundsPool.Unlock()
	roundsPool.free = append(roundsPool.free, w)
}

func (w *roundsWork) buffers() []*buffer {
	return []*buffer{&w.cItemOff, &w.cCls, &w.cPi, &w.cRem, &w.cRowOff, &w.cCat, &w.cP,
		&w.oItemOff, &w.oCls, &w.oPi, &w.oRem, &w.oRowOff, &w.oCat, &w.oP,
		&w.compOff, &w.compW, &w.keys, &w.wsOff, &w.wiOff, &w.mbOf,
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

// next is one chunk's next states as the kernels wrote them: per item its
// class count (-1: keep its state), then c0 slots of class, pi, remainder
// and up to maxEntries entries.
type next struct {
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
	res := make([]next, 0, 1)
	starts := []int{}
	err := g.each(b, run, r, p, true, func(w *roundsWork, lo, n int) error {
		c0, me := p.C0, p.MaxRowEntries
		x := next{n: make([]int32, n), cls: make([]int32, n*c0), len: make([]int32, n*c0),
			pi: make([]float32, n*c0), rem: make([]float32, n*c0), cat: make([]int32, n*c0*me), p: make([]float32, n*c0*me)}
		d, _ := device()
		for _, cp := range []struct {
			err error
		}{
			{download(d, x.n, &w.outN)}, {download(d, x.cls, &w.ocls)}, {download(d, x.len, &w.olen)},
			{download(d, x.pi, &w.opi)}, {download(d, x.rem, &w.orem)}, {download(d, x.cat, &w.ocat)}, {download(d, x.p, &w.op)},
		} {
			if cp.err != nil {
				return fmt.Errorf("gpu: Rounds: copying the next states: %w", cp.err)
			}
		}
		res = append(res, x)
		starts = append(starts, lo)
		return nil
	})
	if err != nil {
		return mixture.States{}, 0, err
	}
	chunk := 0
	out := b.Collect(run, p, func(t int, dst *mixture.State) bool {
		for chunk+1 < len(starts) && t >= starts[chunk+1] {
			chunk++
		}
		return res[chunk].state(t-starts[chunk], p, dst)
	})
	return out, len(run), nil
}

// state unpacks item t of the chunk into dst; false when the item keeps
// its own state.
func (x *next) state(t int, p *mixture.Params, dst *mixture.State) bool {
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
// launches with the chunk's first position in run and its length.
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
	w := getRoundsWork()
	defer putRoundsWork(w)
	release, err := d.bind()
	if err != nil {
		return err
	}
	defer release()
	block := g.Block
	if block == 0 {
		block = defaultRoundsBlock
	}
	for lo := 0; lo < len(run); {
		avail, err := budget(d, g.MemoryFraction)
		if err != nil {
			return err
		}
		avail += w.held()
		n := min(block, len(run)-lo)
		for {
			w.flat.Reset()
			b.Flatten(&w.flat, run[lo:lo+n], p)
			need := w.size(p)
			if need <= avail {
				break
			}
			if n == 1 {
				return fmt.Errorf("gpu: Rounds: %d bytes of device memory cannot hold one item's round (%d bytes)", avail, need)
			}
			n = (n + 1) / 2
		}
		if err := w.launch(d, r, p, em); err != nil {
			return err
		}
		if err := done(w, lo, n); err != nil {
			return err
		}
		lo += n
	}
	return nil
}

// size lays out the flattened chunk's scratch (its offsets into the EM
// scratch, rounds.cu's layout) and returns the device bytes the chunk needs.
func (w *roundsWork) size(p *mixture.Params) int64 {
	f := &w.flat
	n := f.Len()
	l, tr, c := int64(p.L), int64(p.N), int64(p.C)
	ob := min(c, l*tr)
	w.hWsOff, w.hWiOff, w.hMb = w.hWsOff[:0], w.hWiOff[:0], w.hMb[:0]
	var ws, wi int64
	for t := 0; t < n; t++ {
		entries := int64(f.Comp.ItemOff[f.CompOff[t+1]] - f.Comp.ItemOff[f.CompOff[t]])
		mb := max(min(c, entries), 1)
		own := int64(f.Own.ItemOff[t+1] - f.Own.ItemOff[t])
		w.hWsOff = append(w.hWsOff, ws)
		w.hWiOff = append(w.hWiOff, wi)
		w.hMb = append(w.hMb, int32(mb))
		ws += 7*mb + mb + own + 2*ob*mb
		wi += mb + ob + l*tr + 3*(mb+own)
	}
	w.wsTotal, w.wiTotal = ws, wi
	states := func(s *mixture.States) int64 {
		return int64(4 * (len(s.ItemOff) + len(s.Class) + len(s.Pi) + len(s.Rem) + len(s.RowOff) + len(s.Cat) + len(s.P)))
	}
	nn := int64(n)
	c0, me := int64(p.C0), int64(p.MaxRowEntries)
	return states(&f.Comp) + states(&f.Own) + 4*int64(len(f.CompOff)) + 8*int64(len(f.CompW)) +
		8*nn + 8*nn + 8*nn + 4*nn + // keys, wsOff, wiOff, mbOf
		4*nn + 4*nn*(l+1) + 8*nn*l*tr + 4*nn*l + // the draws
		12*int64(len(f.Comp.Class)) + // cum, centry
		8*ws + 4*wi +
		4*nn + 16*nn*c0 + 8*nn*c0*me // the next states
}

// launch uploads the flattened chunk and runs rounds_sample (and rounds_em).
func (w *roundsWork) launch(d backend, r int, p *mixture.Params, em bool) error {
	f := &w.flat
	n := f.Len()
	up := func(err error) error {
		if err != nil {
			return fmt.Errorf("gpu: Rounds: uploading: %w", err)
		}
		return nil
	}
	for _, e := range []error{
		upload(d, &w.cItemOff, f.Comp.ItemOff), upload(d, &w.cCls, f.Comp.Class), upload(d, &w.cPi, f.Comp.Pi),
		upload(d, &w.cRem, f.Comp.Rem), upload(d, &w.cRowOff, f.Comp.RowOff), upload(d, &w.cCat, f.Comp.Cat), upload(d, &w.cP, f.Comp.P),
		upload(d, &w.compOff, f.CompOff), upload(d, &w.compW, f.CompW), upload(d, &w.keys, f.Keys),
	} {
		if err := up(e); err != nil {
			return err
		}
	}
	l, tr := p.L, p.N
	for _, e := range []error{
		w.nvec.reserve(d, 4*n), w.off.reserve(d, 4*n*(l+1)), w.cat.reserve(d, 4*n*l*tr),
		w.cnt.reserve(d, 4*n*l*tr), w.w.reserve(d, 4*n*l),
		w.cum.reserve(d, 8*max(len(f.Comp.Class), 1)), w.centry.reserve(d, 4*max(len(f.Comp.Class), 1)),
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
		w.cItemOff.p, w.cCls.p, w.cPi.p, w.cRem.p, w.cRowOff.p, w.cCat.p, w.cP.p,
		w.compOff.p, w.compW.p, w.keys.p,
		n, l, tr, p.C, iid, int64(p.Seed), r)); err != nil {
		return fmt.Errorf("gpu: Rounds: rounds_sample: %w", err)
	}
	if !em {
		return nil
	}
	ws, wi := w.wsTotal, w.wiTotal
	c0, me := p.C0, p.MaxRowEntries
	for _, e := range []error{
		up(upload(d, &w.oItemOff, f.Own.ItemOff)), up(upload(d, &w.oCls, f.Own.Class)), up(upload(d, &w.oPi, f.Own.Pi)),
		up(upload(d, &w.oRem, f.Own.Rem)), up(upload(d, &w.oRowOff, f.Own.RowOff)), up(upload(d, &w.oCat, f.Own.Cat)),
		up(upload(d, &w.oP, f.Own.P)), up(upload(d, &w.wsOff, w.hWsOff)), up(upload(d, &w.wiOff, w.hWiOff)),
		up(upload(d, &w.mbOf, w.hMb)),
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
		w.cItemOff.p, w.cCls.p, w.cPi.p, w.compOff.p, w.compW.p,
		w.oItemOff.p, w.oCls.p, w.oPi.p, w.oRem.p, w.oRowOff.p, w.oCat.p, w.oP.p,
		n, l, tr, p.C, c0, me, p.EMIters,
		p.EMTol, p.Alpha, p.Beta, p.Gamma, p.Smooth, p.MinClassMass, math.Exp(-40))); err != nil {
		return fmt.Errorf("gpu: Rounds: rounds_em: %w", err)
	}
	return nil
}
