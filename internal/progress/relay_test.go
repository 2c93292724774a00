package progress

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestRelayRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		e    Event
	}{
		{"round", Event{Kind: Round, Round: 2, Rounds: 5}},
		{"read", Event{Kind: Read, Path: "gs://b/in/part 1.parquet", From: 0, To: 4096}},
		{"read at an offset", Event{Kind: Read, Path: "/x.parquet", From: 4096, To: 8192}},
		{"note", Event{Kind: Note, Text: "ivf: 12 partitions fitted on 3,000 sampled rows of 9,000, 40 blocks"}},
		{"note with a newline", Event{Kind: Note, Text: "a\nb \"quoted\""}},
	}
	for _, tc := range tests {
		line := RelayLine(tc.e)
		if strings.Contains(line, "\n") {
			t.Errorf("%s: relay line %q spans lines", tc.name, line)
		}
		// As the worker sends it, and as the embedded job server re-logs it.
		for _, msg := range []string{line, sdkPrefix + line} {
			got, ok := ParseRelay(msg)
			if !ok || got != tc.e {
				t.Errorf("%s: ParseRelay(%q) = %+v, %v; want %+v", tc.name, msg, got, ok, tc.e)
			}
		}
	}
}

func TestParseRelayRefuses(t *testing.T) {
	tests := []struct {
		name, msg string
	}{
		{"plain log line", "relabel: round 2/5 started"},
		{"another SDK line", "[SDK] staged artifact"},
		{"prefix not at the start", "worker said: " + RelayLine(Event{Kind: Round, Round: 1, Rounds: 2})},
		{"broken JSON", relayPrefix + `{"kind":3,"round":`},
		{"a plan from a worker", RelayLine(Event{Kind: Planned, Rows: 10, Shards: 1, Rounds: 2})},
		{"a stage from a worker", RelayLine(Event{Kind: Stage, Text: "committing"})},
		{"round 0", RelayLine(Event{Kind: Round, Round: 0, Rounds: 2})},
		{"round past the last", RelayLine(Event{Kind: Round, Round: 3, Rounds: 2})},
		{"rows backwards", RelayLine(Event{Kind: Read, Path: "x", From: 10, To: 5})},
		{"empty note", RelayLine(Event{Kind: Note})},
		{"unknown kind", relayPrefix + `{"kind":99}`},
	}
	for _, tc := range tests {
		if e, ok := ParseRelay(tc.msg); ok {
			t.Errorf("%s: ParseRelay(%q) took %+v", tc.name, tc.msg, e)
		}
	}
}

// TestRelayed: the handler takes relayed INFO lines out for the sink (the
// display shows the rounds, the log does not show the lines) and passes
// everything else to the handler below as before.
func TestRelayed(t *testing.T) {
	var below bytes.Buffer
	next := slog.NewTextHandler(&below, &slog.HandlerOptions{Level: slog.LevelWarn})
	var shown bytes.Buffer
	d := NewDisplay(&shown, false, (&fakeClock{step: time.Second}).now)
	log := slog.New(Relayed(next, d.Handle))
	d.Handle(Event{Kind: Planned, Rows: 100, Shards: 1, Rounds: 2})
	log.Info(sdkPrefix + RelayLine(Event{Kind: Round, Round: 1, Rounds: 2}))
	log.Info(sdkPrefix + RelayLine(Event{Kind: Round, Round: 2, Rounds: 2}))
	log.Info("staged artifact")                                                    // INFO, not relayed: below drops it
	log.Warn("bundle retried")                                                     // passed on
	log.Warn(sdkPrefix + RelayLine(Event{Kind: Round, Round: 1, Rounds: 2}))       // a warning is never taken
	log.With("job", "j").Info(RelayLine(Event{Kind: Note, Text: "from a worker"})) // through WithAttrs too
	d.Stop()
	for _, want := range []string{"relabel: round 1/2\n", "relabel: round 2/2\n", "relabel: from a worker\n"} {
		if !strings.Contains(shown.String(), want) {
			t.Errorf("display lacks %q:\n%s", want, shown.String())
		}
	}
	got := below.String()
	if strings.Contains(got, "staged artifact") || !strings.Contains(got, "bundle retried") {
		t.Errorf("the handler below got the wrong records:\n%s", got)
	}
	if n := strings.Count(got, relayPrefix); n != 1 {
		t.Errorf("the handler below got %d relayed lines, want only the warning's:\n%s", n, got)
	}
	if !log.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("INFO is not enabled: the embedded runner's re-logged lines would be dropped before the handler")
	}
}
