package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Display shows a run's progress on a terminal as one line rewritten in place
// (stage, rows read, round r/R, elapsed, ETA), or in a log as one plain line
// per stage and per round. It is a Sink; Lines written through Printf appear
// above the live line without breaking it.
type Display struct {
	w    io.Writer
	tty  bool
	now  func() time.Time
	tick time.Duration

	mu      sync.Mutex
	start   time.Time
	stage   string
	rows    int64 // planned total (0: unknown)
	read    int64
	shards  int
	round   int
	rounds  int
	logged  int // log mode: the read tenth last printed
	drawn   int // width of the live line now on screen
	stopped bool
	done    chan struct{}
}

// NewDisplay writes to w; tty selects the in-place line. now is the clock
// (time.Now outside tests).
func NewDisplay(w io.Writer, tty bool, now func() time.Time) *Display {
	return &Display{w: w, tty: tty, now: now, start: now(), tick: 200 * time.Millisecond, logged: -1, done: make(chan struct{})}
}

// Start redraws the live line periodically (a terminal only) until Stop.
func (d *Display) Start() {
	if !d.tty {
		return
	}
	go func() {
		t := time.NewTicker(d.tick)
		defer t.Stop()
		for {
			select {
			case <-d.done:
				return
			case <-t.C:
				d.mu.Lock()
				d.redraw()
				d.mu.Unlock()
			}
		}
	}()
}

// Stop clears the live line; later events are ignored.
func (d *Display) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.stopped = true
	close(d.done)
	d.clear()
}

// Printf writes a line (without its newline) above the live line.
func (d *Display) Printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	fmt.Fprintln(d.w, Safe(fmt.Sprintf(strings.TrimSuffix(format, "\n"), args...)))
	if !d.stopped {
		d.redraw()
	}
}

// Handle is the Sink.
func (d *Display) Handle(e Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	switch e.Kind {
	case Planned:
		d.rows, d.shards, d.rounds = e.Rows, e.Shards, e.Rounds
		d.line(fmt.Sprintf("relabel: %s rows in %d shard(s), %d rounds", thousands(e.Rows), e.Shards, e.Rounds))
	case Stage:
		if e.Text == d.stage {
			return
		}
		d.stage = e.Text
		d.line("relabel: " + e.Text)
	case Read:
		d.read += e.To - e.From
		if d.stage == "" {
			d.stage = "reading"
		}
		if !d.tty && d.rows > 0 {
			// A line per tenth read, so a log shows the read moving
			// without one line per unit (thousands at scale).
			if tenth := int(10 * d.read / d.rows); tenth > d.logged {
				d.logged = tenth
				fmt.Fprintf(d.w, "relabel: read %s/%s rows\n", thousands(d.read), thousands(d.rows))
			}
		}
	case Round:
		if e.Round <= d.round {
			return // every worker reports the round it starts
		}
		d.round, d.rounds, d.stage = e.Round, e.Rounds, "rounds"
		d.line(fmt.Sprintf("relabel: round %d/%d", e.Round, e.Rounds))
	case Note:
		d.line("relabel: " + e.Text)
	}
	d.redraw()
}

// line prints a log line in log mode; a terminal shows the state in the live
// line instead.
func (d *Display) line(s string) {
	if !d.tty {
		fmt.Fprintln(d.w, Safe(s))
	}
}

// Status is the live line's text.
func (d *Display) Status() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status()
}

func (d *Display) status() string {
	el := d.now().Sub(d.start)
	parts := []string{"relabel: " + orDash(d.stage)}
	if d.rows > 0 {
		parts = append(parts, fmt.Sprintf("%s/%s rows read", thousands(min(d.read, d.rows)), thousands(d.rows)))
	}
	if d.rounds > 0 {
		parts = append(parts, fmt.Sprintf("round %d/%d", d.round, d.rounds))
	}
	parts = append(parts, clock(el)+" elapsed")
	if f := d.fraction(); f >= 0.05 && f < 1 {
		parts = append(parts, "ETA "+clock(time.Duration(float64(el)*(1-f)/f)))
	}
	return strings.Join(parts, " · ")
}

// fraction estimates the share of the work done: reading is about a tenth of
// a run, the rounds the rest (docs/PERFORMANCE.md's profiles).
func (d *Display) fraction() float64 {
	var f float64
	if d.rows > 0 {
		f += 0.1 * min(float64(d.read)/float64(d.rows), 1)
	}
	if d.rounds > 0 && d.round > 0 {
		f += 0.9 * float64(d.round-1) / float64(d.rounds)
	}
	return f
}

func (d *Display) redraw() {
	if !d.tty || d.stopped {
		return
	}
	s := d.status()
	pad := ""
	if n := d.drawn - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(d.w, "\r%s%s\r%s", s, pad, s)
	d.drawn = len(s)
}

func (d *Display) clear() {
	if d.tty && d.drawn > 0 {
		fmt.Fprintf(d.w, "\r%s\r", strings.Repeat(" ", d.drawn))
		d.drawn = 0
	}
}

func orDash(s string) string {
	if s == "" {
		return "starting"
	}
	return s
}

// clock formats a duration as m:ss (h:mm:ss from an hour).
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
