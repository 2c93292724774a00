package pipelines_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
)

// TestTmpProf is a profiling harness, not a check: it relabels PROF_IN
// in process on Prism (PROF_MODE: --neighbours; PROF_ROUNDS, PROF_WAVE:
// rounds and --wave-mib; PROF_L: --l; PROF_EMTOL: --em-tol; PROF_SPILL=none keeps blocks and states in Prism's
// shuffle instead of spill files, as --spill-dir none does; PROF_LOCAL:
// --local-rounds-mib; PROF_DEFAULTS: the default rounds and L) and prints the
// peak heap in use; PROF_CPU writes a
// CPU profile, PROF_OUT a heap profile taken at the heap's largest size
// past PROF_AT MiB (rewritten at each 5% more), none in the first PROF_SKIP
// (a duration) (docs/perf/scale.md).
func TestTmpProf(t *testing.T) {
	in := os.Getenv("PROF_IN")
	if in == "" {
		t.Skip("profiling harness: set PROF_IN to an input glob to run it")
	}
	cfg := options.Defaults()
	cfg.Rounds, cfg.L = 2, 50
	if r := os.Getenv("PROF_ROUNDS"); r != "" {
		cfg.Rounds, _ = strconv.Atoi(r)
	}
	if v := os.Getenv("PROF_EMTOL"); v != "" {
		cfg.EMTol, _ = strconv.ParseFloat(v, 64)
	}
	if l := os.Getenv("PROF_L"); l != "" {
		cfg.L, _ = strconv.Atoi(l)
	}
	at := uint64(3200)
	if a := os.Getenv("PROF_AT"); a != "" {
		v, _ := strconv.Atoi(a)
		at = uint64(v)
	}
	cfg.Input, cfg.Output = in, t.TempDir()
	if m := os.Getenv("PROF_MODE"); m != "" {
		cfg.Neighbours = m
	}
	if os.Getenv("PROF_SPILL") != "none" {
		cfg.SpillDir = options.Some(t.TempDir())
	}
	if v := os.Getenv("PROF_LOCAL"); v != "" {
		cfg.LocalMiB, _ = strconv.Atoi(v)
	}
	if os.Getenv("PROF_DEFAULTS") != "" {
		d := options.Defaults()
		cfg.Rounds, cfg.L = d.Rounds, d.L
	}
	if w := os.Getenv("PROF_WAVE"); w != "" {
		v, _ := strconv.Atoi(w)
		cfg.WaveMiB = options.Some(v)
	}
	var peak, profiled uint64
	skip, _ := time.ParseDuration(os.Getenv("PROF_SKIP"))
	start := time.Now()
	done := make(chan bool)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > at<<20 && ms.HeapInuse > profiled+profiled/20 && time.Since(start) > skip && os.Getenv("PROF_OUT") != "" {
				profiled = ms.HeapInuse
				f, _ := os.Create(os.Getenv("PROF_OUT"))
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
			peak = max(peak, ms.HeapInuse)
			if os.Getenv("PROF_TRACE") != "" {
				println("HEAP", time.Now().Format("15:04:05.0"), ms.HeapInuse>>20)
			}
		}
	}()
	t0 := time.Now()
	if f := os.Getenv("PROF_CPU"); f != "" {
		w, _ := os.Create(f)
		pprof.StartCPUProfile(w)
		defer pprof.StopCPUProfile()
	}
	_, err := pipelines.Run(context.Background(), job.NewConfig(cfg), ivfExec)
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	println("PEAK", peak>>20, "MiB", time.Since(t0).String())
}
