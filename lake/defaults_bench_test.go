package lake_test

import (
	"context"
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

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/noise"
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

// cost is one run's wall and CPU seconds (the process's and its waited-for
// children's, user and system: the embedded runner's workers are this
// process's goroutines, RELABEL_LAKE_BIN's runs its children).
type cost struct{ wall, cpu float64 }

func cpuSeconds() float64 {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) // RELABEL_LAKE_BIN's runs
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano()).Seconds()
}

// timed runs f and returns its cost.
func timed(b *testing.B, f func() *resultio.Summary) (*resultio.Summary, cost) {
	b.Helper()
	t0, c0 := time.Now(), cpuSeconds()
	sum := f()
	return sum, cost{time.Since(t0).Seconds(), cpuSeconds() - c0}
}

// BenchmarkLakeDefaults: what an --incremental lake run costs with every
// default (exact mode: the linear head on, the pooled start's gate as the
// data opens it), on relabel synth's data: RELABEL_LAKE_ROWS rows (default
// 9,300) of RELABEL_LAKE_D dimensions (default 256), 10 classes, 40% of the
// labels flipped uniformly, the classes' means closer and their isotropic
// noise larger than synth's defaults (separation .15, jitter 1.5: synth's
// defaults are as good as clean at d 256) so that the neighbours are weak
// enough for the head to weigh in to the last round (a cleaned accuracy of
// about .94, as the 9,205-row table that showed every incremental run to be
// a full one), in a directory lake and a table lake. For each: the first
// --incremental run (full), a rerun with nothing new, a 1% append, and a
// full run without --incremental over the appended data; it logs each one's
// wall and CPU seconds, what the append relabelled, and the cleaned
// accuracy of the incremental output against the full run's, over all rows,
// the old and the new ones. RELABEL_LAKE_SEEDS runs it for --seed 1..N
// (default 1) and logs the mean difference; RELABEL_LAKE_NOISE=pair flips
// 40% of the labels to the next class instead of uniformly (the pooled
// start's gate opens; the directory lake's log says so); RELABEL_LAKE_KINDS
// ("directory", "table"; default both) picks the lakes. With
// RELABEL_LAKE_BIN (a relabel binary) each run is a process of that binary,
// as a scheduled run is, its start included, instead of a call in this
// process. The figures of docs/PERFORMANCE.md's lake section.
func BenchmarkLakeDefaults(b *testing.B) {
	n := int64(envInt(b, "RELABEL_LAKE_ROWS", 9300))
	d := envInt(b, "RELABEL_LAKE_D", 256)
	add := n / 100
	pair := os.Getenv("RELABEL_LAKE_NOISE") == "pair"
	rate := 0.4
	if pair {
		rate = 0 // flipped below
	}
	sp := synth.DefaultParams(n+add, d, 10, rate, 1)
	sp.Separation, sp.Jitter = 0.15, 1.5
	g, err := synth.New(sp)
	if err != nil {
		b.Fatal(err)
	}
	base, truthBase := synthRows(g, 0, n)
	extra, truthExtra := synthRows(g, n, n+add)
	truth := append(truthBase, truthExtra...)
	if pair {
		// Class c flipped to c + 1 for 40% of the rows: the class-level
		// structure that opens the pooled start's gate.
		for _, r := range []*schemas.Rows{base, extra} {
			flipped, err := noise.PairFlipLabels(noise.Dataset{IDs: r.IDs, Truth: r.Labels, C: 10}, 0.4, 1)
			if err != nil {
				b.Fatal(err)
			}
			copy(r.Labels, flipped)
		}
	}
	// acc is the cleaned accuracy of got over the ids in [lo, hi).
	acc := func(got map[int64]int32, lo, hi int64) float64 {
		ok := 0
		for id := lo; id < hi; id++ {
			l, in := got[id]
			if !in {
				b.Fatalf("no row %d", id)
			}
			if l == truth[id] {
				ok++
			}
		}
		return float64(ok) / float64(hi-lo)
	}
	ctx := context.Background()
	bin := os.Getenv("RELABEL_LAKE_BIN")
	run := func(cfg options.Options) *resultio.Summary {
		if bin != "" {
			return runBinary(b, bin, cfg)
		}
		sum, err := runLake(ctx, cfg, embedded)
		if err != nil {
			b.Fatal(err)
		}
		return sum
	}
	// lakeRuns makes the four runs on one kind of lake: the first, the
	// rerun and the append under --incremental (inc), then a full run over
	// the appended data (plain). before, after and full are their outputs'
	// clean labels: the first run's, the append's and the full run's.
	type lakeRuns struct {
		first, sum                *resultio.Summary
		full, rerun, inc, plain   cost
		before, after, fullLabels map[int64]int32
	}
	dirRuns := func(seed uint64) lakeRuns {
		var r lakeRuns
		in, out := filepath.Join(b.TempDir(), "in"), filepath.Join(b.TempDir(), "out")
		writeDay(b, filepath.Join(in, "part-0.parquet"), base)
		cfg := options.Defaults()
		cfg.Seed = seed
		cfg.Input, cfg.Output = filepath.Join(in, "*.parquet"), out
		cfg.Lake.Incremental = true
		r.first, r.full = timed(b, func() *resultio.Summary { return run(cfg) })
		r.before = cleanByID(b, out)
		if sum, err := resultio.ReadSummary(context.Background(), out); err == nil && sum.Pooled != nil {
			b.Logf("directory lake, seed %d: the pooled start's gate %s (structure %.3f)", seed, map[bool]string{true: "open", false: "shut"}[sum.Pooled.Open], sum.Pooled.Structure)
		}
		_, r.rerun = timed(b, func() *resultio.Summary { return run(cfg) })
		writeDay(b, filepath.Join(in, "part-1.parquet"), extra)
		r.sum, r.inc = timed(b, func() *resultio.Summary { return run(cfg) })
		plain := cfg
		plain.Lake.Incremental = false
		plain.Output = filepath.Join(b.TempDir(), "full")
		_, r.plain = timed(b, func() *resultio.Summary { return run(plain) })
		r.after, r.fullLabels = cleanByID(b, out), cleanByID(b, plain.Output)
		return r
	}
	tableRuns := func(seed uint64) lakeRuns {
		var r lakeRuns
		l := newTestLake(b)
		l.appendRows(b, base)
		cfg := options.Defaults()
		cfg.Seed = seed
		cfg.Lake = options.LakeOptions{Catalog: l.uri, InputTable: "ns.items", OutputTable: "ns.inc", Incremental: true}
		r.first, r.full = timed(b, func() *resultio.Summary { return run(cfg) })
		r.before, _ = l.outputRows(b, "ns.inc")
		_, r.rerun = timed(b, func() *resultio.Summary { return run(cfg) })
		l.appendRows(b, extra)
		r.sum, r.inc = timed(b, func() *resultio.Summary { return run(cfg) })
		plain := cfg
		plain.Lake.Incremental, plain.Lake.OutputTable = false, "ns.full"
		_, r.plain = timed(b, func() *resultio.Summary { return run(plain) })
		r.after, _ = l.outputRows(b, "ns.inc")
		r.fullLabels, _ = l.outputRows(b, "ns.full")
		return r
	}
	seeds := envInt(b, "RELABEL_LAKE_SEEDS", 1)
	kinds := map[string]func(uint64) lakeRuns{"directory": dirRuns, "table": tableRuns}
	b.Log("before: " + loadAverage())
	for range b.N {
		for _, kind := range []string{"directory", "table"} {
			if k := os.Getenv("RELABEL_LAKE_KINDS"); k != "" && !strings.Contains(k, kind) {
				continue
			}
			var gap float64
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				r := kinds[kind](seed)
				lk := r.sum.Lake
				ai, af := acc(r.after, 0, n+add), acc(r.fullLabels, 0, n+add)
				gap += (ai - af) / float64(seeds)
				b.Logf("%s lake, seed %d, %d x %d + %d rows, defaults (head %+v, pooled %+v): full --incremental %.2fs wall %.2fs CPU; rerun, nothing new: %.2fs wall %.2fs CPU (%.2f%% of the full --incremental run's wall); +1%%: %.2fs wall %.2fs CPU (%.2f%% of the full run without --incremental over the appended data, %.2fs wall %.2fs CPU; new %d, rescored %d, kept fit %t)",
					kind, seed, n, d, add, r.first.Head, r.first.Pooled, r.full.wall, r.full.cpu, r.rerun.wall, r.rerun.cpu, 100*r.rerun.wall/r.full.wall,
					r.inc.wall, r.inc.cpu, 100*r.inc.wall/r.plain.wall, r.plain.wall, r.plain.cpu, lk.NewRows, lk.Rescored, lk.KeptFit)
				b.Logf("%s lake, seed %d: cleaned accuracy after the append, incremental %.4f against the full run's %.4f (%+.2f point); old rows %.4f against %.4f (the first run gave them %.4f), new rows %.4f against %.4f",
					kind, seed, ai, af, 100*(ai-af), acc(r.after, 0, n), acc(r.fullLabels, 0, n), acc(r.before, 0, n), acc(r.after, n, n+add), acc(r.fullLabels, n, n+add))
				b.ReportMetric(r.rerun.wall/r.full.wall, kind+"-rerun/full")
				b.ReportMetric(r.inc.wall/r.plain.wall, kind+"-append/full")
			}
			b.ReportMetric(100*gap, kind+"-point")
			b.Logf("%s lake: incremental minus full, mean over %d seeds: %+.2f point", kind, seeds, 100*gap)
		}
	}
	b.Log("after: " + loadAverage())
}

