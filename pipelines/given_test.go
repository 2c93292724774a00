//go:build unix

package pipelines_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/transforms/engine"
)

// TestGivenMatchesEngine runs --given-label bayes through the pipeline
// (stages.Given after the rounds, the writer at temperature 1) and through
// engine.Run with the same resolved options, on the shipped digits shards:
// every row gets the same clean label, and the model cleans the labels.
func TestGivenMatchesEngine(t *testing.T) {
	ctx := context.Background()
	o := options.Defaults()
	o.Input = "../testdata/digits/noisy-idn-0.4-part-*.parquet"
	o.Output = filepath.Join(t.TempDir(), "out")
	o.GivenLabel = options.Some(engine.GivenBayes)
	plan, err := job.Resolve(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	eo, err := o.Engine(plan.C)
	if err != nil {
		t.Fatal(err)
	}
	if !eo.Given {
		t.Fatal("engine options: Given off with --given-label bayes")
	}
	data, keys := readEngineData(t, plan)
	res, err := engine.Run(data, eo, engine.Backends{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Given == nil {
		t.Fatal("engine.Run: no given-label model fitted")
	}
	if _, err := pipelines.Run(ctx, job.NewConfig(o), prism); err != nil {
		t.Fatal(err)
	}
	got := map[int64]int32{}
	for _, u := range plan.Units {
		for id, l := range readCleanLabels(t, filepath.Join(o.Output, resultio.OutputName(u.Path, o.Format))) {
			got[id] = l
		}
	}
	if len(got) != len(keys) {
		t.Fatalf("pipeline wrote %d rows, engine relabelled %d", len(got), len(keys))
	}
	truth := readI32(t, "../testdata/digits/truth.i32")
	var same, right, given int
	for j, k := range keys {
		want, _ := res.States.Top(j)
		if got[k] == want {
			same++
		}
		if want == truth[k] {
			right++
		}
		if data.Labels[j] == truth[k] {
			given++
		}
	}
	if same != len(keys) {
		t.Errorf("pipeline and engine agree on %d of %d clean labels, want all", same, len(keys))
	}
	if acc := float64(right) / float64(len(keys)); acc < 0.95 || right <= given {
		t.Errorf("clean labels %.4f right against the given %.4f", acc, float64(given)/float64(len(keys)))
	}
}

// TestGivenRefused: --given-label bayes is refused beside an explicit
// temperature, naming the flag (ivf mode fits it: TestIVFGiven).
func TestGivenRefused(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		set        func(*options.Options)
	}{
		{"temperature", "temperature", func(o *options.Options) { o.Temperature = options.Some(0.3) }},
	} {
		o := options.Defaults()
		o.Input = "../testdata/digits/noisy-idn-0.4-part-*.parquet"
		o.Output = filepath.Join(t.TempDir(), "out")
		o.GivenLabel = options.Some(engine.GivenBayes)
		tc.set(&o)
		_, err := job.Resolve(context.Background(), o)
		var oe *options.Error
		if !errors.As(err, &oe) || oe.Flag != tc.flag {
			t.Errorf("%s: error %v, want one naming --%s", tc.name, err, tc.flag)
		}
	}
}
