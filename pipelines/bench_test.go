//go:build unix

package pipelines_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/runners"
	"github.com/relabel/relabel/transforms/engine"
)

// sharedData is ../shared/data seen from this package.
const sharedData = "../../shared/data"

// prism executes a pipeline on the embedded Prism runner, as `relabel run`
// does by default.
func prism(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	return runners.Run(ctx, p, runners.Options{Runner: runners.Prism})
}

// BenchmarkFashionPipelineVsEngine relabels fashion_mnist_pca50 (70,000 x 50,
// idn noise 0.4) in one process with the same options: through the Beam
// pipeline on Prism (pipelines.Run: read, stats, neighbours, rounds, write,
// commit) and through the engine called directly on the same rows read with
// shardio. Both search neighbours exactly (--neighbours exact): the engine has
// no IVF, and the comparison is of the same relabelling. The pipeline's
// default at this size (auto = ivf) runs third, for reference. For each path
// it reports wall time, CPU time and peak RSS (VmHWM, reset before each
// path), accuracy against the truth and agreement with the engine's labels,
// and the pipeline/engine ratios. Slow (minutes per path on two cores): run
// it alone with -benchtime 1x; docs/perf/pipeline.md has the command.
func BenchmarkFashionPipelineVsEngine(b *testing.B) {
	ctx := context.Background()
	in := filepath.Join(sharedData, "fashion_mnist_pca50/noisy-idn-0.4.parquet")
	if _, err := os.Stat(in); err != nil {
		b.Skipf("development data absent (%v): this benchmark reads ../shared/data", err)
	}
	truth := readI32(b, filepath.Join(sharedData, "fashion_mnist_pca50/truth.i32"))
	exact := options.Defaults()
	exact.Input, exact.Output, exact.Classes, exact.Neighbours = in, b.TempDir(), options.Some(10), options.NeighboursExact
	plan, err := job.Resolve(ctx, exact)
	if err != nil {
		b.Fatal(err)
	}
	opts, err := exact.Engine(plan.C) // the options the pipeline runs with, defaults resolved
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d rows in %d units; GOMAXPROCS %d; options %v", plan.Rows, len(plan.Units), runtime.GOMAXPROCS(0), plan.Recorded())
	auto := exact
	auto.Neighbours = options.NeighboursAuto

	type path struct {
		wall, cpu  time.Duration
		peak       int64
		acc, agree float64
	}
	var eng, pipe, ivf path
	score := func(p *path, labels, ref map[int64]int32) {
		same, ok := 0, 0
		for id, l := range labels {
			if ref[id] == l {
				same++
			}
			if l == truth[id] {
				ok++
			}
		}
		p.acc, p.agree = float64(ok)/float64(len(labels)), float64(same)/float64(len(labels))
	}
	runPipeline := func(p *path, cfg options.Options, engLabels map[int64]int32) {
		freeMemory(b)
		cfg.Output = filepath.Join(b.TempDir(), "out")
		t0, c0 := time.Now(), cpuTime(b)
		sum, err := pipelines.Run(ctx, job.NewConfig(cfg), prism)
		if err != nil {
			b.Fatal(err)
		}
		p.wall += time.Since(t0)
		p.cpu += cpuTime(b) - c0
		p.peak = max(p.peak, peakRSS(b))
		b.StopTimer()
		labels := readCleanLabels(b, filepath.Join(cfg.Output, resultio.OutputName(in, cfg.Format)))
		if int64(len(labels)) != sum.Rows || len(labels) != len(engLabels) {
			b.Fatalf("pipeline (%s) wrote %d rows (summary %d), engine relabelled %d", sum.Neighbours, len(labels), sum.Rows, len(engLabels))
		}
		score(p, labels, engLabels)
		b.StartTimer()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		freeMemory(b)
		t0, c0 := time.Now(), cpuTime(b)
		data, keys := readEngineData(b, plan)
		res, err := engine.Run(data, opts, engine.Backends{})
		if err != nil {
			b.Fatal(err)
		}
		eng.wall += time.Since(t0)
		eng.cpu += cpuTime(b) - c0
		eng.peak = max(eng.peak, peakRSS(b))
		engLabels := make(map[int64]int32, len(keys))
		for j, k := range keys {
			engLabels[k], _ = res.States.Top(j)
		}
		data, res = nil, nil
		score(&eng, engLabels, engLabels)

		runPipeline(&pipe, exact, engLabels)
		runPipeline(&ivf, auto, engLabels)
	}
	n := float64(b.N)
	for _, m := range []struct {
		name string
		p    path
	}{{"engine", eng}, {"pipeline", pipe}, {"ivf-pipeline", ivf}} {
		// CPU time (user + system, the whole process) is what a busy shared
		// machine distorts least.
		b.ReportMetric(m.p.wall.Seconds()/n, m.name+"-s")
		b.ReportMetric(m.p.cpu.Seconds()/n, m.name+"-cpu-s")
		b.ReportMetric(float64(m.p.peak)/(1<<20), m.name+"-peak-MiB")
		b.ReportMetric(m.p.acc, m.name+"-acc")
		b.Logf("%-12s wall %6.1f s  cpu %6.1f s  peak %6.0f MiB  accuracy %.4f  agrees with the engine on %.4f",
			m.name, m.p.wall.Seconds()/n, m.p.cpu.Seconds()/n, float64(m.p.peak)/(1<<20), m.p.acc, m.p.agree)
	}
	b.ReportMetric(pipe.wall.Seconds()/eng.wall.Seconds(), "pipeline/engine")
	b.ReportMetric(pipe.cpu.Seconds()/eng.cpu.Seconds(), "pipeline/engine-cpu")
	b.ReportMetric(pipe.agree, "agree")
	// The two exact paths run the same method on the same rows with the same
	// seeds; only float summation orders differ (the moments, per batch in the
	// pipeline), which may move a near-tie neighbour.
	if pipe.agree < .99 {
		b.Errorf("exact pipeline and engine agree on %.4f of the labels, want >= .99", pipe.agree)
	}
}

