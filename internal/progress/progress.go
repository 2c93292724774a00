// Package progress carries a run's progress from where it happens (the
// launcher's plan and commit, the stages' reads and rounds) to whoever shows
// it. On the embedded runner with LOOPBACK workers the stages run in the
// launching process, so a Sink installed there (the terminal display of
// `relabel run`) sees every event as it happens. A worker in another process
// installs a Sink that logs each event as a RelayLine through Beam's log,
// which reaches the runner; the embedded runner re-logs it in the launching
// process, where Relayed hands it to the display (relay.go says why this
// way). Without a Sink (a test, Beam's own runners) each event is one plain
// log line.
//
// Beam metrics (beam.NewCounter) reach the launcher too, but a counter needs
// the bundle's context, which Report's callers do not pass.
package progress

import (
	"fmt"
	"log"
	"sync/atomic"
)

// Kind says what an Event reports.
type Kind int

const (
	// Planned: the input was scanned; Rows, Shards and Rounds are the run's
	// totals.
	Planned Kind = iota
	// Stage: the run entered stage Text (read, rounds, write, commit).
	Stage
	// Read: rows From..To of the shard at Path were read.
	Read
	// Round: round Round (1-based) of Rounds started.
	Round
	// Note: a line worth showing as it is (Text).
	Note
)

// Event is one piece of progress.
type Event struct {
	Kind     Kind
	Path     string
	From, To int64
	Rows     int64
	Shards   int
	Round    int
	Rounds   int
	Text     string
}

// String is the event as a log line (what a worker without a Sink logs).
func (e Event) String() string {
	switch e.Kind {
	case Planned:
		return fmt.Sprintf("relabel: %d rows in %d shards, %d rounds", e.Rows, e.Shards, e.Rounds)
	case Stage:
		return "relabel: " + e.Text
	case Read:
		return fmt.Sprintf("relabel: read %s rows %d..%d", e.Path, e.From, e.To)
	case Round:
		return fmt.Sprintf("relabel: round %d/%d started", e.Round, e.Rounds)
	default:
		return "relabel: " + e.Text
	}
}

// Sink receives events; it must be safe for concurrent use (stages run on
// many goroutines).
type Sink func(Event)

var sink atomic.Pointer[Sink]

// Install makes s this process's sink until the returned function is called.
func Install(s Sink) (uninstall func()) {
	sink.Store(&s)
	return func() { sink.CompareAndSwap(&s, nil) }
}

// Report hands e to the installed sink, or logs it when there is none.
func Report(e Event) {
	if s := sink.Load(); s != nil {
		(*s)(e)
		return
	}
	log.Print(e.String())
}

// ReadRows reports rows from..to of path read.
func ReadRows(path string, from, to int64) {
	Report(Event{Kind: Read, Path: path, From: from, To: to})
}

// RoundStarted reports round r (0-based) of rounds started.
func RoundStarted(r, rounds int) { Report(Event{Kind: Round, Round: r + 1, Rounds: rounds}) }

// Notef reports a line of text.
func Notef(format string, args ...any) { Report(Event{Kind: Note, Text: fmt.Sprintf(format, args...)}) }

// StageStarted reports that the run entered a stage.
func StageStarted(name string) { Report(Event{Kind: Stage, Text: name}) }
