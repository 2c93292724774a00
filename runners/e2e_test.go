package runners_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/runners"
	"github.com/relabel/relabel/runners/runnertest"
	"github.com/relabel/relabel/transforms/engine"
)

// digits is the committed two-shard test input: 1797 rows, C = 10.
const digits = "../testdata/digits/noisy-idn-0.4-part-*.parquet"

// relabelDigits runs the real relabel pipeline on digits into a new directory
// through runners.Run with o, as `relabel run` does, and returns the
// directory. Fewer rounds and samples than the defaults keep it quick while
// still changing hundreds of labels.
func relabelDigits(t *testing.T, ctx context.Context, o runners.Options) string {
	t.Helper()
	out := t.TempDir()
	cfg := options.Defaults()
	cfg.Rounds, cfg.L = 4, 100
	// 4 rounds leave the states short of settled, which the given-label
	// model reads: the votes change the hundreds of labels this checks.
	cfg.GivenLabel = options.Some(engine.GivenVote)
	cfg.Input, cfg.Output, cfg.Format = digits, out, shardio.Parquet
	exec := func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
		return runners.Run(ctx, p, o)
	}
	if _, err := pipelines.Run(ctx, job.NewConfig(cfg), exec); err != nil {
		t.Fatalf("relabel on runner %q endpoint %q: %v", o.Runner, o.Endpoint, err)
	}
	return out
}

// relabelOutput is one run's output: the shards' bytes and summary.json.
type relabelOutput struct {
	shards  map[string][]byte
	summary resultio.Summary
}

func readRelabelOutput(t *testing.T, dir string) relabelOutput {
	t.Helper()
	o := relabelOutput{shards: map[string][]byte{}}
	// Parquet (as relabelDigits asks) or Arrow (the CLI's default).
	names, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	arrows, _ := filepath.Glob(filepath.Join(dir, "*.arrow"))
	names = append(names, arrows...)
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		o.shards[filepath.Base(name)] = b
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatalf("%s has no summary.json: %v", dir, err)
	}
	if err := json.Unmarshal(b, &o.summary); err != nil {
		t.Fatalf("%s/summary.json: %v", dir, err)
	}
	// What legitimately differs between runs: where, how long, and the
	// runner's own metric bookkeeping.
	o.summary.Output, o.summary.Timings, o.summary.Metrics = "", nil, nil
	return o
}

// TestRelabelOnJobServer submits the real relabel pipeline to Beam's
// standalone Prism job server, a separate process, as runner universal and as
// runner flink (universal under another name) with the LOOPBACK environment,
// and checks each writes output shards byte-identical to the embedded run on
// the same input and seed, with the same summary.json counts.
func TestRelabelOnJobServer(t *testing.T) {
	ctx := ctxT(t)
	want := readRelabelOutput(t, relabelDigits(t, ctx, runners.Options{}))
	if len(want.shards) != 2 || want.summary.Rows != 1797 || want.summary.Changed < 100 {
		t.Fatalf("embedded run: %d shards, %d rows, %d changed; want 2 shards, 1797 rows, at least 100 changed",
			len(want.shards), want.summary.Rows, want.summary.Changed)
	}

	endpoint := runnertest.StartPrism(t)
	for _, runner := range []string{runners.Universal, runners.Flink} {
		job := "relabel-e2e-" + runner
		got := readRelabelOutput(t, relabelDigits(t, ctx, runners.Options{
			Runner:          runner,
			Endpoint:        endpoint,
			EnvironmentType: runners.Loopback,
			JobName:         job,
			Timeout:         3 * time.Minute,
		}))
		// The job went to the standalone server and finished there.
		if state := runnertest.Jobs(t, endpoint)[job]; state != "DONE" {
			t.Errorf("%s: the job server reports job %s as %q, want DONE", runner, job, state)
		}
		for name, w := range want.shards {
			if g, ok := got.shards[name]; !ok {
				t.Errorf("%s: no output shard %s", runner, name)
			} else if !bytes.Equal(g, w) {
				t.Errorf("%s: output shard %s (%d bytes) differs from the embedded run's (%d bytes)", runner, name, len(g), len(w))
			}
		}
		if len(got.shards) != len(want.shards) {
			t.Errorf("%s: %d output shards, embedded run %d", runner, len(got.shards), len(want.shards))
		}
		if !reflect.DeepEqual(got.summary, want.summary) {
			t.Errorf("%s: summary.json differs from the embedded run's:\n got %+v\nwant %+v", runner, got.summary, want.summary)
		}
	}
}
