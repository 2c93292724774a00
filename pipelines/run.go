package pipelines

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines/crowdstages"
	"github.com/relabel/relabel/pipelines/stages"
)

// Executor runs a built pipeline (the embedded Prism runner, a job server,
// Dataflow: see runners/). The result may be nil when a runner returns none.
type Executor func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error)

// MetaPooledStart is the summary option that records a run whose items
// started from the pooled fit (value PooledStartOpen; absent otherwise):
// an incremental lake run starts the rows it relabels from the same fit,
// which the full run kept (Plan.KeepFit), and relabels everything again
// where it was not kept (pipelines/lake).
const (
	MetaPooledStart = "pooled-start"
	PooledStartOpen = "open"
)

// MetaHeadLast is the summary option that records a run whose linear head
// still gave its component in the last round (value HeadLastOn; absent
// otherwise): its posteriors depend on the head's fit, which an
// incremental lake run needs kept, as MetaPooledStart's.
const (
	MetaHeadLast = "head-last-round"
	HeadLastOn   = "on"
)

// Run plans, builds and executes one relabelling, then commits its output
// (commit.go has the protocol): it locks the output, has the pipeline write
// every file under a temporary directory inside it, and publishes them with
// summary.json last, so that a reader trusting summary.json never sees a
// partial or mixed output, a killed run leaves nothing a rerun cannot
// replace, and a concurrent run on the same output fails fast. An existing
// finished output, or any other file the run would replace, is replaced only
// with Options.Overwrite. Run is MakePlan, Open and Full; lake runs
// (--output-table, --incremental) are package pipelines/lake's, which
// calls the same steps, and Run refuses them rather than relabel
// everything as a plain run.
func Run(ctx context.Context, cfg options.Options, exec Executor) (*resultio.Summary, error) {
	if cfg.Lake.OutputTable != "" || cfg.Lake.Incremental {
		return nil, errors.New("relabel: a lake run (--output-table, --incremental) is package pipelines/lake's (lake.RunTable, lake.RunDir), not pipelines.Run's")
	}
	t0 := time.Now()
	plan, err := MakePlan(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, plan, t0)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Full(ctx, exec, nil)
}

// Session is a run that holds its output directory's lock: what Open
// made, and what the run's steps after it share. The lake's directory
// runs (pipelines/lake) open one as Run does, and then either run Full or
// update the output themselves through Temp, Summarise and Publish, so that
// every directory output is locked and committed by this package's
// protocol only.
type Session struct {
	Plan *Plan
	// FS is the output's store.
	FS blobio.FS
	// Start is when the run began (the summary's timings count from it).
	Start time.Time
	// token names the run's temporary directory and its lock's owner.
	token string
	hooks []*atexit.Hook
}

// Open reports the plan, checks that the output is not an input's
// directory, makes the output directory and takes its lock. Close releases
// it (and removes the plan's scratch files); a second signal's exit does
// too, through internal/atexit.
func Open(ctx context.Context, plan *Plan, start time.Time) (*Session, error) {
	s := &Session{Plan: plan, Start: start}
	if plan.Scratch != "" {
		s.hooks = append(s.hooks, atexit.Push(func() { os.RemoveAll(plan.Scratch) }))
	}
	cfg := &plan.Options
	for _, sk := range plan.Skipped {
		progress.Notef("%s", sk)
	}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: plan.Rows, Shards: len(plan.Shards), Rounds: plan.Options.Rounds})
	if err := checkNotInput(cfg.Output, plan.inputPaths()); err != nil {
		s.Close()
		return nil, err
	}
	fs, err := blobio.For(cfg.Output)
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := fs.MkdirAll(ctx, cfg.Output); err != nil {
		s.Close()
		return nil, fmt.Errorf("relabel: creating %s: %w", cfg.Output, err)
	}
	s.FS, s.token = fs, NewToken()
	unlock, err := lock(ctx, fs, cfg.Output, s.token)
	if err != nil {
		s.Close()
		return nil, err
	}
	// Clean-ups are atexit hooks: a second signal exits without waiting for
	// this run to return, and still runs them.
	s.hooks = append(s.hooks, atexit.Push(unlock))
	faults.Point("locked")
	return s, nil
}

