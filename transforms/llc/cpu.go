package llc

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// CPU codes neighbourhoods in pure Go, exactly: per neighbourhood it forms the
// Gram matrix in float64 and solves the simplex QP by an active-set method (see
// Params for the problem, including the ridge). Neighbourhoods are spread over
// goroutines; each goroutine reuses one workspace, so coding allocates nothing
// per neighbourhood. The zero value is ready to use.
type CPU struct {
	// Workers is how many goroutines share a batch. Optional, default
	// runtime.GOMAXPROCS(0). Results do not depend on it: each neighbourhood is
	// coded by the same sequence of float64 operations whatever goroutine runs it.
	Workers int
}

// pool holds workspaces across Code calls, so that small batches (one Beam
// bundle at a time) do not allocate fresh buffers either.
var pool = sync.Pool{New: func() any { return new(workspace) }}

// chunk is how many neighbourhoods a worker claims at a time: enough to make
// the atomic counter cheap, few enough to balance on a shared machine.
const chunk = 16

// Code writes the weights of neighbourhood i to dst[i*K:(i+1)*K]. It returns
// the error of the lowest-numbered neighbourhood that failed (non-finite data,
// Len outside [1,K], an overflowing locality term); rows of failed or later
// neighbourhoods are then unspecified. Slices too short for b's shape panic.
func (c CPU) Code(dst []float64, b Batch, p Params) error {
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
	chunks := (b.B + chunk - 1) / chunk
	workers := c.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, chunks)

	if workers == 1 {
		return codeSerial(dst, &b, &p)
	}
	return codeParallel(dst, b, p, workers)
}

// codeSerial codes every neighbourhood of b on the calling goroutine, without
// allocating once the pool holds a workspace of the right size.
func codeSerial(dst []float64, b *Batch, p *Params) error {
	w := pool.Get().(*workspace)
	defer pool.Put(w)
	for i := 0; i < b.B; i++ {
		if err := codeOne(w, dst, b, p, i); err != nil {
			return err
		}
	}
	return nil
}

// codeParallel codes b on the given number of goroutines. Workers claim
// chunks in increasing order and stop at their first error. A chunk starting
// past the lowest failure so far is skipped, but every chunk before it is
// coded in full, so the error returned is always the lowest-numbered one,
// whatever the scheduling.
func codeParallel(dst []float64, b Batch, p Params, workers int) error {
	var (
		next   atomic.Int64
		lowest atomic.Int64
		wg     sync.WaitGroup
		errs   = make([]error, workers)
		errAt  = make([]int, workers)
	)
	lowest.Store(int64(b.B))
	for wk := 0; wk < workers; wk++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := pool.Get().(*workspace)
			defer pool.Put(w)
			for {
				start := int(next.Add(1)-1) * chunk
				if start >= b.B || int64(start) > lowest.Load() {
					return
				}
				for i := start; i < min(start+chunk, b.B); i++ {
					if err := codeOne(w, dst, &b, &p, i); err != nil {
						errs[wk], errAt[wk] = err, i
						for {
							cur := lowest.Load()
							if int64(i) >= cur || lowest.CompareAndSwap(cur, int64(i)) {
								break
							}
						}
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	var first error
	at := b.B
	for wk, err := range errs {
		if err != nil && errAt[wk] < at {
			first, at = err, errAt[wk]
		}
	}
	return first
}

// codeOne codes neighbourhood i of b into its row of dst.
func codeOne(w *workspace, dst []float64, b *Batch, p *Params, i int) error {
	k, d := b.K, b.D
	row := dst[i*k : (i+1)*k]
	n := k
	if b.Len != nil {
		n = int(b.Len[i])
		if n < 1 || n > k {
			return fmt.Errorf("llc: neighbourhood %d: Len = %d, want in [1, K=%d]", i, n, k)
		}
	}
	var dist []float32
	if p.Lambda > 0 {
		dist = b.Dist[i*k : i*k+n]
	}
	if err := w.code(row, b.X[i*d:(i+1)*d], b.N[i*k*d:(i*k+n)*d], dist, n, d, p); err != nil {
		return fmt.Errorf("llc: neighbourhood %d: %w", i, err)
	}
	for j := n; j < k; j++ {
		row[j] = 0 // padding
	}
	return nil
}
