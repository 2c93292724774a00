// Package atexit holds the clean-ups a process must still run when it exits
// at once: relabel's second SIGINT or SIGTERM exits without waiting for the
// stopped pipeline to return, but must still leave nothing the run
// created (its temporary directory, lock, spill directory, and the output
// directory it made). Each clean-up is registered where its path is made and
// runs exactly once: on the normal path (Hook.Run, deferred as before) or
// from RunAll on the way out, whichever comes first.
//
// os/signal and the standard library offer no exit hooks (os.Exit runs no
// defers), and the Beam SDK's own hooks (beam/core/util/hooks) are for worker
// harness set-up, so this small registry is written here.
package atexit

import (
	"sync"
	"time"
)

// Hook is one registered clean-up.
type Hook struct {
	once sync.Once
	f    func()
}

var (
	mu    sync.Mutex
	hooks []*Hook
)

// Push registers f, to run once: by Run or RunAll, whichever comes first.
func Push(f func()) *Hook {
	h := &Hook{f: f}
	mu.Lock()
	hooks = append(hooks, h)
	mu.Unlock()
	return h
}

// Run runs the clean-up now (unless it ran already, or is running, in which
// case Run waits for it) and unregisters it.
func (h *Hook) Run() {
	h.once.Do(h.f)
	h.Drop()
}

// Drop unregisters the clean-up without running it.
func (h *Hook) Drop() {
	mu.Lock()
	defer mu.Unlock()
	for i, g := range hooks {
		if g == h {
			hooks = append(hooks[:i], hooks[i+1:]...)
			return
		}
	}
}

// RunAll runs every registered clean-up not yet run, the latest registered
// first (a temporary directory before the output directory that holds it),
// and returns when they are done or after wait, whichever is sooner: a
// clean-up stuck on a remote store must not keep a process from exiting.
// It reports whether all finished.
func RunAll(wait time.Duration) bool {
	mu.Lock()
	hs := append([]*Hook(nil), hooks...)
	mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := len(hs) - 1; i >= 0; i-- {
			hs[i].once.Do(hs[i].f)
		}
	}()
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}
