package progress

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
)

// A worker in another process than the launcher's (a worker pool's, a
// PROCESS command's, a container) has no Sink of the launcher's to report
// to. What it can reach is the runner: the SDK harness sends the worker's
// Beam log over the Fn logging API, and the embedded job server re-logs each
// entry through slog in the launching process, at the entry's severity. So
// the worker logs each event as one RelayLine, and the launcher's slog
// handler (Relayed) turns the lines back into events for its Sink, as if the
// stage had run in the launching process. A standalone job server keeps the
// lines in its own log.

// relayPrefix starts a relayed event's log message.
const relayPrefix = "relabel progress "

// sdkPrefix is what the embedded job server puts before a worker's message.
const sdkPrefix = "[SDK] "

// relayed is an Event on the wire.
type relayed struct {
	Kind   Kind   `json:"kind"`
	Path   string `json:"path,omitempty"`
	From   int64  `json:"from,omitempty"`
	To     int64  `json:"to,omitempty"`
	Round  int    `json:"round,omitempty"`
	Rounds int    `json:"rounds,omitempty"`
	Text   string `json:"text,omitempty"`
}

// RelayLine is e as a worker logs it for the launcher (ParseRelay reads it).
func RelayLine(e Event) string {
	b, err := json.Marshal(relayed{Kind: e.Kind, Path: e.Path, From: e.From, To: e.To, Round: e.Round, Rounds: e.Rounds, Text: e.Text})
	if err != nil { // no field of relayed can fail to encode
		panic(err)
	}
	return relayPrefix + string(b)
}

// ParseRelay returns the event a RelayLine carries, the job server's "[SDK] "
// before it allowed. Only what stages report from workers is taken (rows
// read, a round started, a note); the plan and the launcher's stages come
// from the launcher itself, and a worker's line cannot reset them.
func ParseRelay(msg string) (Event, bool) {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(msg, sdkPrefix), relayPrefix)
	if !ok {
		return Event{}, false
	}
	var r relayed
	if err := json.Unmarshal([]byte(rest), &r); err != nil {
		return Event{}, false
	}
	e := Event{Kind: r.Kind, Path: r.Path, From: r.From, To: r.To, Round: r.Round, Rounds: r.Rounds, Text: r.Text}
	switch e.Kind {
	case Read:
		ok = e.From >= 0 && e.To >= e.From
	case Round:
		ok = e.Round >= 1 && e.Rounds >= e.Round
	case Note:
		ok = e.Text != ""
	default:
		ok = false
	}
	return e, ok
}

// Relayed is an slog handler over next that hands the events workers relay
// (RelayLine, logged at INFO) to sink, and every other record to next as
// before.
func Relayed(next slog.Handler, sink Sink) slog.Handler {
	return relayHandler{next: next, sink: sink}
}

type relayHandler struct {
	next slog.Handler
	sink Sink
}

func (h relayHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l == slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h relayHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		if e, ok := ParseRelay(r.Message); ok {
			h.sink(e)
			return nil
		}
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h relayHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return relayHandler{next: h.next.WithAttrs(as), sink: h.sink}
}

func (h relayHandler) WithGroup(name string) slog.Handler {
	return relayHandler{next: h.next.WithGroup(name), sink: h.sink}
}