// Close releases the lock and removes the plan's scratch files.
func (s *Session) Close() {
	for i := len(s.hooks) - 1; i >= 0; i-- {
		s.hooks[i].Run()
	}
}

// Full runs the plan's pipeline into a temporary directory of the output
// and commits it: the rest of Run after Open. finish, when not nil, adds
// to the summary before it is written (the lake's manifest).
func (s *Session) Full(ctx context.Context, exec Executor, finish func(*resultio.Summary)) (*resultio.Summary, error) {
	return s.FullKeeping(ctx, exec, finish, nil)
}

// KeptFitName is the file a lake run keeps its rounds' fits in, beside its
// output (pipelines/lake writes it from what Plan.KeepFit gathered): in an
// output directory, committed with the shards; in a table's run directory.
// Not a dot file: the output's .relabel names are a run's passing files
// (its lock, journal and temporary directory), this one stays.
const KeptFitName = "relabel-fit.state"

// FullKeeping is Full for a run that keeps its rounds' fits (Plan.KeepFit)
// for the incremental runs after it: the pipeline keeps them in a
// directory of the run's temporary directory, and keep, given that
// directory (stages.ReadKept reads it) and the temporary directory, writes
// what the output keeps of them (KeptFitName) there and returns the names
// to commit with the shards. keep nil: Full.
func (s *Session) FullKeeping(ctx context.Context, exec Executor, finish func(*resultio.Summary), keep func(ctx context.Context, kept, tmp string) ([]string, error)) (*resultio.Summary, error) {
	plan, fs := s.Plan, s.FS
	cfg := plan.Options
	removeStaleTemps(ctx, fs, cfg.Output)
	pending, err := pendingFiles(ctx, fs, cfg.Output)
	if err != nil {
		return nil, err
	}
	files := plan.OutputNames()
	if !cfg.Overwrite {
		guarded := append(append([]string(nil), files...), summaryName)
		if cfg.Report {
			guarded = append(guarded, ReportName)
		}
		for _, name := range guarded {
			out := blobio.Join(cfg.Output, name)
			if pending[name] {
				continue // left by an interrupted commit: ours to replace
			}
			if ok, err := fs.Exists(ctx, out); err != nil {
				return nil, err
			} else if ok {
				return nil, fmt.Errorf("relabel: %s exists (pass --overwrite to replace it)", out)
			}
		}
	}
	tmp, rmTmp, err := s.Temp(ctx)
	if err != nil {
		return nil, err
	}
	defer rmTmp.Run()
	if keep != nil {
		plan.KeepFit = blobio.Join(tmp, "fit-kept")
		if err := fs.MkdirAll(ctx, plan.KeepFit); err != nil {
			return nil, fmt.Errorf("relabel: creating %s: %w", plan.KeepFit, err)
		}
	}
	tPlan := time.Since(s.Start)
	sum, tRun, err := Execute(ctx, fs, plan, tmp, s.token, exec)
	if err != nil {
		return nil, err
	}
	if finish != nil {
		finish(sum)
	}
	var kept []string
	if keep != nil {
		if kept, err = keep(ctx, plan.KeepFit, tmp); err != nil {
			return nil, err
		}
		stages.RemoveKept(ctx, plan.KeepFit)
	}
	sum.Timings = map[string]float64{
		"plan":     tPlan.Seconds(),
		"pipeline": tRun.Seconds(),
		"total":    time.Since(s.Start).Seconds(),
	}
	if err := s.Publish(ctx, tmp, append(plan.written(ctx, fs, tmp, files), kept...), sum); err != nil {
		return nil, err
	}
	rmTmp.Run()
	return sum, nil
}

