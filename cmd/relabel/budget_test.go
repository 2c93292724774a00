package main

import (
	"bytes"
	"context"
	"flag"
	"github.com/relabel/relabel/options"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/relabel/relabel/internal/budget"
	"github.com/relabel/relabel/pipelines"
)

var budgetSizes = flag.Bool("budget", false, "TestEstimateMeasured: compare the memory estimate with measured peaks at several sizes (a minute or more), not one")

// TestEstimateMeasured (issue 35, target 2): internal/budget's estimate of a
// run's peak memory is within 2x of the peak resident memory the run
// measures (getrusage's ru_maxrss of the relabel process), at a small size
// always and at several sizes with -budget.
func TestEstimateMeasured(t *testing.T) {
	type size struct {
		rows, d, k int
	}
	sizes := []size{{3000, 32, 10}}
	if *budgetSizes {
		sizes = append(sizes, size{20000, 64, 10}, size{2000, 4096, 10}, size{10000, 64, 50}, size{60000, 128, 10})
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
		plan, err := pipelines.MakePlan(context.Background(), o)
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
