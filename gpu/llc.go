//go:build cuda || cudaemu

package gpu

import (
	"fmt"
	"sync"

	"github.com/relabel/relabel/transforms/llc"
)

// Launch shape of gpu/kernels/llc.cu; it must match its #defines.
const (
	llcThreads = 128 // LLC_THREADS
	llcTD      = 16  // LLC_TD

	// sharedLimit is the dynamic shared memory a block may take without
	// opting in to more (48 KiB on every architecture since sm_20).
	sharedLimit = 48 << 10

	defaultCoderBlock = 65536
)

// Status codes of llc_code (LLC_OK ... LLC_BAD_LEN in llc.cu).
const (
	llcOK = iota
	llcNonFinite
	llcNaNDist
	llcLocOverflow
	llcNoConverge
	llcBadLen
)

var _ llc.Coder = Coder{}

// llcShared is the dynamic shared memory of one llc_code block: the staged
// differences (k x llcTD) and four k-vectors of float64, G and its factor
// (k x k each) when sharedGL, and two k-vectors of int32.
func llcShared(k int, sharedGL bool) int {
	n := 8*(k*llcTD+4*k) + 4*2*k
	if sharedGL {
		n += 8 * 2 * k * k
	}
	return n
}

// llcWork is the device memory of one Code call, kept for the next.
type llcWork struct {
	x, nb, dist, lens, dst, status, gl buffer
	hostLen                            []int32
	hostStatus                         []int32
}

// llcPool holds the workspaces of finished Code calls. Their device memory
// lives as long as the process (one per concurrent caller at most), which is
// what a worker that codes batch after batch wants.
var llcPool freeList[llcWork]

// freeList holds finished calls' workspaces for the next call to reuse
// (their device buffers with them): the last one put back is taken first.
type freeList[T any] struct {
	sync.Mutex
	free []*T
}

// get takes a workspace, a new one where none is free.
func (l *freeList[T]) get() *T {
	l.Lock()
	defer l.Unlock()
	if n := len(l.free); n > 0 {
		w := l.free[n-1]
		l.free = l.free[:n-1]
		return w
	}
	return new(T)
}

// put returns w for a later get.
func (l *freeList[T]) put(w *T) {
	l.Lock()
	defer l.Unlock()
	l.free = append(l.free, w)
}

func (w *llcWork) held() int64 {
	var n int64
	for _, b := range []*buffer{&w.x, &w.nb, &w.dist, &w.lens, &w.dst, &w.status, &w.gl} {
		n += int64(b.n)
	}
	return n
}

