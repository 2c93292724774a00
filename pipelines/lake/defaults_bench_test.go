package lake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/pipelines/lake"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/synth"
)

// synthRows is rows [lo, hi) of relabel synth's dataset p (ids lo..hi-1)
// and their true classes.
func synthRows(g *synth.Generator, lo, hi int64) (*schemas.Rows, []int32) {
	d, n := g.Params().D, int(hi-lo)
	r := &schemas.Rows{D: d, IDs: make([]int64, n), Features: make([]float32, n*d), Labels: make([]int32, n), LabelOff: make([]int32, n+1)}
	truth := make([]int32, n)
	g.Rows(lo, hi, r.IDs, r.Features, truth, r.Labels)
	for i := range r.LabelOff {
		r.LabelOff[i] = int32(i)
	}
	return r, truth
}

// cost is one run's wall and CPU seconds (the process's, user and system:
// the embedded runner's workers are this process's goroutines).
type cost struct{ wall, cpu float64 }

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// timed runs f and returns its cost.
func timed(b *testing.B, f func() *pipelines.Summary) (*pipelines.Summary, cost) {
	b.Helper()
	t0, c0 := time.Now(), cpuSeconds()
	sum := f()
	return sum, cost{time.Since(t0).Seconds(), cpuSeconds() - c0}
}

// BenchmarkLakeDefaults: what an --incremental lake run costs with every
// default (exact mode: the linear head on, the pooled start's gate as the
// data opens it), on relabel synth's data: RELABEL_LAKE_ROWS rows (default
// 9,300) of RELABEL_LAKE_D dimensions (default 256), 10 classes, 40% of the
// labels flipped, in a directory lake and a table lake. For each: the first
// --incremental run (full), a rerun with nothing new, a 1% append, and a
// full run without --incremental over the appended data; it logs each one's
// wall and CPU seconds, what the append relabelled, and the cleaned
// accuracy of the incremental output against the full run's. The figures
// of docs/PERFORMANCE.md's lake section.
func BenchmarkLakeDefaults(b *testing.B) {
	n := int64(envInt(b, "RELABEL_LAKE_ROWS", 9300))
	d := envInt(b, "RELABEL_LAKE_D", 256)
	add := n / 100
	g, err := synth.New(synth.DefaultParams(n+add, d, 10, 0.4, 1))
	if err != nil {
		b.Fatal(err)
	}
	base, truthBase := synthRows(g, 0, n)
	extra, truthExtra := synthRows(g, n, n+add)
	truth := append(truthBase, truthExtra...)
	acc := func(got map[int64]int32) float64 {
		if len(got) != len(truth) {
			b.Fatalf("%d rows, want %d", len(got), len(truth))
		}
		ok := 0
		for id, l := range got {
			if l == truth[id] {
				ok++
			}
		}
		return float64(ok) / float64(len(truth))
	}
	ctx := context.Background()
	run := func(cfg options.Options) *pipelines.Summary {
		sum, err := runLake(ctx, cfg, embedded)
		if err != nil {
			b.Fatal(err)
		}
		return sum
	}
	report := func(kind string, full, rerun, inc, plain cost, lk *lake.Summary, ai, af float64) {
		b.Logf("%s lake, %d x %d + %d rows, defaults: full --incremental %.2fs wall %.2fs CPU; rerun, nothing new: %.2fs wall %.2fs CPU (%.1f%%); +1%%: %.2fs wall %.2fs CPU (%.1f%% of the full run without --incremental over the appended data, %.2fs wall %.2fs CPU; new %d, rescored %d, kept fit %t); cleaned accuracy incremental %.4f, full %.4f (%+.2f point)",
			kind, n, d, add, full.wall, full.cpu, rerun.wall, rerun.cpu, 100*rerun.wall/full.wall, inc.wall, inc.cpu, 100*inc.wall/plain.wall, plain.wall, plain.cpu,
			lk.NewRows, lk.Rescored, lk.KeptFit, ai, af, 100*(ai-af))
		b.ReportMetric(rerun.wall/full.wall, kind+"-rerun/full")
		b.ReportMetric(inc.wall/plain.wall, kind+"-append/full")
		b.ReportMetric(100*(ai-af), kind+"-point")
	}
	b.Log("before: " + loadAverage())
	for range b.N {
		// A directory lake: one file, then a second with the 1%.
		in, out := filepath.Join(b.TempDir(), "in"), filepath.Join(b.TempDir(), "out")
		writeDay(b, filepath.Join(in, "part-0.parquet"), base)
		cfg := options.Defaults()
		cfg.Input, cfg.Output = filepath.Join(in, "*.parquet"), out
		cfg.Lake.Incremental = true
		_, full := timed(b, func() *pipelines.Summary { return run(cfg) })
		_, rerun := timed(b, func() *pipelines.Summary { return run(cfg) })
		writeDay(b, filepath.Join(in, "part-1.parquet"), extra)
		sum, inc := timed(b, func() *pipelines.Summary { return run(cfg) })
		plainCfg := cfg
		plainCfg.Lake.Incremental = false
		plainCfg.Output = filepath.Join(b.TempDir(), "full")
		_, plain := timed(b, func() *pipelines.Summary { return run(plainCfg) })
		report("directory", full, rerun, inc, plain, lake.Of(sum), acc(cleanByID(b, out)), acc(cleanByID(b, plainCfg.Output)))

		// A table lake: one snapshot, then a second with the 1%.
		l := newTestLake(b)
		l.appendRows(b, base)
		tcfg := options.Defaults()
		tcfg.Lake = options.LakeOptions{Catalog: l.uri, InputTable: "ns.items", OutputTable: "ns.inc", Incremental: true}
		_, full = timed(b, func() *pipelines.Summary { return run(tcfg) })
		_, rerun = timed(b, func() *pipelines.Summary { return run(tcfg) })
		l.appendRows(b, extra)
		sum, inc = timed(b, func() *pipelines.Summary { return run(tcfg) })
		plainT := tcfg
		plainT.Lake.Incremental, plainT.Lake.OutputTable = false, "ns.full"
		_, plain = timed(b, func() *pipelines.Summary { return run(plainT) })
		gi, _ := l.outputRows(b, "ns.inc")
		gf, _ := l.outputRows(b, "ns.full")
		report("table", full, rerun, inc, plain, lake.Of(sum), acc(gi), acc(gf))
	}
	b.Log("after: " + loadAverage())
}

// loadAverage is /proc/loadavg, for the figures' context.
func loadAverage() string {
	s, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return fmt.Sprintf("load average unknown: %v", err)
	}
	return "load average " + string(s)
}
