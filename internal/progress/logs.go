package progress

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Quiet is the slog handler `relabel run` installs over Beam's and Prism's
// logging (both log through slog's default logger, and the standard log
// package is routed there too): INFO and DEBUG records (job ids, staged
// artifacts, worker start and stop) are dropped; warnings and errors are kept,
// condensed to their message's first line (Beam's errors carry plan dumps and
// stacks), each distinct line once. Errors are held until the run ends: when
// it fails, relabel's own one-line message names the cause and Beam's echoes
// of it (five or six per failed bundle) are dropped (Dropped says how many);
// when it succeeds (a retried bundle), Flush shows them. With --verbose,
// relabel keeps Beam's handler unchanged instead.
type Quiet struct {
	print func(string)
	mu    *sync.Mutex
	seen  map[string]bool
	held  *[]string
	full  *[]string // the held errors' whole messages, for Cause
}

// NewQuiet prints the kept lines with print (the display's Printf).
func NewQuiet(print func(string)) *Quiet {
	return &Quiet{print: print, mu: new(sync.Mutex), seen: map[string]bool{}, held: new([]string), full: new([]string)}
}

// Flush prints the held error lines (a run that succeeded despite them).
func (q *Quiet) Flush() {
	q.mu.Lock()
	held := *q.held
	*q.held = nil
	q.mu.Unlock()
	for _, l := range held {
		q.print(l)
	}
}

// Cause returns the first held error message that contains one of the
// prefixes, from that prefix to the end of its line: relabel's own error
// (shardio: file row column: why) as a worker raised it, for a failure
// whose returned error lost it (Prism sometimes reports a failed job before
// the bundle's error reaches the job's result).
func (q *Quiet) Cause(prefixes ...string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range *q.full {
		for _, p := range prefixes {
			if i := strings.Index(m, p); i >= 0 {
				m = m[i:]
				if j := strings.IndexByte(m, '\n'); j >= 0 {
					m = m[:j]
				}
				return strings.TrimSpace(m)
			}
		}
	}
	return ""
}

// Dropped forgets the held error lines and returns how many there were (a
// failed run: its own error says what matters).
func (q *Quiet) Dropped() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(*q.held)
	*q.held = nil
	return n
}

// MaxLine bounds a condensed line.
const MaxLine = 240

func (q *Quiet) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (q *Quiet) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "error" || a.Key == "err" {
			msg += ": " + a.Value.String()
		}
		return true
	})
	msg = strings.TrimSpace(msg)
	whole := msg
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[:i]) + " …"
	}
	if len(msg) > MaxLine {
		msg = msg[:MaxLine] + " …"
	}
	kind := "warning"
	if r.Level >= slog.LevelError {
		kind = "error"
	}
	line := "relabel: beam " + kind + ": " + msg
	q.mu.Lock()
	dup := q.seen[line]
	q.seen[line] = true
	if r.Level >= slog.LevelError {
		*q.full = append(*q.full, whole)
	}
	if !dup && r.Level >= slog.LevelError {
		*q.held = append(*q.held, line)
		dup = true
	}
	q.mu.Unlock()
	if !dup {
		q.print(line)
	}
	return nil
}

func (q *Quiet) WithAttrs([]slog.Attr) slog.Handler { return q }
func (q *Quiet) WithGroup(string) slog.Handler      { return q }
