//go:build unix

package pipelines_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/transforms/crowd"
)

// crowdBenchAnnotators is 10,000 simulated annotators: 70% experts
// (accuracy .6-.95), 20% spammers, 10% adversaries.
func crowdBenchAnnotators() []crowd.SimAnnotator {
	rng := rand.New(rand.NewPCG(3, 3))
	ann := make([]crowd.SimAnnotator, 10000)
	for a := range ann {
		switch u := rng.Float64(); {
		case u < 0.7:
			ann[a] = crowd.SimAnnotator{Kind: crowd.Expert, Acc: 0.6 + 0.35*rng.Float64()}
		case u < 0.9:
			ann[a] = crowd.SimAnnotator{Kind: crowd.Spammer}
		default:
			ann[a] = crowd.SimAnnotator{Kind: crowd.Adversary, Acc: 0.7}
		}
	}
	return ann
}

// BenchmarkCrowdLabelOnly runs label-only mode (pipelines.Run on Prism,
// defaults: 30 EM iterations) on n items x 3 annotations from 10,000
// annotators, C = 10, written as 8 Parquet shards, at named sizes. It
// reports annotations/s, the wall and CPU time, the peak RSS and the
// accuracy. The EM batches are spilled to a temporary directory, as relabel
// run does on the embedded runner; CROWD_SPILL=none keeps them in Prism's
// memory instead (--spill-dir none), for comparison. Slow at 1M: run one
// size alone with -benchtime 1x (docs/PERFORMANCE.md has the command and
// the figures).
func BenchmarkCrowdLabelOnly(b *testing.B) {
	for _, n := range []int{100_000, 300_000, 1_000_000} {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			const C = 10
			cr := crowd.Simulate(n, C, 3, crowdBenchAnnotators(), 5)
			in := b.TempDir()
			var ids [8][]int64
			var anns [8][]int64
			var labs [8][]int32
			for i := 0; i < n; i++ {
				a, l := cr.Items.Item(i)
				for k := range a {
					f := (i*3 + k) % 8
					ids[f] = append(ids[f], int64(i))
					anns[f] = append(anns[f], a[k])
					labs[f] = append(labs[f], l[k])
				}
			}
			for f := range 8 {
				if err := annotio.WriteAnnotations(context.Background(), blobio.Local{}, filepath.Join(in, fmt.Sprintf("ann-%d.parquet", f)), shardio.Parquet, ids[f], nil, anns[f], nil, labs[f], 1<<16); err != nil {
					b.Fatal(err)
				}
			}
			cfg := options.Defaults()
			cfg.Annotations = filepath.Join(in, "*.parquet")
			runCrowdBench(b, cfg, n)
		})
	}
}

// BenchmarkCrowdFeatures runs an annotator-aware run with features
// (pipelines.Run on Prism, 30 EM iterations, sample neighbours with
// --rounds 4 --l 100: the crowd stages, not the neighbour search, are what
// is measured) on n items of 4 features with an annotators column (3
// annotations each from 10,000 annotators), C = 10, at named sizes. Each
// iteration's candidate posteriors (n x C floats) are the next E step's
// side input: spilled, Prism keeps a reference to them, not the floats.
// They are candidates x C floats: with the default 15,000 candidates a
// small part of the memory; with every item a candidate (the
// candidates=N case, which searches like exact mode) they grew with the
// iterations before they were spilled.
// Reports as BenchmarkCrowdLabelOnly; CROWD_SPILL=none as there.
func BenchmarkCrowdFeatures(b *testing.B) {
	for _, tc := range []struct{ n, cands int }{{50_000, 0}, {200_000, 0}, {100_000, 100_000}} {
		n := tc.n
		name := "items=" + strconv.Itoa(n)
		if tc.cands > 0 {
			name += "/candidates=" + strconv.Itoa(tc.cands)
		}
		b.Run(name, func(b *testing.B) {
			const C = 10
			cr := crowd.Simulate(n, C, 3, crowdBenchAnnotators(), 7)
			items := filepath.Join(b.TempDir(), "items.parquet")
			writeCrowdItems(b, items, cr, C, true)
			cfg := options.Defaults()
			cfg.Input, cfg.Format = items, shardio.Parquet
			cfg.Rounds, cfg.L, cfg.Neighbours = 4, 100, options.NeighboursSample
			if tc.cands > 0 {
				cfg.Candidates = options.Some(tc.cands)
			}
			runCrowdBench(b, cfg, n)
		})
	}
}

