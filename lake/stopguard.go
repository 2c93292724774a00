package lake

import (
	"sync"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/io/icebergio"
)

// stopGuard is what a table-lake run has written and not yet committed, for
// both ways a run ends early: an error on the normal path (done), and a
// second SIGINT or SIGTERM, whose exit does not wait for the run but runs
// internal/atexit's clean-ups. A plain or directory-lake
// run needs none of this: its files live in one temporary directory that
// job.Session removes through atexit. A table run's files sit in the
// table's data directory, and once its commit has started they may be what the new
// snapshot points at, so the signal's clean-up leaves them from then on; if
// that commit did not land, they are orphans, which the next run's orphan
// clean-up removes (icebergio, Iceberg's orphan-file rules).
type stopGuard struct {
	mu   sync.Mutex
	undo func()
	hook *atexit.Hook
}

// onStop registers undo, which removes what the run wrote to out; a signal
// runs it only while out's commit has not started (Output.Committing). What
// undo reads must change only through set, since a signal may run it at any
// time.
func onStop(out *icebergio.Output, undo func()) *stopGuard {
	g := &stopGuard{undo: undo}
	g.hook = atexit.Push(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !out.Committing() {
			undo()
		}
	})
	return g
}

// set runs f under the guard's lock.
func (g *stopGuard) set(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f()
}

// done unregisters the signal's clean-up and, when the run did not commit,
// removes what it wrote, as the normal path always has.
func (g *stopGuard) done(committed bool) {
	g.hook.Drop()
	if !committed {
		g.set(g.undo)
	}
}
