package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"

	"github.com/relabel/relabel/internal/budget"
)

var budgetSizes = flag.Bool("budget", false, "TestEstimateMeasured: compare the memory estimate with measured peaks at several held-out sizes (minutes), not one")

// budgetSize is one measured run: rows x d features, K neighbours.
type budgetSize struct{ rows, d, k int }

// fittedSizes are the runs internal/budget's coefficients were fitted to
// (budget.go). The estimate is tested at other sizes only, so that the test
// says how well it predicts, not how well it was fitted.
var fittedSizes = []budgetSize{{1797, 64, 10}, {3000, 32, 10}, {20000, 64, 10}, {2000, 4096, 10}, {10000, 64, 50}, {60000, 128, 10}}

// TestEstimateMeasured: internal/budget's estimate of a
// run's peak memory is within 2x of the peak resident memory the run
// measures (getrusage's ru_maxrss of the relabel process), at sizes none of
// which the coefficients were fitted to: rows, d and K each differ from
// every fitted run's. One small size always; with -budget four more, exact
// and ivf mode, from 1,000 x 2,048 to 80,000 x 48.
func TestEstimateMeasured(t *testing.T) {
	sizes := []budgetSize{{5000, 96, 15}}
	if *budgetSizes {
		sizes = append(sizes, budgetSize{1000, 2048, 5}, budgetSize{12000, 512, 20}, budgetSize{30000, 24, 30}, budgetSize{80000, 48, 12})
	}
	for _, sz := range sizes {
		for _, f := range fittedSizes {
			if sz.rows == f.rows || sz.d == f.d || sz.k == f.k {
				t.Fatalf("size %+v shares rows, d or K with the fitted %+v: not a held-out size", sz, f)
			}
		}
	}
	for _, sz := range sizes {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		if code := dispatch(context.Background(), []string{"synth", "--rows", strconv.Itoa(sz.rows), "--d", strconv.Itoa(sz.d),
			"--classes", "10", "--output", dir}, &stdout, &stderr); code != 0 {
			t.Fatalf("synth: %s", stderr.String())
		}
		in := filepath.Join(dir, "*.parquet")
		out := filepath.Join(t.TempDir(), "out")
		o := options.Defaults()
		o.Input, o.Output, o.K = in, out, sz.k
		o.SpillDir = options.Some(os.TempDir()) // as relabel run resolves it on the embedded runner
		plan, err := job.Resolve(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		est := budget.Of(plan.Sizes())
		cmd := exec.Command(relabelBin, "run", "--input", in, "--output", out, "--k", strconv.Itoa(sz.k))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("run %+v: %v\n%s", sz, err, tail(errb.String(), 500))
		}
		peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
		ratio := float64(est.Peak) / float64(peak)
		t.Logf("rows %d d %d k %d (%s mode): estimate %s, measured peak %s, ratio %.2f", sz.rows, sz.d, sz.k, plan.Mode,
			budget.Bytes(est.Peak), budget.Bytes(peak), ratio)
		if ratio < 0.5 || ratio > 2 {
			t.Errorf("rows %d d %d k %d: estimate %s is not within 2x of the measured %s", sz.rows, sz.d, sz.k, budget.Bytes(est.Peak), budget.Bytes(peak))
		}
	}
}

var (
	scaleRows  = flag.String("scale.rows", "1000000", "BenchmarkScaleRun: comma-separated row counts")
	scaleData  = flag.String("scale.data", filepath.Join(os.TempDir(), "relabel-scale-run"), "BenchmarkScaleRun: where generated inputs are kept between runs")
	scaleRerun = flag.Bool("scale.rerun", false, "BenchmarkScaleRun: run each size twice and compare the outputs byte for byte")
)

// scaleShards is how many shards BenchmarkScaleRun's input of rows rows is
// written in: 8 up to 2 million rows, then one per 250,000 (the 1M
// and 10M inputs of docs/SCALE.md: 8 and 40 shards).
func scaleShards(rows int64) int64 { return max(8, rows/250_000) }