// runCrowdBench runs cfg (its Output and SpillDir set here) b.N times and
// reports annotations/s (3 per item), CPU seconds, peak RSS.
func runCrowdBench(b *testing.B, cfg options.Options, n int) {
	cfg.Report = false
	cfg.SpillDir = options.Some("none")
	if os.Getenv("CROWD_SPILL") != "none" {
		cfg.SpillDir = options.Some(b.TempDir())
	}
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		freeMemory(b)
		cfg.Output = filepath.Join(b.TempDir(), "out")
		os.RemoveAll(cfg.Output)
		b.StartTimer()
		t0, c0 := time.Now(), cpuTime(b)
		if p := os.Getenv("CROWD_HEAPPROF"); p != "" {
			// A heap profile while the job runs (CROWD_HEAPPROF_S
			// seconds in): what the runner holds between iterations.
			go func() {
				s, _ := strconv.Atoi(os.Getenv("CROWD_HEAPPROF_S"))
				time.Sleep(time.Duration(max(s, 1)) * time.Second)
				if f, err := os.Create(p); err == nil {
					pprof.WriteHeapProfile(f)
					f.Close()
				}
			}()
		}
		rss := sampleRSS(time.Second)
		sum, err := pipelines.Run(context.Background(), job.NewConfig(cfg), prism)
		if err != nil {
			b.Fatal(err)
		}
		wall, cpu := time.Since(t0), cpuTime(b)-c0
		series := rss()
		b.StopTimer()
		// The peak of the run's second half: the EM iterations, after the
		// read and the neighbour search (whose peak VmHWM may hide what
		// the iterations accumulate).
		late := 0
		for _, v := range series[len(series)/2:] {
			late = max(late, v)
		}
		b.ReportMetric(float64(late), "late-peak-MiB")
		b.Logf("RSS (MiB) sampled every %d s: %v", max(1, len(series)/12), thin(series, 12))
		b.ReportMetric(float64(3*n)/wall.Seconds(), "annotations/s")
		b.ReportMetric(cpu.Seconds(), "cpu-s")
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-MiB")
		b.Logf("%d items, %d annotations, spill %s: wall %.1fs, cpu %.1fs, peak %d MiB, %d shards, %d changed, annotators %+v", sum.Rows, 3*n, cfg.SpillDir.V, wall.Seconds(), cpu.Seconds(), peakRSS(b)>>20, len(sum.Shards), sum.Changed, sum.Annotators)
		b.StartTimer()
	}
}

// sampleRSS samples the process's resident set (MiB) every d until the
// returned function is called, which returns the samples.
func sampleRSS(d time.Duration) func() []int {
	var (
		mu   sync.Mutex
		out  []int
		done = make(chan struct{})
	)
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s, _ := os.ReadFile("/proc/self/status")
				for _, l := range strings.Split(string(s), "\n") {
					if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
						kb, _ := strconv.Atoi(f[1])
						mu.Lock()
						out = append(out, kb>>10)
						mu.Unlock()
					}
				}
			}
		}
	}()
	return func() []int {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), out...)
	}
}

// thin keeps about n evenly spaced values of xs, the last included.
func thin(xs []int, n int) []int {
	step := max(1, len(xs)/n)
	var out []int
	for i := 0; i < len(xs); i += step {
		out = append(out, xs[i])
	}
	if len(xs) > 0 && (len(xs)-1)%step != 0 {
		out = append(out, xs[len(xs)-1])
	}
	return out
}
