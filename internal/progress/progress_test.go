package progress

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func TestDisplayLogMode(t *testing.T) {
	var buf bytes.Buffer
	d := NewDisplay(&buf, false, (&fakeClock{step: time.Second}).now)
	d.Handle(Event{Kind: Planned, Rows: 1000, Shards: 2, Rounds: 3})
	d.Handle(Event{Kind: Stage, Text: "reading"})
	for i := int64(0); i < 10; i++ {
		d.Handle(Event{Kind: Read, Path: "a", From: i * 100, To: (i + 1) * 100})
	}
	// Every worker reports the round it starts: one line each.
	for _, r := range []int{1, 1, 2, 2, 1, 3} {
		d.Handle(Event{Kind: Round, Round: r, Rounds: 3})
	}
	d.Printf("relabel: beam warning: x")
	d.Stop()
	d.Handle(Event{Kind: Round, Round: 4, Rounds: 3}) // after Stop: ignored
	got := buf.String()
	want := []string{
		"relabel: 1,000 rows in 2 shard(s), 3 rounds",
		"relabel: reading",
		"relabel: read 100/1,000 rows",
		"relabel: read 1,000/1,000 rows",
		"relabel: round 1/3",
		"relabel: round 2/3",
		"relabel: round 3/3",
		"relabel: beam warning: x",
	}
	for _, w := range want {
		if strings.Count(got, w+"\n") != 1 {
			t.Errorf("log lacks exactly one line %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "\r") || strings.Contains(got, "round 4/3") {
		t.Errorf("log mode drew a live line or took an event after Stop:\n%q", got)
	}
	if n := strings.Count(got, "\n"); n != 16 {
		t.Errorf("log has %d lines, want 16 (one per tenth read, per round, per stage):\n%s", n, got)
	}
}

func TestDisplayTTY(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{step: time.Second}
	d := NewDisplay(&buf, true, clk.now)
	d.Handle(Event{Kind: Planned, Rows: 2000, Shards: 1, Rounds: 10})
	d.Handle(Event{Kind: Read, Path: "a", From: 0, To: 2000})
	d.Handle(Event{Kind: Round, Round: 6, Rounds: 10})
	st := d.Status()
	for _, w := range []string{"relabel: rounds", "2,000/2,000 rows read", "round 6/10", "elapsed", "ETA"} {
		if !strings.Contains(st, w) {
			t.Errorf("status %q lacks %q", st, w)
		}
	}
	d.Printf("a line above")
	d.Stop()
	out := buf.String()
	if strings.Contains(out, "\n") && strings.Count(out, "\n") != 1 {
		t.Errorf("terminal output has %d newlines, want only the Printf line's:\n%q", strings.Count(out, "\n"), out)
	}
	if !strings.Contains(out, "a line above\n") {
		t.Errorf("Printf line missing: %q", out)
	}
	// The last thing written clears the live line: the terminal ends blank.
	trimmed := strings.TrimSuffix(out, "\r")
	last := trimmed[strings.LastIndex(trimmed, "\r")+1:]
	if !strings.HasSuffix(out, "\r") || strings.TrimSpace(last) != "" {
		t.Errorf("Stop left %q on the line", last)
	}
}

func TestETA(t *testing.T) {
	clk := &fakeClock{step: 0}
	d := NewDisplay(&bytes.Buffer{}, true, clk.now)
	d.Handle(Event{Kind: Planned, Rows: 100, Shards: 1, Rounds: 10})
	d.Handle(Event{Kind: Read, From: 0, To: 100})
	d.Handle(Event{Kind: Round, Round: 6, Rounds: 10}) // half done: 0.1 + 0.9*5/10 = .55
	clk.t = clk.t.Add(55 * time.Second)
	if st := d.Status(); !strings.Contains(st, "0:55 elapsed") || !strings.Contains(st, "ETA 0:45") {
		t.Errorf("status %q, want 0:55 elapsed and ETA 0:45", st)
	}
}

func TestInstall(t *testing.T) {
	var mu sync.Mutex
	var got []Event
	un := Install(func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() })
	ReadRows("f", 0, 5)
	RoundStarted(0, 10)
	Notef("x %d", 1)
	un()
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	RoundStarted(1, 10) // no sink: logged
	if len(got) != 3 || got[0].To != 5 || got[1].Round != 1 || got[2].Text != "x 1" {
		t.Errorf("sink got %+v", got)
	}
	if !strings.Contains(logged.String(), "relabel: round 2/10 started") {
		t.Errorf("without a sink the event is not logged: %q", logged.String())
	}
}

func TestQuiet(t *testing.T) {
	var lines []string
	q := NewQuiet(func(s string) { lines = append(lines, s) })
	l := slog.New(q)
	l.Info("Staged binary artifact with token: job-001")
	l.Debug("x")
	l.Warn("slow bundle\nplan dump follows")
	l.Warn("slow bundle\nplan dump follows")
	l.Error("job failed", "error", "stages: round 3: boom")
	l.Error(strings.Repeat("y", 1000))
	if !q.Enabled(context.Background(), slog.LevelWarn) || q.Enabled(context.Background(), slog.LevelInfo) {
		t.Errorf("Enabled: want warn and above only")
	}
	if len(lines) != 1 || lines[0] != "relabel: beam warning: slow bundle …" {
		t.Errorf("lines shown at once %q, want the warning only (errors are held)", lines)
	}
	q.Flush()
	want := []string{
		"relabel: beam warning: slow bundle …",
		"relabel: beam error: job failed: stages: round 3: boom",
	}
	if len(lines) != 3 || lines[0] != want[0] || lines[1] != want[1] || len(lines[2]) > MaxLine+40 {
		t.Errorf("kept lines %q, want %q and one bounded long line", lines, want)
	}
	if c := q.Cause("stages: "); c != "stages: round 3: boom" {
		t.Errorf("Cause = %q, want the held error's own message", c)
	}
	l.Error("bundle failed: while executing Process for Plan[x]: shardio: a.parquet row 3 column \"id\": duplicate id 8\nstack...")
	if c := q.Cause("shardio: "); c != `shardio: a.parquet row 3 column "id": duplicate id 8` {
		t.Errorf("Cause = %q, want the shardio message's first line", c)
	}
	l.Error("another")
	if n := q.Dropped(); n != 2 || len(lines) != 3 {
		t.Errorf("Dropped = %d with %d lines shown, want 2 held errors dropped unseen", n, len(lines))
	}
}