// Temp makes the run's temporary directory inside the output. The hook
// removes it and what the run wrote there: on every way out, a second
// signal's included (internal/atexit); after the commit it is empty.
func (s *Session) Temp(ctx context.Context) (string, *atexit.Hook, error) {
	tmp := blobio.Join(s.Plan.Options.Output, tmpPrefix+s.token)
	if err := s.FS.MkdirAll(ctx, tmp); err != nil {
		return "", nil, fmt.Errorf("relabel: creating %s: %w", tmp, err)
	}
	return tmp, atexit.Push(func() { RemoveTemp(context.WithoutCancel(ctx), s.FS, tmp, s.Plan) }), nil
}

// Summarise sums the shard reports written into tmp (summarise), for a
// lake run that wrote them itself (no pipeline result: no counters).
func (s *Session) Summarise(ctx context.Context, tmp string) (*resultio.Summary, error) {
	return summarise(ctx, s.FS, tmp, s.Plan, nil)
}

// Publish writes sum as tmp's summary.json and commits files (names in tmp)
// and it into the output (commit.go).
func (s *Session) Publish(ctx context.Context, tmp string, files []string, sum *resultio.Summary) error {
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := blobio.WriteFile(ctx, s.FS, blobio.Join(tmp, summaryName), b); err != nil {
		return err
	}
	return commit(ctx, s.FS, tmp, s.Plan.Options.Output, files, s.token)
}

// summarise gathers the shard reports the pipeline wrote into tmp, and its
// counters, into a summary.
func summarise(ctx context.Context, fs blobio.FS, tmp string, plan *Plan, res beam.PipelineResult) (*resultio.Summary, error) {
	cfg := plan.Options
	input := cfg.Input
	if input == "" {
		input = cfg.Annotations
	}
	sum := &resultio.Summary{
		Version: Version, Input: input, Output: cfg.Output, Rows: 0, Classes: plan.C,
		ClassNames: plan.ClassNames, Neighbours: plan.Mode, Device: plan.Device, Options: plan.Recorded(),
		ChangedFrom: make([]int64, plan.C), ChangedTo: make([]int64, plan.C),
	}
	for _, sk := range plan.Skipped {
		sum.Skipped = append(sum.Skipped, sk.String())
	}
	var trans []float64
	names, inputs := plan.shardFiles()
	for k, name := range names {
		var rep resultio.ShardReport
		if err := readJSON(ctx, fs, blobio.Join(tmp, name+resultio.ReportSuffix), &rep); err != nil {
			if plan.Crowd != nil && plan.Crowd.LabelOnly {
				continue // an empty bucket writes no shard
			}
			return nil, fmt.Errorf("relabel: shard %s produced no output: %w", inputs[k], err)
		}
		sum.Rows += rep.Rows
		sum.Changed += rep.Changed
		sum.Unresolved += rep.Unresolved
		for c := range rep.ChangedFrom {
			sum.ChangedFrom[c] += rep.ChangedFrom[c]
			sum.ChangedTo[c] += rep.ChangedTo[c]
		}
		if rep.Trans != nil {
			if trans == nil {
				trans = make([]float64, len(rep.Trans))
			}
			for i, v := range rep.Trans {
				trans[i] += v
			}
		}
		rep.Trans = nil
		sum.Shards = append(sum.Shards, rep)
	}
	if len(sum.Shards) > 0 {
		// The temperature the output was calibrated with (fitted with
		// --temperature auto; the same in every shard): an incremental run
		// keeps it (pipelines/lake's plan).
		sum.Options[stages.MetaCalibratedTemperature] = fmtF(sum.Shards[0].Temperature)
	}
	if trans != nil {
		c := plan.C
		sum.Transition = make([][]float64, c)
		for a := 0; a < c; a++ {
			row := trans[a*c : (a+1)*c]
			var z float64
			for _, v := range row {
				z += v
			}
			sum.Transition[a] = make([]float64, c)
			for b, v := range row {
				if z > 0 {
					sum.Transition[a][b] = math.Round(v/z*1e6) / 1e6
				}
			}
		}
	}
	if res != nil {
		sum.Metrics = map[string]int64{}
		for _, c := range res.Metrics().AllMetrics().Counters() {
			if c.Namespace() == "relabel" {
				sum.Metrics[c.Name()] += c.Result()
			}
		}
		if plan.Mixture.PooledIters > 0 && plan.Crowd == nil {
			sum.Pooled = &resultio.PooledSummary{Fitted: sum.Metrics["pooled_fitted"], Iters: sum.Metrics["pooled_iters"], Structure: float64(sum.Metrics["pooled_structure_ppm"]) / 1e6,
				Gate: plan.Mixture.PooledGate, Open: sum.Metrics["pooled_open"] > 0}
			if sum.Pooled.Open {
				// Recorded with the options too, so that a table's run
				// record (which keeps the options, not the summary)
				// tells an incremental run (pipelines/lake).
				sum.Options[MetaPooledStart] = PooledStartOpen
			}
		}
		if plan.Head != "" && plan.Head != options.HeadOff {
			sum.Head = &resultio.HeadSummary{Rounds: sum.Metrics["head_rounds"], Last: sum.Metrics["head_last"] > 0}
			if sum.Head.Last {
				sum.Options[MetaHeadLast] = HeadLastOn // as MetaPooledStart
			}
		}
	}
	if plan.Crowd != nil {
		name := crowdstages.AnnotatorsName(cfg.Format)
		sum.Annotators = &resultio.AnnotatorsSummary{}
		if err := readJSON(ctx, fs, blobio.Join(tmp, name+resultio.ReportSuffix), sum.Annotators); err != nil {
			return nil, fmt.Errorf("relabel: no annotators file: %w", err)
		}
	}
	return sum, nil
}