// Code implements llc.Coder with llc.CPU's contract: it returns the error of
// the lowest-numbered neighbourhood that failed, with the CPU's message; rows
// of failed or later neighbourhoods are then unspecified. Slices too short for
// b's shape panic.
func (c Coder) Code(dst []float64, b llc.Batch, p llc.Params) error {
	if err := p.Validate(); err != nil {
		return err
	}
	b.Check(dst, p.Lambda > 0)
	if b.B == 0 {
		return nil
	}
	if b.K == 0 {
		return fmt.Errorf("llc: batch of %d neighbourhoods with K = 0", b.B)
	}
	if c.Block < 0 || c.MemoryFraction < 0 || c.MemoryFraction > 1 {
		return fmt.Errorf("gpu: Coder: option out of range in %+v", c)
	}
	k, dim := b.K, b.D
	sharedGL := llcShared(k, true) <= sharedLimit
	shmem := llcShared(k, sharedGL)
	if shmem > sharedLimit {
		return fmt.Errorf("gpu: Coder: K = %d needs %d bytes of shared memory, more than %d", k, shmem, sharedLimit)
	}
	d, err := device()
	if err != nil {
		return err
	}
	w := llcPool.get()
	defer llcPool.put(w)

	lens := b.Len
	if lens == nil {
		w.hostLen = grow(w.hostLen, b.B)
		for i := range w.hostLen {
			w.hostLen[i] = int32(k)
		}
		lens = w.hostLen
	}

	release, err := d.bind()
	if err != nil {
		return err
	}
	defer release()
	avail, err := budget(d, c.MemoryFraction)
	if err != nil {
		return err
	}
	avail += w.held()
	per := int64(4*(dim+k*dim+k+1) + 8*k + 8)
	if !sharedGL {
		per += int64(8 * 2 * k * k)
	}
	block := c.Block
	if block == 0 {
		block = defaultCoderBlock
	}
	block = int(min(int64(block), int64(b.B), avail/per))
	if block < 1 {
		return fmt.Errorf("gpu: Coder: %d bytes of device memory cannot hold one neighbourhood (%d bytes)", avail, per)
	}

	for b0 := 0; b0 < b.B; b0 += block {
		nb := min(block, b.B-b0)
		if err := upload(d, &w.x, b.X[b0*dim:(b0+nb)*dim]); err != nil {
			return err
		}
		if err := upload(d, &w.nb, b.N[b0*k*dim:(b0+nb)*k*dim]); err != nil {
			return err
		}
		var dist dptr
		if p.Lambda > 0 {
			if err := upload(d, &w.dist, b.Dist[b0*k:(b0+nb)*k]); err != nil {
				return err
			}
			dist = w.dist.p
		}
		if err := upload(d, &w.lens, lens[b0:b0+nb]); err != nil {
			return err
		}
		if err := w.dst.reserve(d, 8*nb*k); err != nil {
			return err
		}
		if err := w.status.reserve(d, 4*2*nb); err != nil {
			return err
		}
		var gl dptr
		if !sharedGL {
			if err := w.gl.reserve(d, 8*2*k*k*nb); err != nil {
				return err
			}
			gl = w.gl.p
		}
		shared := 0
		if sharedGL {
			shared = 1
		}
		if err := d.launch("llc_code", [3]int{nb, 1, 1}, [3]int{llcThreads, 1, 1}, shmem, args(
			w.dst.p, w.status.p, gl, w.x.p, w.nb.p, dist, w.lens.p,
			0, k, dim, shared, p.Lambda, p.Sigma, p.Ridge, p.Tol, p.MaxIter)); err != nil {
			return fmt.Errorf("gpu: Coder: llc_code: %w", err)
		}
		w.hostStatus = grow(w.hostStatus, 2*nb)
		if err := download(d, w.hostStatus, &w.status); err != nil {
			return fmt.Errorf("gpu: Coder: copying status: %w", err)
		}
		if err := download(d, dst[b0*k:(b0+nb)*k], &w.dst); err != nil {
			return fmt.Errorf("gpu: Coder: copying weights: %w", err)
		}
		for i := 0; i < nb; i++ {
			if err := llcError(w.hostStatus[2*i], w.hostStatus[2*i+1], b0+i, b, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// llcError turns the status of neighbourhood i into llc.CPU's error.
func llcError(code, j int32, i int, b llc.Batch, p llc.Params) error {
	switch code {
	case llcOK:
		return nil
	case llcBadLen:
		return fmt.Errorf("llc: neighbourhood %d: Len = %d, want in [1, K=%d]", i, j, b.K)
	case llcNonFinite:
		return fmt.Errorf("llc: neighbourhood %d: neighbour %d: non-finite coordinates in it or in the query", i, j)
	case llcNaNDist:
		return fmt.Errorf("llc: neighbourhood %d: neighbour %d: distance is NaN", i, j)
	case llcLocOverflow:
		dj := float64(b.Dist[i*b.K+int(j)])
		return fmt.Errorf("llc: neighbourhood %d: neighbour %d: locality term Lambda*exp(2*%g/Sigma) overflows float64; raise Sigma", i, j, dj)
	case llcNoConverge:
		return fmt.Errorf("llc: neighbourhood %d: QP did not converge in %d iterations", i, p.MaxIter)
	}
	return fmt.Errorf("gpu: Coder: neighbourhood %d: unknown status %d", i, code)
}
