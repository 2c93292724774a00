package job

import (
	"context"
	"fmt"
	"sort"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// Job is a run resolved once, before anything runs: the shards and their
// units of work, the class set, the options with every data-dependent
// default filled in, and what the run records of them (Recorded). Every
// later step, the Beam pipeline (pipelines), the lake's incremental runs
// (lake) and the output's commit (Session), reads it and none changes it.
type Job struct {
	// opts are the job's options as given: read through the Job's typed
	// values, so that no package below job reads options.
	opts options.Options
	// Mixture is the method's parameters resolved for the input's C classes
	// (options.Options.Mixture); Candidates and Workers are --candidates (in sample
	// mode options.PaperCandidates unless given; 0: every item) and --workers
	// resolved.
	Mixture    mixture.Params
	Candidates int
	Workers    int
	// Mode is the resolved neighbour mode (exact, sample or ivf).
	Mode string
	// WaveBytes bounds one wave of ivf's unspilled shuffles (0: stages'
	// default; negative: no waves).
	WaveBytes int64
	Shards    []shardio.Shard
	Units     []shardio.Unit
	Read      shardio.ReadOptions
	// IDColumn is the id column's name, --id-column as given (the stages
	// that report duplicate ids name it).
	IDColumn   string
	C          int
	ClassNames []string
	LabelKind  schemas.LabelKind
	IDKind     schemas.IDKind
	Rows       int64
	// Labelled are the rows with a label (or annotation), counted in the
	// label-column pass that finds the class set; 0: not counted (checkPlan
	// counts them).
	Labelled int64
	// Skipped are input files left out (0 rows), each reported to the user
	// and recorded in summary.json.
	Skipped []shardio.Skipped
	// Device describes the kernels (kNN, LLC and the rounds) the
	// launcher's process resolved --device to (gpu.Resolve's About): what
	// summary.json records as the run's device.
	Device string
	// Scratch is a local directory holding input files read through
	// iceberg-go's scanner (--input-table with deletes or renamed columns);
	// Run removes it. Empty: none.
	Scratch string
	// Crowd is the annotator-aware part (crowd.go); nil without annotators.
	Crowd *Crowd
	// Head is --head resolved (options.ResolveHead: off in ivf mode's
	// join per round and annotator-aware runs; resolveHead).
	Head string
	// Given is --given-label resolved (options.ResolveGiven: vote in
	// annotator-aware runs; resolveGiven).
	Given engine.GivenModel
}

// Unscanned is a Job of the options o over an input that was not scanned:
// what the lake's planning steps read of a job (its recorded options, its
// mode and fitted-state checks) for a plan made from recorded values, as
// their tests make one. A run resolves its Job with Resolve.
func Unscanned(o options.Options, classes int) *Job { return &Job{opts: o, C: classes} }

// Resolve scans the input (footers and schemas only, plus the label column
// when the class set must be collected) and fixes every option.
func Resolve(ctx context.Context, cfg options.Options) (*Job, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Lake.InputTable != "" {
		return planTableInput(ctx, cfg)
	}
	if cfg.Input == "" {
		p, err := makeLabelOnlyPlan(ctx, cfg)
		if err != nil {
			return nil, err
		}
		if err := p.resolveHead(); err != nil {
			return nil, err
		}
		if err := p.resolveGiven(); err != nil {
			return nil, err
		}
		return p, p.resolvePooled()
	}
	ro := shardio.ReadOptions{Columns: cfg.Columns}
	shards, skipped, err := shardio.ScanFiles(ctx, cfg.Input, ro)
	if err != nil {
		return nil, err
	}
	return planShards(ctx, cfg, ro, shards, skipped)
}

// planShards is Resolve past the scan: the class set, units and options of
// scanned shards (from a glob, or the files a table's scan planned).
func planShards(ctx context.Context, cfg options.Options, ro shardio.ReadOptions, shards []shardio.Shard, skipped []shardio.Skipped) (*Job, error) {
	var err error
	in := shards[0].Input
	p := &Job{opts: cfg, Shards: shards, Skipped: skipped, LabelKind: in.LabelKind, IDKind: in.IDKind}
	ro.D = shards[0].D
	if !cfg.Standardise {
		// Raw features go straight into float32 distances: a finite value
		// whose square overflows is bad input, named where it is read.
		ro.MaxAbsFeature = shardio.MaxAbsForDistances(ro.D)
	}
	switch {
	case in.LabelKind == schemas.LabelString && cfg.ClassNames != nil:
		names := append([]string(nil), cfg.ClassNames...)
		sort.Strings(names)
		p.ClassNames = names
	case in.LabelKind == schemas.LabelString:
		ls, err := shardio.ScanLabels(ctx, shards, ro, 0)
		if err != nil {
			return nil, err
		}
		p.ClassNames, p.Labelled = ls.Names, ls.Labelled
	case cfg.ClassNames != nil:
		return nil, &options.Error{Flag: "class-names", Err: fmt.Errorf("given, but the labels of %s are %s class indices: class names are for string labels (use --classes for the count)", shards[0].Path, in.LabelKind)}
	case cfg.Classes.Set:
		// Scanned anyway: a label outside [0, C) or input with no label at
		// all fails here, naming the file and row, before anything runs.
		ls, err := shardio.ScanLabels(ctx, shards, ro, cfg.Classes.V)
		if err != nil {
			return nil, err
		}
		p.C, p.Labelled = cfg.Classes.V, ls.Labelled
	default:
		ls, err := shardio.ScanLabels(ctx, shards, ro, 0)
		if err != nil {
			return nil, err
		}
		p.C, p.Labelled = ls.Classes, ls.Labelled
	}
	if p.ClassNames != nil {
		p.C = len(p.ClassNames)
		ro.ClassNames = p.ClassNames
	} else {
		ro.Classes = p.C
	}
	if p.C < 1 {
		return nil, fmt.Errorf("relabel: %s: no labelled rows, so no class set (give --classes)", cfg.Input)
	}
	p.Read = ro
	p.IDColumn = ro.Columns.ID
	seen := map[string]string{}
	for _, s := range shards {
		name := resultio.OutputName(s.Path, cfg.Format)
		if other, dup := seen[name]; dup {
			return nil, fmt.Errorf("relabel: input shards %s and %s would both write %s", other, s.Path, name)
		}
		seen[name] = s.Path
		p.Units = append(p.Units, s.Units...)
		p.Rows += max(s.Rows, 0)
	}
	if p.Rows >= 0 && p.Rows < 2 {
		return nil, fmt.Errorf("relabel: %s: %d row(s): relabelling needs at least 2 rows (an item's labels come from its neighbours)", cfg.Input, p.Rows)
	}
	if p.C == 1 {
		// Refused rather than run: with one class no label can be wrong,
		// and a run that kept every label would report a cleaning that
		// never looked.
		return nil, &options.Error{Flag: "input", Err: fmt.Errorf("%s: every labelled row is in one class, so no label can be found wrong: relabelling needs at least 2 classes (give --classes N, or --class-names for string labels, when the data has classes its labels do not show)", cfg.Input)}
	}
	p.Mode = cfg.NeighbourMode(p.Rows)
	if p.Mixture, err = cfg.Mixture(p.C); err != nil {
		return nil, err
	}
	p.Candidates = cfg.Candidates.Or(0)
	if p.Mode == options.NeighboursSample && !cfg.Candidates.Set {
		p.Candidates = options.PaperCandidates
	}
	p.Workers = cfg.WorkerCount()
	// The stages check their Params again while the graph is built; here
	// the failure is an error before anything runs, not a panic.
	if err := p.NeighbourParams().Validate(); err != nil {
		return nil, err
	}
	if cfg.WaveMiB.Set { // unset: 0, stages' DefaultWaveBytes
		p.WaveBytes = int64(cfg.WaveMiB.V) << 20
		if cfg.WaveMiB.V < 0 {
			p.WaveBytes = -1
		}
	}
	if _, _, p.Device, err = gpu.Backends(cfg.Device); err != nil {
		return nil, err
	}
	if err := planCrowd(ctx, &cfg, p); err != nil {
		return nil, err
	}
	if err := p.resolvePooled(); err != nil {
		return nil, err
	}
	if err := p.resolveHead(); err != nil {
		return nil, err
	}
	if err := p.resolveGiven(); err != nil {
		return nil, err
	}
	if err := checkPlan(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// resolvePooled turns the pooled start (mixture.Params.PooledIters) off
// where the run's stages do not fit it: annotator-aware runs
// (pipelines/crowdstages start from the annotators' model). There an
// unset --pooled-iters is 0, recorded as such, and a value above 0 given
// is refused, naming the flag, rather than silently not used. Exact and
// sample modes fit it in stages.PooledStart, ivf mode in
// ivfstages.PooledStart, by the same rule.
func (p *Job) resolvePooled() error {
	if p.Crowd == nil {
		return nil
	}
	if it := p.opts.PooledIters; it.Set && it.V > 0 {
		return &options.Error{Flag: "pooled-iters", Err: fmt.Errorf("%d: the pooled start is fitted in runs without annotators only, not in annotator-aware runs (give 0, or leave it unset)", it.V)}
	}
	p.Mixture.PooledIters = 0
	return nil
}

// resolveGiven fixes --given-label for the run (options.ResolveGiven).
// Exact and sample modes fit the model in stages.Given, ivf mode in its
// rounds' stages (ivfstages.JoinRoundsParams.Given).
func (p *Job) resolveGiven() error {
	// Several labels per item (annotator-aware runs, a list label column):
	// each item's own mixture of its annotations reads how reliable they
	// are, as engine.Run does where most items have several.
	several := p.Crowd != nil || len(p.Shards) > 0 && p.Shards[0].Input.Multi
	g, err := p.opts.ResolveGiven(several)
	if err != nil {
		return err
	}
	p.Given = g
	return nil
}

// Calibration is what the writer stage makes of the final states.
func (p *Job) Calibration() resultio.Calibration {
	if p.Crowd != nil {
		return p.Crowd.calibration(&p.opts)
	}
	cal := NewConfig(p.opts).Calibration()
	if p.Given == engine.GivenBayes {
		// The given-label model's posteriors are probabilities already.
		cal.Temperature, cal.Auto = 1, false
	}
	return cal
}

// NeighbourParams is what both neighbour paths (stages.Neighbours, and
// ivfstages.Neighbours inside its blocks) get: the options as given, the
// mixture resolved for the class set.
func (p *Job) NeighbourParams() engine.NeighbourParams {
	o := &p.opts
	return engine.NeighbourParams{
		K: o.K, Metric: o.Metric, Standardise: o.Standardise,
		Weighting: o.Weighting, LLC: o.LLC(), Mixture: p.Mixture, Device: o.Device,
	}
}

// The options as the later steps read them: the pipeline's stages and the
// lake take these typed values, never the options themselves.

// Kernels is --device as given (cpu, cuda or auto), which every stage and
// the lake resolve with gpu.Resolve where their kernels run (a worker's
// process, not the launcher's); Device describes what the launcher's
// resolved to.
func (p *Job) Kernels() string { return p.opts.Device }

// Input is the input as given (with --input-table, the snapshot read:
// table@id); Output the output directory.
func (p *Job) Input() string  { return p.opts.Input }
func (p *Job) Output() string { return p.opts.Output }

// Format is the output files' format (Parquet for an output table).
func (p *Job) Format() shardio.Format { return p.opts.Format }

// Seed seeds all sampling; Rounds is the number of rounds; K the
// neighbours per item.
func (p *Job) Seed() uint64 { return p.opts.Seed }
func (p *Job) Rounds() int  { return p.opts.Rounds }
func (p *Job) K() int       { return p.opts.K }

// Lake is where the run reads and commits, and whether it is incremental.
func (p *Job) Lake() Lake { return lakeOf(&p.opts) }

// ModeFor is the neighbour mode the options give a run over rows rows (a
// lake's incremental run, over another count than the job's).
func (p *Job) ModeFor(rows int64) string { return p.opts.NeighbourMode(rows) }

// Engine is the in-process engine's options for the job's classes
// (Config.Engine): what the lake's incremental rounds run with.
func (p *Job) Engine() (engine.Options, error) { return p.opts.Engine(p.C) }

// SpillDir is where the run spills, "" for nowhere (--spill-dir none or
// unset).
func (p *Job) SpillDir() string {
	if dir := p.opts.SpillDir.Or(""); dir != "none" {
		return dir
	}
	return ""
}

// LocalRoundsBytes bounds the size of ivf's rounds run in one stage
// (--local-rounds-mib; LocalRounds).
func (p *Job) LocalRoundsBytes() int64 { return int64(p.opts.LocalMiB) << 20 }

// Recorded is what the run records of its options (summary.json, the
// shards' metadata, a snapshot's properties): options.Record of the options
// with their data-dependent defaults resolved as the run resolved them.
func (p *Job) Recorded() map[string]string {
	o, m := p.opts, p.Mixture
	o.Classes, o.C0, o.N, o.EMIters = options.Some(m.C), options.Some(m.C0), options.Some(m.N), options.Some(m.EMIters)
	o.Candidates, o.Neighbours = options.Some(p.Candidates), p.Mode
	o.PooledIters = options.Some(m.PooledIters)
	if p.Head != "" {
		o.Head = options.Some(p.Head)
	}
	o.GivenLabel = options.Some(p.Given)
	if p.Crowd != nil {
		o.AnnotatorsColumn = p.Crowd.Column
	}
	return o.Record(p.Crowd != nil)
}

// WithMode is j searching neighbours in mode instead: an incremental lake
// run searches its few queried rows exactly where a full run would sample
// candidates, and records that it did.
func (p *Job) WithMode(mode string) *Job {
	q := *p
	q.Mode = mode
	return &q
}