// BenchmarkScaleRun records a run at scale as a user makes it:
// relabel synth --rows N --d 64 --classes 20 (synth's other
// defaults, scaleShards shards), then relabel run with every option at its
// default, in a child process so that its peak resident memory is its own.
// It reports wall and CPU seconds, the peak RSS, internal/budget's estimate
// of it and their ratio (the estimate is meant to be within 2x), rows/s and
// the cleaned accuracy against synth's truth; with -scale.rerun it runs
// again and fails unless every output shard is byte-identical (summary.json
// and report.html record timings and paths). Inputs are kept under
// -scale.data (about 290 MB per million rows); the spill needs about 2.6 GB
// per million rows of free disk in the system temporary directory. Slow
// (15 minutes per million rows on 2 cores under load): run it alone,
//
//	go test ./cmd/relabel -run '^$' -bench ScaleRun -benchtime 1x -timeout 4h -args -scale.rows 1000000,2000000
//
// With several sizes it also reports each one's wall time against the
// first size's, per row ("wall/linear": 1 is linear, issue 49's bar for
// 10M against 1M is 1.1).
func BenchmarkScaleRun(b *testing.B) {
	var rows0 int64
	var wall0 time.Duration
	for _, s := range strings.Split(*scaleRows, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("-scale.rows %q: want positive row counts", s)
		}
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			data := filepath.Join(*scaleData, fmt.Sprintf("synth-%d-d64-c20-s%d", n, scaleShards(n)))
			if _, err := os.Stat(filepath.Join(data, "truth.i32")); err != nil {
				cmd := exec.Command(relabelBin, "synth", "--rows", strconv.FormatInt(n, 10), "--d", "64", "--classes", "20",
					"--shards", strconv.FormatInt(scaleShards(n), 10), "--output", data, "--overwrite")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("relabel synth: %v\n%s", err, out)
				}
			}
			in := filepath.Join(data, "part-*.parquet")
			o := options.Defaults()
			o.Input, o.Output = in, filepath.Join(b.TempDir(), "plan")
			o.SpillDir = options.Some(os.TempDir()) // as relabel run resolves it on the embedded runner
			plan, err := job.Resolve(context.Background(), o)
			if err != nil {
				b.Fatal(err)
			}
			est := budget.Of(plan.Sizes())
			for i := 0; i < b.N; i++ {
				var outs []string
				for run := 0; run < 1+btoi(*scaleRerun); run++ {
					out := filepath.Join(b.TempDir(), "out")
					outs = append(outs, out)
					cmd := exec.Command(relabelBin, "run", "--input", in, "--output", out)
					var errb bytes.Buffer
					cmd.Stderr = &errb
					load0 := loadAverage()
					t0 := time.Now()
					if err := cmd.Run(); err != nil {
						b.Fatalf("relabel run: %v\n%s", err, tail(errb.String(), 4000))
					}
					wall := time.Since(t0)
					ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
					peak := ru.Maxrss << 10 // KiB on Linux
					cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
					acc := cleanedAccuracy(b, context.Background(), out, filepath.Join(data, "truth.i32"))
					b.ReportMetric(wall.Seconds(), "wall-s")
					b.ReportMetric(cpu.Seconds(), "cpu-s")
					b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
					b.ReportMetric(float64(est.Peak)/(1<<20), "estimate-MiB")
					b.ReportMetric(float64(est.Peak)/float64(peak), "estimate/peak")
					b.ReportMetric(float64(n)/wall.Seconds(), "rows/s")
					b.ReportMetric(acc, "cleaned-acc")
					if rows0 == 0 {
						rows0, wall0 = n, wall
					} else if run == 0 {
						b.ReportMetric((wall.Seconds()/wall0.Seconds())/(float64(n)/float64(rows0)), "wall/linear")
					}
					b.Logf("rows %d (%s mode): wall %.1f s, %.1f CPU-s, peak RSS %s, estimate %s (%.2fx), cleaned accuracy %.4f; load average %s before, %s after",
						n, plan.Mode, wall.Seconds(), cpu.Seconds(), budget.Bytes(peak), budget.Bytes(est.Peak), float64(est.Peak)/float64(peak), acc, load0, loadAverage())
				}
				if len(outs) == 2 {
					if diff := diffOutputs(outs[0], outs[1]); diff != "" {
						b.Errorf("rows %d: the rerun's output differs: %s", n, diff)
					} else {
						b.Logf("rows %d: the rerun's output is byte-identical", n)
					}
				}
			}
		})
	}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// loadAverage is the 1-minute load average ("?" where /proc is absent).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// diffOutputs names the first file that differs between two output
// directories (summary.json and report.html, which record timings and
// paths, aside); "" when none.
func diffOutputs(a, b string) string {
	names := func(dir string) []string {
		es, _ := os.ReadDir(dir)
		var ns []string
		for _, e := range es {
			if e.Name() != "summary.json" && e.Name() != "report.html" {
				ns = append(ns, e.Name())
			}
		}
		return ns
	}
	na, nb := names(a), names(b)
	if !slices.Equal(na, nb) {
		return fmt.Sprintf("files %q against %q", na, nb)
	}
	for _, n := range na {
		x, errx := os.ReadFile(filepath.Join(a, n))
		y, erry := os.ReadFile(filepath.Join(b, n))
		if errx != nil || erry != nil || !bytes.Equal(x, y) {
			return n
		}
	}
	return ""
}
