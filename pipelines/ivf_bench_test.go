package pipelines_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relabel/relabel/options"
)

var (
	scaleRows   = flag.String("scale.rows", "100000,300000,1000000", "BenchmarkScale: comma-separated row counts")
	scaleRounds = flag.Int("scale.rounds", 10, "BenchmarkScale: relabelling rounds (the CLI default, 10: with the default momentum fewer rounds change few labels)")
	scaleL      = flag.Int("scale.l", options.Defaults().L, "BenchmarkScale: count vectors per item per round (default: the CLI's)")
	scaleMode   = flag.String("scale.neighbours", "ivf", "BenchmarkScale: --neighbours")
	scaleLimit  = flag.String("scale.gomemlimit", "", "BenchmarkScale: GOMEMLIMIT of the relabel run (e.g. 6GiB; empty: unset)")
	scaleLocal  = flag.Int("scale.local-rounds-mib", -1, "BenchmarkScale: --local-rounds-mib (-1: the CLI's default)")
	scaleData   = flag.String("scale.data", filepath.Join(os.TempDir(), "relabel-scale"), "BenchmarkScale: where generated inputs are kept between runs")
)

// buildRelabel builds the relabel binary once per benchmark run.
func buildRelabel(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "relabel")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/relabel")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building relabel: %v\n%s", err, out)
	}
	return bin
}

// markWriter keeps what the child writes to it and when each marker first
// appeared there: relabel's progress lines carry no timestamps of their own,
// so a line's time is when it arrived.
type markWriter struct {
	buf     bytes.Buffer
	partial []byte
	markers []string
	seen    map[string]time.Time
}

func newMarkWriter(markers ...string) *markWriter {
	return &markWriter{markers: markers, seen: map[string]time.Time{}}
}

func (w *markWriter) Write(p []byte) (int, error) {
	now := time.Now()
	w.buf.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.mark(string(w.partial[:i]), now)
		w.partial = w.partial[i+1:]
	}
}

func (w *markWriter) mark(line string, at time.Time) {
	for _, m := range w.markers {
		if _, ok := w.seen[m]; !ok && strings.Contains(line, m) {
			w.seen[m] = at
		}
	}
}

// since is how long after t0 marker m appeared (-1s when it did not).
func (w *markWriter) since(m string, t0 time.Time) time.Duration {
	at, ok := w.seen[m]
	if !ok {
		return -time.Second
	}
	return at.Sub(t0).Round(100 * time.Millisecond)
}

// BenchmarkScale relabels generated data (relabel synth: d = 64, C = 20, 30%
// symmetric noise, 16 shards) of each -scale.rows with relabel run on the
// embedded Prism runner, in a child process so that its peak RSS is its own,
// and reports wall time, peak RSS, rows/s and the cleaned accuracy. The CLI's
// defaults but fewer count vectors per round (-scale.l 50 against 250): L
// scales the EM's cost per item, the same at any row count, so it says
// nothing about scaling and would dominate the wall time on a small machine.
// Results and the cost model: docs/perf/scale.md. Run with -benchtime 1x.
func BenchmarkScale(b *testing.B) {
	bin := buildRelabel(b)
	walls := map[int64]time.Duration{} // the last run's wall time per row count
	var sizes []int64
	defer func() {
		// Cost against rows: the ratio of each size's wall time to the
		// smallest's, next to the ratio of rows (1 = linear).
		for _, n := range sizes[min(1, len(sizes)):] {
			if walls[sizes[0]] > 0 && walls[n] > 0 {
				b.Logf("rows %d / %d = %.1fx: wall %.2fx", n, sizes[0], float64(n)/float64(sizes[0]), walls[n].Seconds()/walls[sizes[0]].Seconds())
			}
		}
	}()
	for _, s := range strings.Split(*scaleRows, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			b.Fatalf("-scale.rows: %v", err)
		}
		sizes = append(sizes, n)
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			data := filepath.Join(*scaleData, fmt.Sprintf("synth-%d-d64-c20-seed1", n))
			if _, err := os.Stat(filepath.Join(data, "truth.i32")); err != nil {
				cmd := exec.Command(bin, "synth", "--rows", strconv.FormatInt(n, 10), "--d", "64", "--classes", "20",
					"--noise", "0.3", "--shards", "16", "--seed", "1", "--output", data)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("relabel synth: %v\n%s", err, out)
				}
			}
			for i := 0; i < b.N; i++ {
				out := filepath.Join(b.TempDir(), "out")
				cmd := exec.Command(bin, "run", "--input", filepath.Join(data, "part-*.parquet"), "--output", out,
					"--neighbours", *scaleMode, "--rounds", strconv.Itoa(*scaleRounds), "--l", strconv.Itoa(*scaleL))
				if *scaleLocal >= 0 {
					cmd.Args = append(cmd.Args, "--local-rounds-mib", strconv.Itoa(*scaleLocal))
				}
				cmd.Env = os.Environ()
				if *scaleLimit != "" {
					cmd.Env = append(cmd.Env, "GOMEMLIMIT="+*scaleLimit)
				}
				last := fmt.Sprintf("round %d/", *scaleRounds)
				stderr := newMarkWriter("partitions fitted", "round 1/", last, "committing")
				cmd.Stderr = stderr
				t0 := time.Now()
				if err := cmd.Run(); err != nil {
					tail := stderr.buf.Bytes()
					tail = tail[max(0, len(tail)-4000):]
					b.Fatalf("relabel run: %v\n%s", err, tail)
				}
				wall := time.Since(t0)
				walls[n] = wall
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				rss := ru.Maxrss // KiB on Linux
				cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				b.ReportMetric(cpu.Seconds(), "cpu-s")
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.ReportMetric(float64(rss)/1024, "peak-RSS-MiB")
				b.ReportMetric(float64(n)/wall.Seconds(), "rows/s")
				ev := exec.Command(bin, "eval", "--output", out, "--truth", filepath.Join(data, "truth.i32"))
				evOut, err := ev.CombinedOutput()
				if err != nil {
					b.Fatalf("relabel eval: %v\n%s", err, evOut)
				}
				if m := regexp.MustCompile(`cleaned accuracy\s+([0-9.]+)`).FindSubmatch(evOut); m != nil {
					acc, _ := strconv.ParseFloat(string(m[1]), 64)
					b.ReportMetric(acc, "cleaned-acc")
				}
				b.Logf("rows %d (GOMEMLIMIT %q): wall %v, peak RSS %d MiB; from the start: fitted %v, rounds start %v, last round start %v, committing %v",
					n, *scaleLimit, wall.Round(time.Millisecond), rss/1024,
					stderr.since("partitions fitted", t0), stderr.since("round 1/", t0), stderr.since(last, t0), stderr.since("committing", t0))
			}
		})
	}
}