// readEngineData reads every unit of the plan with shardio, as the pipeline's
// reader does, into the engine's in-memory form; keys are the ids in row order.
func readEngineData(b testing.TB, plan *job.Job) (*engine.Data, []int64) {
	b.Helper()
	d := &engine.Data{LabelOff: []int32{0}}
	for _, u := range plan.Units {
		r, err := shardio.ReadUnit(context.Background(), u, plan.Read)
		if err != nil {
			b.Fatal(err)
		}
		d.D = r.D
		d.Keys = append(d.Keys, r.IDs...)
		d.Features = append(d.Features, r.Features...)
		base := int32(len(d.Labels))
		d.Labels = append(d.Labels, r.Labels...)
		for _, o := range r.LabelOff[1:] {
			d.LabelOff = append(d.LabelOff, base+o)
		}
	}
	return d, d.Keys
}

// readCleanLabels reads id -> clean_label from an Arrow IPC output file.
func readCleanLabels(b testing.TB, path string) map[int64]int32 {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	defer r.Close()
	out := map[int64]int32{}
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			b.Fatalf("%s batch %d: %v", path, i, err)
		}
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		clean := rec.Column(rec.Schema().FieldIndices("clean_label")[0]).(*array.Int32)
		for j := 0; j < int(rec.NumRows()); j++ {
			out[ids.Value(j)] = clean.Value(j)
		}
	}
	return out
}

// freeMemory returns the heap's free pages to the OS and resets the peak RSS
// (Linux: writing 5 to clear_refs resets VmHWM), so that the next path's peak
// is its own.
func freeMemory(b *testing.B) {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS (%v): peaks are the process's so far", err)
	}
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's peak resident set size in bytes (VmHWM), or 0
// where /proc is absent.
func peakRSS(b *testing.B) int64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(s), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatalf("VmHWM %q: %v", l, err)
			}
			return kb << 10
		}
	}
	return 0
}
