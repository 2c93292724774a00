package pipelines

import (
	"context"
	"errors"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
)

// Executor runs a built pipeline (the embedded Prism runner, a job server,
// Dataflow: see runners/). The result may be nil when a runner returns none.
type Executor func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error)

// Run resolves, builds and executes one relabelling, then commits its
// output (io/resultio has the protocol): it locks the output, has the
// pipeline write every file under a temporary directory inside it, and
// publishes them with summary.json last, so that a reader trusting
// summary.json never sees a partial or mixed output, a killed run leaves
// nothing a rerun cannot replace, and a concurrent run on the same output
// fails fast. An existing finished output, or any other file the run would
// replace, is replaced only with --overwrite. Run is job.Resolve,
// job.Open and Session.Full; lake runs (--output-table, --incremental) are
// package lake's, which is given the same execution (Executing), and Run
// refuses them rather than relabel everything as a plain run.
func Run(ctx context.Context, cfg job.Config, exec Executor) (*resultio.Summary, error) {
	if l := cfg.Lake(); l.OutputTable != "" || l.Incremental {
		return nil, errors.New("relabel: a lake run (--output-table, --incremental) is package lake's (lake.RunTable, lake.RunDir), not pipelines.Run's")
	}
	t0 := time.Now()
	j, err := cfg.Resolve(ctx)
	if err != nil {
		return nil, err
	}
	s, err := job.Open(ctx, j, t0)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Full(ctx, Executing(exec), job.FullRun{})
}

// Executing is Execute on exec, as the value the lake and job.Session take.
func Executing(exec Executor) job.Execute {
	return func(ctx context.Context, j *job.Job, d job.Dirs) (*resultio.Summary, time.Duration, error) {
		return Execute(ctx, j, d, exec)
	}
}

// Execute builds j's pipeline writing into d, runs it with exec and sums
// its shards' reports and counters into the run's summary (without
// timings).
func Execute(ctx context.Context, j *job.Job, d job.Dirs, exec Executor) (*resultio.Summary, time.Duration, error) {
	fs, err := blobio.For(d.Tmp)
	if err != nil {
		return nil, 0, err
	}
	// ivf's blocks and states and the crowd stages' buckets wait in the
	// run's spill directory, not in the embedded runner's memory.
	spill, unspill, err := startSpill(j, d.Token)
	if err != nil {
		return nil, 0, err
	}
	defer unspill()
	d.Spill = spill
	p, s := beam.NewPipelineWithRoot()
	Build(s, j, d)
	t1 := time.Now()
	progress.StageStarted("reading")
	res, err := exec(ctx, p)
	if err != nil {
		return nil, 0, err
	}
	tRun := time.Since(t1)
	faults.PointCtx(ctx, "pipeline-done")
	progress.StageStarted("committing")
	sum, err := j.Summarise(ctx, fs, d.Tmp)
	if err != nil {
		return nil, 0, err
	}
	addCounters(sum, j, res)
	return sum, tRun, nil
}

// addCounters adds the pipeline's counters (res; nil: a runner that
// returns none) to sum, and what they say about the pooled start and the
// linear head.
func addCounters(sum *resultio.Summary, j *job.Job, res beam.PipelineResult) {
	if res == nil {
		return
	}
	sum.Metrics = map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if c.Namespace() == "relabel" {
			sum.Metrics[c.Name()] += c.Result()
		}
	}
	if j.Mixture.PooledIters > 0 && j.Crowd == nil {
		sum.Pooled = &resultio.PooledSummary{Fitted: sum.Metrics["pooled_fitted"], Iters: sum.Metrics["pooled_iters"], Structure: float64(sum.Metrics["pooled_structure_ppm"]) / 1e6,
			Gate: j.Mixture.PooledGate, Open: sum.Metrics["pooled_open"] > 0}
		if sum.Pooled.Open {
			// Recorded with the options too, so that a table's run
			// record (which keeps the options, not the summary) tells an
			// incremental run (package lake).
			sum.Options[resultio.MetaPooledStart] = resultio.PooledStartOpen
		}
	}
	if j.Head != "" && j.Head != job.HeadOff {
		sum.Head = &resultio.HeadSummary{Rounds: sum.Metrics["head_rounds"], Last: sum.Metrics["head_last"] > 0}
		if sum.Head.Last {
			sum.Options[resultio.MetaHeadLast] = resultio.HeadLastOn // as MetaPooledStart
		}
	}
}
