package pool

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestEach: every index is visited exactly once at awkward sizes and worker
// counts, and a goroutine's workspace is never shared with another while
// in use.
func TestEach(t *testing.T) {
	type ws struct {
		busy bool
		used int
	}
	var scratch Scratch[ws]
	for _, n := range []int{0, 1, Chunk - 1, Chunk, Chunk + 1, 10*Chunk + 3} {
		for _, workers := range []int{0, 1, 3, 64} {
			for _, sc := range []*Scratch[ws]{nil, &scratch} {
				hits := make([]int, n)
				var mu sync.Mutex
				shared := false
				Each(n, workers, sc, func(w *ws, i int) {
					mu.Lock()
					if w.busy {
						shared = true
					}
					w.busy = true
					mu.Unlock()
					hits[i]++
					w.used++
					mu.Lock()
					w.busy = false
					mu.Unlock()
				})
				for i, h := range hits {
					if h != 1 {
						t.Fatalf("n=%d workers=%d pooled=%v: index %d visited %d times", n, workers, sc != nil, i, h)
					}
				}
				if shared {
					t.Errorf("n=%d workers=%d pooled=%v: a workspace was used by two goroutines at once", n, workers, sc != nil)
				}
			}
		}
	}
}

// TestScratchReused: a Scratch hands back workspaces it was given, so a DoFn's
// buffers survive from one bundle to the next.
func TestScratchReused(t *testing.T) {
	type ws struct{ buf []float64 }
	var s Scratch[ws]
	Each(1, 1, &s, func(w *ws, i int) { w.buf = make([]float64, 100) })
	reused := false
	for range 10 { // sync.Pool may drop an item; a few tries make it certain enough
		Each(1, 1, &s, func(w *ws, i int) { reused = reused || cap(w.buf) == 100 })
		if reused {
			break
		}
	}
	if !reused {
		t.Errorf("workspace not reused across calls")
	}
}

// TestEachChunk: chunk c is [c Chunk, min((c+1) Chunk, n)), every chunk is
// handed out once, and Chunks counts them.
func TestEachChunk(t *testing.T) {
	for _, n := range []int{0, 1, Chunk, Chunk + 1, 5*Chunk - 1} {
		got := make([]int, Chunks(n))
		var mu sync.Mutex
		EachChunk(n, 3, nil, func(_ *struct{}, c, lo, hi int) {
			if lo != c*Chunk || hi != min(lo+Chunk, n) || lo >= hi {
				t.Errorf("n=%d: chunk %d is [%d, %d)", n, c, lo, hi)
			}
			mu.Lock()
			got[c]++
			mu.Unlock()
		})
		for c, h := range got {
			if h != 1 {
				t.Fatalf("n=%d: chunk %d handed out %d times", n, c, h)
			}
		}
		if c := Chunks(n); c*Chunk < n || n > 0 && (c-1)*Chunk >= n || n == 0 && c != 0 {
			t.Fatalf("n=%d: Chunks = %d does not cover n in whole chunks", n, c)
		}
	}
}

func TestEachIndex(t *testing.T) {
	for _, n := range []int{0, 1, 3, 100} {
		for _, workers := range []int{0, 1, 2, 7} {
			hits := make([]int32, n)
			var mu sync.Mutex
			EachIndex(n, workers, func(i int) {
				mu.Lock()
				hits[i]++
				mu.Unlock()
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("n=%d workers=%d: index %d visited %d times", n, workers, i, h)
				}
			}
		}
	}
	// Two pieces on two workers run at once: the second starts before
	// the first ends (EachChunk would run both on one goroutine).
	started := make(chan int, 2)
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		EachIndex(2, 2, func(i int) {
			started <- i
			<-release
		})
		close(done)
	}()
	<-started
	<-started
	close(release)
	<-done
}

// TestEachIndexErr: every index runs, and the error is the lowest failing
// index's whatever the workers; nil when none fails.
func TestEachIndexErr(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 7} {
		var ran atomic.Int32
		err := EachIndexErr(100, workers, func(i int) error {
			ran.Add(1)
			if i%30 == 29 {
				return fmt.Errorf("index %d", i)
			}
			return nil
		})
		if err == nil || err.Error() != "index 29" || ran.Load() != 100 {
			t.Errorf("workers=%d: error %v after %d calls, want index 29 after 100", workers, err, ran.Load())
		}
		if err := EachIndexErr(10, workers, func(int) error { return nil }); err != nil {
			t.Errorf("workers=%d: error %v, want nil", workers, err)
		}
	}
}

// TestEachIndexWith: every index runs once, each goroutine keeps one
// workspace of its own (no two goroutines hold the same one at once; at
// most workers exist), and the error is the lowest failing index's.
func TestEachIndexWith(t *testing.T) {
	type ws struct {
		busy atomic.Bool
		n    int
	}
	for _, workers := range []int{1, 2, 7} {
		var mu sync.Mutex
		seen := map[*ws]bool{}
		visits := make([]atomic.Int32, 200)
		err := EachIndexWith(len(visits), workers, func(w *ws, i int) error {
			if !w.busy.CompareAndSwap(false, true) {
				t.Errorf("workers=%d: a workspace used by two goroutines at once", workers)
			}
			defer w.busy.Store(false)
			mu.Lock()
			seen[w] = true
			mu.Unlock()
			w.n++
			visits[i].Add(1)
			if i%50 == 49 {
				return fmt.Errorf("index %d", i)
			}
			return nil
		})
		if err == nil || err.Error() != "index 49" {
			t.Errorf("workers=%d: error %v, want index 49", workers, err)
		}
		total := 0
		for w := range seen {
			total += w.n
		}
		if len(seen) > workers || total != len(visits) {
			t.Errorf("workers=%d: %d workspaces ran %d calls, want at most %d running %d", workers, len(seen), total, workers, len(visits))
		}
		for i := range visits {
			if v := visits[i].Load(); v != 1 {
				t.Fatalf("workers=%d: index %d ran %d times", workers, i, v)
			}
		}
	}
}

// TestWorkspaces: every index runs once, on one of at most workers
// workspaces, and the workspaces returned hold every index's work.
func TestWorkspaces(t *testing.T) {
	type acc struct{ seen []int }
	for _, tc := range []struct{ n, workers, want int }{{100, 4, 4}, {3, 8, 3}, {0, 2, 0}} {
		ws := Workspaces(tc.n, tc.workers, func() *acc { return &acc{} }, func(w *acc, i int) { w.seen = append(w.seen, i) })
		if len(ws) != tc.want {
			t.Errorf("n %d, workers %d: %d workspaces, want %d", tc.n, tc.workers, len(ws), tc.want)
		}
		count := make([]int, tc.n)
		for _, w := range ws {
			for _, i := range w.seen {
				count[i]++
			}
		}
		for i, c := range count {
			if c != 1 {
				t.Errorf("n %d: index %d ran %d times", tc.n, i, c)
			}
		}
	}
}
