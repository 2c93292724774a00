package pipelines_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/runners"
	"github.com/relabel/relabel/transforms/engine"
)

// ivfExec runs a pipeline on the embedded Prism runner, as relabel run does.
func ivfExec(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if !beam.Initialized() {
		beam.Init()
	}
	return runners.Run(ctx, p, runners.Options{})
}

// cleanLabels reads id -> clean_label from every Arrow output shard in dir.
func cleanLabels(t *testing.T, dir string) map[int64]int32 {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.arrow"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no output shards in %s (%v)", dir, err)
	}
	out := map[int64]int32{}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < r.NumRecords(); b++ {
			rec, err := r.RecordBatch(b)
			if err != nil {
				t.Fatal(err)
			}
			ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
			clean := rec.Column(rec.Schema().FieldIndices("clean_label")[0]).(*array.Int32)
			for i := 0; i < int(rec.NumRows()); i++ {
				out[ids.Value(i)] = clean.Value(i)
			}
		}
		r.Close()
		f.Close()
	}
	return out
}

// TestIVFDigits relabels testdata/digits (two shards, four row groups) with
// --neighbours ivf, with partitions small enough that the search is really
// approximate (16 partitions, nprobe 4), and with --neighbours exact: both
// complete, the summary says which mode ran and counts every item's rounds,
// every row comes out once, and
// the ivf labels are as accurate as the exact ones within a point and well
// above the given labels' 0.60 (four rounds are not enough to converge; the
// engine-level comparison on the whole dev grid is transforms/ivf's
// TestQualityVsExact).
func TestIVFDigits(t *testing.T) {
	truth := readI32(t, "../testdata/digits/truth.i32")
	acc := map[string]float64{}
	for _, mode := range []string{options.NeighboursIVF, options.NeighboursExact} {
		out := t.TempDir()
		cfg := options.Defaults()
		cfg.Rounds, cfg.L = 4, 100
		cfg.Input, cfg.Output, cfg.Neighbours = "../testdata/digits/noisy-idn-0.4-part-*.parquet", out, mode
		// The neighbours are compared: without the linear head, which
		// exact mode fits and ivf mode does not.
		cfg.Head = options.Some(options.HeadOff)
		// 4 rounds leave the states short of settled, which the
		// given-label model reads (docs/QUALITY.md): the votes compare
		// the neighbours.
		cfg.GivenLabel = options.Some(engine.GivenVote)
		if mode == options.NeighboursIVF {
			cfg.Partitions, cfg.NProbe = options.Some(16), options.Some(4)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		t0 := time.Now()
		sum, err := pipelines.Run(ctx, job.NewConfig(cfg), ivfExec)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if sum.Neighbours != mode || sum.Options["neighbours"] != mode || sum.Rows != int64(len(truth)) {
			t.Errorf("%s: summary says neighbours %q (option %q), %d rows", mode, sum.Neighbours, sum.Options["neighbours"], sum.Rows)
		}
		// Every item runs every round once, in either mode's round stages
		// (ivf's joined rounds once counted none).
		if want := int64(cfg.Rounds) * int64(len(truth)); sum.Metrics["item_rounds"] != want {
			t.Errorf("%s: summary's item_rounds %d, want %d rounds x %d items", mode, sum.Metrics["item_rounds"], cfg.Rounds, len(truth))
		}
		got := cleanLabels(t, out)
		if len(got) != len(truth) {
			t.Fatalf("%s: %d rows out, want %d", mode, len(got), len(truth))
		}
		right := 0
		for id, c := range got {
			if c == truth[id] {
				right++
			}
		}
		acc[mode] = float64(right) / float64(len(truth))
		t.Logf("%s: cleaned accuracy %.4f, %d labels changed, %v", mode, acc[mode], sum.Changed, time.Since(t0).Round(time.Millisecond))
	}
	if d := acc[options.NeighboursIVF] - acc[options.NeighboursExact]; d < -0.01 || acc[options.NeighboursIVF] < 0.7 {
		t.Errorf("ivf accuracy %.4f, exact %.4f: ivf more than a point worse, or not cleaning", acc[options.NeighboursIVF], acc[options.NeighboursExact])
	}
}

// TestNeighbourModes: auto picks by size and by --candidates, sample defaults
// to the paper's 15,000, and contradictory options fail before anything runs.
func TestNeighbourModes(t *testing.T) {
	in := "../testdata/digits/noisy-idn-0.4-part-*.parquet"
	for _, tc := range []struct {
		name       string
		mode       string
		candidates int
		partitions int
		want       string
		wantCand   int
		err        string
	}{
		{"auto small", "", 0, 0, options.NeighboursExact, 0, ""},
		{"auto candidates", "auto", 500, 0, options.NeighboursSample, 500, ""},
		{"sample default", "sample", 0, 0, options.NeighboursSample, options.PaperCandidates, ""},
		{"ivf", "ivf", 0, 8, options.NeighboursIVF, 0, ""},
		{"exact with candidates", "exact", 100, 0, "", 0, "candidates bound the sample mode only"},
		{"exact with partitions", "exact", 0, 8, "", 0, "configure ivf only"},
		{"unknown", "hnsw", 0, 0, "", 0, `--neighbours "hnsw"`},
	} {
		cfg := options.Defaults()
		cfg.Input, cfg.Output = in, t.TempDir()
		if tc.mode != "" {
			cfg.Neighbours = tc.mode
		}
		if tc.candidates > 0 {
			cfg.Candidates = options.Some(tc.candidates)
		}
		if tc.partitions > 0 {
			cfg.Partitions = options.Some(tc.partitions)
		}
		plan, err := job.Resolve(context.Background(), cfg)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case plan.Mode != tc.want || plan.Candidates != tc.wantCand:
			t.Errorf("%s: mode %q with %d candidates, want %q with %d", tc.name, plan.Mode, plan.Candidates, tc.want, tc.wantCand)
		}
	}
}

