package pipelines

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/transforms/stages"
)

// Executor runs a built pipeline (the embedded Prism runner, a job server,
// Dataflow: see runners/). The result may be nil when a runner returns none.
type Executor func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error)

// Summary is summary.json, written beside the output shards.
type Summary struct {
	Version    string            `json:"version"`
	Input      string            `json:"input"`
	Output     string            `json:"output"`
	Rows       int64             `json:"rows"`
	Changed    int64             `json:"changed"`
	Classes    int               `json:"classes"`
	ClassNames []string          `json:"class_names,omitempty"`
	Neighbours string            `json:"neighbours"`
	Device     string            `json:"device"`
	Options    map[string]string `json:"options"`
	// ChangedFrom[c] / ChangedTo[c]: labels changed out of / into class c.
	ChangedFrom []int64 `json:"changed_from"`
	ChangedTo   []int64 `json:"changed_to"`
	// Transition[c][c'] estimates P(given label = c' | clean label = c) from the
	// posteriors (only for C <= stages.MaxDenseClasses).
	Transition [][]float64          `json:"transition,omitempty"`
	Shards     []stages.ShardReport `json:"shards"`
	// Metrics are the pipeline's Beam counters (namespace relabel), summed
	// over steps.
	Metrics map[string]int64   `json:"metrics,omitempty"`
	Timings map[string]float64 `json:"timings_seconds"`
}

// Run plans, builds and executes one relabelling, then commits its output:
// every shard is written under a temporary directory inside the output and
// renamed into place only after the whole pipeline succeeded, so a failed run
// leaves no output shard behind; an existing output is replaced only with
// Config.Overwrite.
func Run(ctx context.Context, cfg Config, exec Executor) (*Summary, error) {
	t0 := time.Now()
	plan, err := MakePlan(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cfg = plan.Config
	fs, err := blobio.For(cfg.Output)
	if err != nil {
		return nil, err
	}
	if !cfg.Overwrite {
		for _, s := range plan.Shards {
			out := blobio.Join(cfg.Output, stages.OutputName(s.Path, cfg.Format))
			if ok, err := fs.Exists(ctx, out); err != nil {
				return nil, err
			} else if ok {
				return nil, fmt.Errorf("relabel: %s exists (pass --overwrite to replace it)", out)
			}
		}
	}
	tmp := blobio.Join(cfg.Output, ".relabel-tmp-"+token())
	if err := fs.MkdirAll(ctx, tmp); err != nil {
		return nil, fmt.Errorf("relabel: creating %s: %w", tmp, err)
	}
	committed := false
	defer func() {
		if !committed {
			removeAll(context.WithoutCancel(ctx), fs, tmp, plan)
		}
	}()
	if cfg.SpillDir != "" && cfg.Neighbours == NeighboursIVF {
		if err := os.MkdirAll(cfg.SpillDir, 0o755); err != nil {
			return nil, fmt.Errorf("relabel: --spill-dir: %w", err)
		}
		if plan.Spill, err = os.MkdirTemp(cfg.SpillDir, "relabel-spill-"); err != nil {
			return nil, fmt.Errorf("relabel: --spill-dir: %w", err)
		}
		defer os.RemoveAll(plan.Spill)
	}
	tPlan := time.Since(t0)

	p, s := beam.NewPipelineWithRoot()
	Build(s, plan, tmp)
	t1 := time.Now()
	res, err := exec(ctx, p)
	if err != nil {
		return nil, err
	}
	tRun := time.Since(t1)

	sum := &Summary{
		Version: Version, Input: cfg.Input, Output: cfg.Output, Rows: 0, Classes: plan.C,
		ClassNames: plan.ClassNames, Neighbours: neighbourMode(cfg), Device: plan.Device, Options: cfg.OptionMap(),
		ChangedFrom: make([]int64, plan.C), ChangedTo: make([]int64, plan.C),
	}
	var trans []float64
	for _, sh := range plan.Shards {
		name := stages.OutputName(sh.Path, cfg.Format)
		var rep stages.ShardReport
		if err := readJSON(ctx, fs, blobio.Join(tmp, name+".report.json"), &rep); err != nil {
			return nil, fmt.Errorf("relabel: shard %s produced no output: %w", sh.Path, err)
		}
		sum.Rows += rep.Rows
		sum.Changed += rep.Changed
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
	// Commit: shards first, summary last (its presence marks a complete output).
	for _, sh := range sum.Shards {
		if err := fs.Rename(ctx, blobio.Join(tmp, sh.Output), blobio.Join(cfg.Output, sh.Output)); err != nil {
			return nil, fmt.Errorf("relabel: committing %s: %w", sh.Output, err)
		}
	}
	if res != nil {
		sum.Metrics = map[string]int64{}
		for _, c := range res.Metrics().AllMetrics().Counters() {
			if c.Namespace() == "relabel" {
				sum.Metrics[c.Name()] += c.Result()
			}
		}
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
	if err := blobio.WriteFile(ctx, fs, blobio.Join(tmp, "summary.json"), b); err != nil {
		return nil, err
	}
	if err := fs.Rename(ctx, blobio.Join(tmp, "summary.json"), blobio.Join(cfg.Output, "summary.json")); err != nil {
		return nil, err
	}
	committed = true
	removeAll(ctx, fs, tmp, plan)
	return sum, nil
}

func neighbourMode(cfg Config) string {
	if cfg.Neighbours != "" && cfg.Neighbours != NeighboursAuto {
		return cfg.Neighbours
	}
	if cfg.Engine.Candidates > 0 {
		return "sample"
	}
	return "exact"
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
	for _, sh := range plan.Shards {
		name := stages.OutputName(sh.Path, plan.Config.Format)
		fs.Remove(ctx, blobio.Join(tmp, name))
		fs.Remove(ctx, blobio.Join(tmp, name+".report.json"))
	}
	fs.Remove(ctx, blobio.Join(tmp, "summary.json"))
	fs.Remove(ctx, tmp)
}

func readJSON(ctx context.Context, fs blobio.FS, path string, v any) error {
	b, err := blobio.ReadFile(ctx, fs, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

var _ = errors.New
