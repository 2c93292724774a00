package lake_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/lake"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/runners"
)

// TestMain parses flags and initializes Beam (ptest.Main) so that the tests of
// this package can run pipelines on Prism, in-process.
func TestMain(m *testing.M) { ptest.Main(m) }

// embedded executes on Beam's Prism in this process, through runners.Run as
// `relabel run` does.
func embedded(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	return runners.Run(ctx, p, runners.Options{})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// runLake runs cfg as cmd/relabel does: a table lake, a directory lake, or a
// plain run.
func runLake(ctx context.Context, cfg options.Options, exec pipelines.Executor) (*resultio.Summary, error) {
	switch {
	case cfg.Lake.OutputTable != "":
		return lake.RunTable(ctx, job.NewConfig(cfg), pipelines.Executing(exec))
	case cfg.Lake.Incremental:
		return lake.RunDir(ctx, job.NewConfig(cfg), pipelines.Executing(exec))
	}
	return pipelines.Run(ctx, job.NewConfig(cfg), exec)
}

// mustRunLake is runLake on the embedded runner, failing t on an error.
func mustRunLake(t testing.TB, ctx context.Context, cfg options.Options) *resultio.Summary {
	t.Helper()
	sum, err := runLake(ctx, cfg, embedded)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// digitsTruth is the digits slice's true labels, entry k the label of id k.
func digitsTruth(t testing.TB) []int32 {
	truth, err := resultio.ReadI32(context.Background(), "../testdata/digits/truth.i32")
	if err != nil {
		t.Fatalf("digits truth: %v", err)
	}
	return truth
}