// TestIVFSpill: ivf on the embedded runner with its blocks and states
// spilled to files (what relabel run does there), its rounds all in one
// stage (small data), in one stage with only the states in memory (with
// --local-rounds-mib 1, below the blocks' size) or, with
// --local-rounds-mib 0, joined round by round through the spill files,
// writes the same bytes as with everything in
// Prism's shuffle, in waves (-1 would be no waves: the spilled run has
// none), and removes its spill directory, on success and when the run
// fails.
func TestIVFSpill(t *testing.T) {
	base := options.Defaults()
	base.Rounds, base.L = 3, 50
	base.Input, base.Neighbours = "../testdata/digits/noisy-idn-0.4-part-*.parquet", options.NeighboursIVF
	base.Partitions, base.NProbe = options.Some(16), options.Some(4)
	// The linear head runs in the local rounds only (TestPooledIVF covers
	// it); here the rounds' transports are compared like with like.
	base.Head = options.Some(options.HeadOff)
	// run runs base into out, spilled to spillDir ("": in Prism's shuffle)
	// with --local-rounds-mib local (< 0: its default), and reports how
	// the rounds ran, as the run's note says: "memory" (in one stage,
	// every block in memory), "streamed" (in one stage, the states in
	// memory) or "join" (no note: a join per round).
	run := func(spillDir, out string, local int) (*resultio.Summary, string) {
		t.Helper()
		cfg := base
		cfg.Output = out
		if spillDir == "" {
			cfg.WaveMiB = options.Some(1) // several waves in the shuffled rounds
		} else {
			cfg.SpillDir = options.Some(spillDir)
		}
		if local >= 0 {
			cfg.LocalMiB = local
		}
		var mu sync.Mutex
		how := "join"
		defer progress.Install(func(e progress.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case e.Kind != progress.Note || !strings.Contains(e.Text, "rounds in one stage"):
			case strings.Contains(e.Text, "every block in memory"):
				how = "memory"
			case strings.Contains(e.Text, "states in memory"):
				how = "streamed"
			}
		})()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		sum, err := pipelines.Run(ctx, job.NewConfig(cfg), ivfExec)
		if err != nil {
			t.Fatalf("spill dir %q: %v", spillDir, err)
		}
		mu.Lock()
		defer mu.Unlock()
		return sum, how
	}
	shuffled, spilled, streamed, joined := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	spillDir := filepath.Join(t.TempDir(), "spill", "here") // made by Run
	if _, how := run("", shuffled, -1); how != "join" {
		t.Errorf("shuffled run: rounds %s, want a join per round", how)
	}
	sum, how := run(spillDir, spilled, -1)
	if how != "memory" {
		t.Errorf("spilled run of 1797 rows: rounds %s, want all in one stage, every block in memory", how)
	}
	// Spilled, the probe reads the shards a second time; rows are counted once.
	if sum.Rows != 1797 || sum.Metrics["rows_read"] != 1797 || sum.Metrics["item_rounds"] != 3*1797 {
		t.Errorf("spilled run: %d rows, %d counted read, %d item-rounds, want 1797, 1797, 3 x 1797", sum.Rows, sum.Metrics["rows_read"], sum.Metrics["item_rounds"])
	}
	if sum, how := run(spillDir, streamed, 1); how != "streamed" || sum.Metrics["item_rounds"] != 3*1797 {
		t.Errorf("--local-rounds-mib 1: rounds %s, %d item-rounds, want in one stage with the states in memory, 3 x 1797", how, sum.Metrics["item_rounds"])
	}
	if _, how := run(spillDir, joined, 0); how != "join" {
		t.Errorf("--local-rounds-mib 0: rounds %s, want a join per round", how)
	}
	for _, name := range []string{"noisy-idn-0.4-part-0000.arrow", "noisy-idn-0.4-part-0001.arrow"} {
		a, errA := os.ReadFile(filepath.Join(shuffled, name))
		b, errB := os.ReadFile(filepath.Join(spilled, name))
		c, errC := os.ReadFile(filepath.Join(joined, name))
		d, errD := os.ReadFile(filepath.Join(streamed, name))
		if errA != nil || errB != nil || errC != nil || errD != nil {
			t.Fatalf("%s: %v, %v, %v, %v", name, errA, errB, errC, errD)
		}
		if !bytes.Equal(a, d) {
			t.Errorf("%s: spilled run (rounds in one stage, streamed) wrote different bytes from the shuffled one", name)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: spilled run (rounds in one stage) wrote different bytes from the shuffled one", name)
		}
		if !bytes.Equal(a, c) {
			t.Errorf("%s: spilled run (a join per round) wrote different bytes from the shuffled one", name)
		}
	}
	if left, err := os.ReadDir(spillDir); err != nil || len(left) != 0 {
		t.Errorf("spill directory after the runs: %v entries (%v), want none", len(left), err)
	}

	// A run whose job fails after its stages ran still removes its spill
	// directory.
	cfg := base
	cfg.Output, cfg.SpillDir = t.TempDir(), options.Some(spillDir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := pipelines.Run(ctx, job.NewConfig(cfg), func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
		if _, err := ivfExec(ctx, p); err != nil {
			return nil, err
		}
		if left, err := os.ReadDir(spillDir); err != nil || len(left) != 1 {
			t.Errorf("spill directory while the job runs: %d entries (%v), want the run's own", len(left), err)
		}
		return nil, errors.New("job failed")
	})
	if err == nil || !strings.Contains(err.Error(), "job failed") {
		t.Fatalf("failed job: err %v", err)
	}
	if left, err := os.ReadDir(spillDir); err != nil || len(left) != 0 {
		t.Errorf("spill directory after a failed run: %d entries (%v), want none", len(left), err)
	}
}
