package pipelines

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	"github.com/relabel/relabel/transforms/crowdstages"
	"github.com/relabel/relabel/transforms/stages"
)

// Executor runs a built pipeline (the embedded Prism runner, a job server,
// Dataflow: see runners/). The result may be nil when a runner returns none.
type Executor func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error)

// Summary is summary.json, written beside the output shards.
type Summary struct {
	Version string `json:"version"`
	Input   string `json:"input"`
	Output  string `json:"output"`
	Rows    int64  `json:"rows"`
	Changed int64  `json:"changed"`
	// Unresolved counts rows output without a clean label (null):
	// unlabelled rows that no labelled row reached within the rounds.
	Unresolved int64             `json:"unresolved,omitempty"`
	Classes    int               `json:"classes"`
	ClassNames []string          `json:"class_names,omitempty"`
	Neighbours string            `json:"neighbours"`
	Device     string            `json:"device"`
	Options    map[string]string `json:"options"`
	// ChangedFrom[c] / ChangedTo[c]: labels changed out of / into class c.
	ChangedFrom []int64 `json:"changed_from"`
	ChangedTo   []int64 `json:"changed_to"`
	// Transition[c][c'] estimates P(given label = c' | clean label = c) from the
	// posteriors (only for C <= resultio.MaxDenseClasses).
	Transition [][]float64            `json:"transition,omitempty"`
	Shards     []resultio.ShardReport `json:"shards"`
	// Skipped lists input files left out, with why ("x.parquet: no rows,
	// skipped").
	Skipped []string `json:"skipped,omitempty"`
	// Metrics are the pipeline's Beam counters (namespace relabel), summed
	// over steps.
	Metrics map[string]int64   `json:"metrics,omitempty"`
	Timings map[string]float64 `json:"timings_seconds"`
	// Lake says what a table or incremental run covered (lake_table.go, lake_dir.go).
	Lake *LakeSummary `json:"lake,omitempty"`
	// Annotators describes the annotators file of an annotator-aware run.
	Annotators *crowdstages.AnnotatorsReport `json:"annotators,omitempty"`
	// Pooled says what the pooled start decided (stages.PooledStart); nil
	// where it was off (--pooled-iters 0, ivf mode, annotators).
	Pooled *PooledSummary `json:"pooled,omitempty"`
}

// PooledSummary is what the pooled start's fit decided, from its
// counters: how many items it fitted, the fitted noise's structure
// (mixture.Pooled.Structure, to 1e-6), the gate it was held against and
// whether the items started from it (Open) or from their given labels.
// An incremental run reads it to know how the stored posteriors started.
type PooledSummary struct {
	Fitted    int64   `json:"fitted"`
	Structure float64 `json:"structure"`
	Gate      float64 `json:"gate"`
	Open      bool    `json:"open"`
}