// NewToken names a run's temporary directory (not an input to any output
// byte); exported for the table lake, whose run directories are named by
// one too.
func NewToken() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// RemoveTemp deletes the temporary directory's known files and the
// directory; exported for the table lake, whose run directory holds the
// same files until its commit.
func RemoveTemp(ctx context.Context, fs blobio.FS, tmp string, plan *Plan) {
	for _, name := range plan.OutputNames() {
		fs.Remove(ctx, blobio.Join(tmp, name))
		fs.Remove(ctx, blobio.Join(tmp, name+resultio.ReportSuffix))
	}
	fs.Remove(ctx, blobio.Join(tmp, summaryName))
	fs.Remove(ctx, blobio.Join(tmp, journalName))
	fs.Remove(ctx, blobio.Join(tmp, KeptFitName))
	if plan.KeepFit != "" {
		stages.RemoveKept(ctx, plan.KeepFit)
	}
	fs.Remove(ctx, tmp)
}

func readJSON(ctx context.Context, fs blobio.FS, path string, v any) error {
	b, err := blobio.ReadFile(ctx, fs, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Execute builds plan's pipeline writing into tmp, runs it with exec and
// sums its shards' reports into the run's summary (without timings).
// Exported for the table lake, which runs it into a directory of the
// output table and commits an Iceberg snapshot instead of the directory
// protocol.
func Execute(ctx context.Context, fs blobio.FS, plan *Plan, tmp, tok string, exec Executor) (*resultio.Summary, time.Duration, error) {
	// ivf's blocks and states and the crowd stages' buckets wait in the
	// run's spill directory, not in the embedded runner's memory.
	unspill, err := plan.startSpill(tok)
	if err != nil {
		return nil, 0, err
	}
	defer unspill()
	p, s := beam.NewPipelineWithRoot()
	Build(s, plan, tmp)
	t1 := time.Now()
	progress.StageStarted("reading")
	res, err := exec(ctx, p)
	if err != nil {
		return nil, 0, err
	}
	tRun := time.Since(t1)
	faults.PointCtx(ctx, "pipeline-done")
	progress.StageStarted("committing")
	sum, err := summarise(ctx, fs, tmp, plan, res)
	return sum, tRun, err
}
