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
// stacks that relabel's own final message already sums up), each distinct
// line once. With --verbose, relabel installs Beam's handler unchanged
// instead.
type Quiet struct {
	print func(string)
	mu    *sync.Mutex
	seen  map[string]bool
}

// NewQuiet prints the kept lines with print (the display's Printf).
func NewQuiet(print func(string)) *Quiet {
	return &Quiet{print: print, mu: new(sync.Mutex), seen: map[string]bool{}}
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
	q.mu.Unlock()
	if !dup {
		q.print(line)
	}
	return nil
}

func (q *Quiet) WithAttrs([]slog.Attr) slog.Handler { return q }
func (q *Quiet) WithGroup(string) slog.Handler      { return q }
