package pipelines_test

import (
	"bufio"
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

	"github.com/relabel/relabel/pipelines"
)

var (
	scaleRows   = flag.String("scale.rows", "100000,300000,1000000", "BenchmarkScale: comma-separated row counts")
	scaleRounds = flag.Int("scale.rounds", 10, "BenchmarkScale: relabelling rounds (the CLI default, 10: with the default momentum fewer rounds change few labels)")
	scaleL      = flag.Int("scale.l", pipelines.Defaults().L, "BenchmarkScale: count vectors per item per round (default: the CLI's)")
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

// phase timestamps: the log lines relabel run writes as stages start.
var (
	logTime = regexp.MustCompile(`^time=(\S+) `)
	stdTime = regexp.MustCompile(`^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?) `)
)

func lineTime(line string) (time.Time, bool) {
	if m := logTime.FindStringSubmatch(line); m != nil {
		t, err := time.Parse(time.RFC3339Nano, m[1])
		return t, err == nil
	}
	if m := stdTime.FindStringSubmatch(line); m != nil {
		t, err := time.Parse("2006/01/02 15:04:05", m[1])
		return t, err == nil
	}
	return time.Time{}, false
}

// phases reads when the first log line containing each marker appeared.
func phases(stderr []byte, markers ...string) map[string]time.Time {
	out := map[string]time.Time{}
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, m := range markers {
			if _, ok := out[m]; !ok && strings.Contains(line, m) {
				if t, ok := lineTime(line); ok {
					out[m] = t
				}
			}
		}
	}
	return out
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
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				t0 := time.Now()
				if err := cmd.Run(); err != nil {
					tail := stderr.Bytes()
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
				ph := phases(stderr.Bytes(), "running job", "partitions", "round 1/", fmt.Sprintf("round %d/", *scaleRounds), "pipeline done")
				b.Logf("rows %d (GOMEMLIMIT %q): wall %v, peak RSS %d MiB; phases from job start: fitted %v, rounds start %v, last round start %v, done %v",
					n, *scaleLimit, wall.Round(time.Millisecond), rss/1024,
					ph["partitions"].Sub(ph["running job"]).Round(time.Second), ph["round 1/"].Sub(ph["running job"]).Round(time.Second),
					ph[fmt.Sprintf("round %d/", *scaleRounds)].Sub(ph["running job"]).Round(time.Second),
					ph["pipeline done"].Sub(ph["running job"]).Round(time.Second))
			}
		})
	}
}