// Run plans, builds and executes one relabelling, then commits its output
// (commit.go has the protocol): it locks the output, has the pipeline write
// every file under a temporary directory inside it, and publishes them with
// summary.json last, so that a reader trusting summary.json never sees a
// partial or mixed output, a killed run leaves nothing a rerun cannot
// replace, and a concurrent run on the same output fails fast. An existing
// finished output, or any other file the run would replace, is replaced only
// with Options.Overwrite. With Options.Lake.Incremental, an output directory
// whose summary.json records the input files it covers is updated in place
// for the new, changed and gone files only (lake_dir.go).
func Run(ctx context.Context, cfg options.Options, exec Executor) (*Summary, error) {
	if lakeRun(&cfg) {
		return runTable(ctx, cfg, exec)
	}
	t0 := time.Now()
	plan, err := MakePlan(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if plan.Scratch != "" {
		defer atexit.Push(func() { os.RemoveAll(plan.Scratch) }).Run()
	}
	cfg = plan.Options
	for _, sk := range plan.Skipped {
		progress.Notef("%s", sk)
	}
	progress.Report(progress.Event{Kind: progress.Planned, Rows: plan.Rows, Shards: len(plan.Shards), Rounds: plan.Options.Rounds})
	if err := checkNotInput(cfg.Output, plan.inputPaths()); err != nil {
		return nil, err
	}
	fs, err := blobio.For(cfg.Output)
	if err != nil {
		return nil, err
	}
	if err := fs.MkdirAll(ctx, cfg.Output); err != nil {
		return nil, fmt.Errorf("relabel: creating %s: %w", cfg.Output, err)
	}
	tok := token()
	unlock, err := lock(ctx, fs, cfg.Output, tok)
	if err != nil {
		return nil, err
	}
	// Clean-ups are atexit hooks: a second signal exits without waiting for
	// this function to return, and still runs them.
	defer atexit.Push(unlock).Run()
	faults.Point("locked")
	var manifest []ManifestFile
	if cfg.Lake.Incremental {
		sum, done, err := runDirIncremental(ctx, fs, plan, tok, t0)
		if done || err != nil {
			return sum, err
		}
		if manifest, err = coverage(ctx, plan); err != nil {
			return nil, err
		}
	}
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
	tmp := blobio.Join(cfg.Output, tmpPrefix+tok)
	if err := fs.MkdirAll(ctx, tmp); err != nil {
		return nil, fmt.Errorf("relabel: creating %s: %w", tmp, err)
	}
	rmTmp := atexit.Push(func() { removeAll(context.WithoutCancel(ctx), fs, tmp, plan) })
	defer rmTmp.Run()
	tPlan := time.Since(t0)
	sum, tRun, err := execute(ctx, fs, plan, tmp, tok, exec)
	if err != nil {
		return nil, err
	}
	if manifest != nil {
		sum.Lake = fullLake(plan, manifest)
	}
	sum.Timings = map[string]float64{
		"plan":     tPlan.Seconds(),
		"pipeline": tRun.Seconds(),
		"total":    time.Since(t0).Seconds(),
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := blobio.WriteFile(ctx, fs, blobio.Join(tmp, summaryName), b); err != nil {
		return nil, err
	}
	if err := commit(ctx, fs, tmp, cfg.Output, plan.written(ctx, fs, tmp, files), tok); err != nil {
		return nil, err
	}
	rmTmp.Run()
	return sum, nil
}

// summarise gathers the shard reports the pipeline wrote into tmp, and its
// counters, into a summary.
func summarise(ctx context.Context, fs blobio.FS, tmp string, plan *Plan, res beam.PipelineResult) (*Summary, error) {
	cfg := plan.Options
	input := cfg.Input
	if input == "" {
		input = cfg.Annotations
	}
	sum := &Summary{
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
		// keeps it (Plan.incrementalCalibration).
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
		if plan.Mixture.PooledIters > 0 && plan.Crowd == nil && plan.Mode != options.NeighboursIVF {
			sum.Pooled = &PooledSummary{Fitted: sum.Metrics["pooled_fitted"], Structure: float64(sum.Metrics["pooled_structure_ppm"]) / 1e6,
				Gate: plan.Mixture.PooledGate, Open: sum.Metrics["pooled_open"] > 0}
		}
	}
	if plan.Crowd != nil {
		name := crowdstages.AnnotatorsName(cfg.Format)
		sum.Annotators = &crowdstages.AnnotatorsReport{}
		if err := readJSON(ctx, fs, blobio.Join(tmp, name+resultio.ReportSuffix), sum.Annotators); err != nil {
			return nil, fmt.Errorf("relabel: no annotators file: %w", err)
		}
	}
	return sum, nil
}

// token names a run's temporary directory (not an input to any output byte).
func token() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// removeAll deletes the temporary directory's known files and the directory.
func removeAll(ctx context.Context, fs blobio.FS, tmp string, plan *Plan) {
	for _, name := range plan.OutputNames() {
		fs.Remove(ctx, blobio.Join(tmp, name))
		fs.Remove(ctx, blobio.Join(tmp, name+resultio.ReportSuffix))
	}
	fs.Remove(ctx, blobio.Join(tmp, summaryName))
	fs.Remove(ctx, blobio.Join(tmp, journalName))
	fs.Remove(ctx, tmp)
}

func readJSON(ctx context.Context, fs blobio.FS, path string, v any) error {
	b, err := blobio.ReadFile(ctx, fs, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// execute builds plan's pipeline writing into tmp, runs it with exec and
// sums its shards' reports into the run's summary (without timings).
func execute(ctx context.Context, fs blobio.FS, plan *Plan, tmp, tok string, exec Executor) (*Summary, time.Duration, error) {
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
	faults.Point("pipeline-done")
	progress.StageStarted("committing")
	sum, err := summarise(ctx, fs, tmp, plan, res)
	return sum, tRun, err
}