// runBinary runs cfg (a lake run of the benchmark's: its input and output,
// --incremental and --seed; every other option the default) as the relabel
// binary bin, a process of its own, as a scheduled run would: its start is
// part of the cost. The summary holds what the run prints of its lake: rows
// new and re-scored (the head's and the pooled start's records stay nil).
func runBinary(b *testing.B, bin string, cfg options.Options) *resultio.Summary {
	b.Helper()
	args := []string{"run", "--report=false", "--seed", strconv.FormatUint(cfg.Seed, 10)}
	if l := cfg.Lake; l.OutputTable != "" {
		args = append(args, "--catalog", l.Catalog, "--input-table", l.InputTable, "--output-table", l.OutputTable)
	} else {
		args = append(args, "--input", cfg.Input, "--output", cfg.Output)
	}
	if cfg.Lake.Incremental {
		args = append(args, "--incremental")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	sum := &resultio.Summary{Lake: &resultio.LakeSummary{}}
	// A directory lake's line, then a table's.
	m := regexp.MustCompile(`\((\d+) rows\)[^;]*; (\d+) old rows re-scored`).FindSubmatch(out)
	if m == nil {
		m = regexp.MustCompile(`: (\d+) new rows in \d+ new files, (\d+) old rows re-scored`).FindSubmatch(out)
	}
	if m != nil {
		sum.Lake.NewRows, _ = strconv.ParseInt(string(m[1]), 10, 64)
		sum.Lake.Rescored, _ = strconv.ParseInt(string(m[2]), 10, 64)
	}
	return sum
}

// loadAverage is /proc/loadavg, for the figures' context.
func loadAverage() string {
	s, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return fmt.Sprintf("load average unknown: %v", err)
	}
	return "load average " + string(s)
}
