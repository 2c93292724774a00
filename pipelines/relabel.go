package pipelines

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/mixture"
	"github.com/relabel/relabel/transforms/stages"
)

// Plan is what the launcher learns before building the pipeline: the shards
// and their units of work, the class set, and the options with data-dependent
// defaults filled in.
type Plan struct {
	// Options are the job's options as given.
	Options Options
	// Mixture is the method's parameters resolved for the input's C classes
	// (Options.Mixture); Candidates and Workers are --candidates (in sample
	// mode PaperCandidates unless given; 0: every item) and --workers
	// resolved.
	Mixture    mixture.Params
	Candidates int
	Workers    int
	// Mode is the resolved neighbour mode (exact, sample or ivf).
	Mode string
	// WaveBytes bounds one wave of ivf's unspilled shuffles (0: stages'
	// default; negative: no waves).
	WaveBytes  int64
	Shards     []shardio.Shard
	Units      []shardio.Unit
	Read       shardio.ReadOptions
	C          int
	ClassNames []string
	LabelKind  schemas.LabelKind
	IDKind     schemas.IDKind
	Rows       int64
	// Skipped are input files left out (0 rows), each reported to the user
	// and recorded in summary.json.
	Skipped []shardio.Skipped
	// Device describes the kernels the launcher's process resolved --device to.
	Device string
	// Spill is the run's own spill directory (Run makes it in
	// Options.SpillDir for ivf mode and annotator-aware runs); empty: no
	// spilling.
	Spill string
	// Scratch is a local directory holding input files read through
	// iceberg-go's scanner (--input-table with deletes or renamed columns);
	// Run removes it. Empty: none.
	Scratch string
	// Crowd is the annotator-aware part (crowd.go); nil without annotators.
	Crowd *CrowdPlan
}

// MakePlan scans the input (footers and schemas only, plus the label column
// when the class set must be collected) and fixes every option.
func MakePlan(ctx context.Context, cfg Options) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Lake.InputTable != "" {
		return planTableInput(ctx, cfg)
	}
	if cfg.Input == "" {
		return makeLabelOnlyPlan(ctx, cfg)
	}
	ro := shardio.ReadOptions{Columns: cfg.Columns}
	shards, skipped, err := shardio.ScanFiles(ctx, cfg.Input, ro)
	if err != nil {
		return nil, err
	}
	return planShards(ctx, cfg, ro, shards, skipped)
}

// planShards is MakePlan past the scan: the class set, units and options of
// scanned shards (from a glob, or the files a table's scan planned).
func planShards(ctx context.Context, cfg Options, ro shardio.ReadOptions, shards []shardio.Shard, skipped []shardio.Skipped) (*Plan, error) {
	var err error
	in := shards[0].Input
	p := &Plan{Options: cfg, Shards: shards, Skipped: skipped, LabelKind: in.LabelKind, IDKind: in.IDKind}
	ro.D = shards[0].D
	switch {
	case in.LabelKind == schemas.LabelString && cfg.ClassNames != nil:
		names := append([]string(nil), cfg.ClassNames...)
		sort.Strings(names)
		p.ClassNames = names
	case in.LabelKind == schemas.LabelString:
		if p.ClassNames, err = shardio.ScanClassNames(ctx, shards, ro); err != nil {
			return nil, err
		}
	case cfg.ClassNames != nil:
		return nil, &OptionError{Flag: "class-names", Err: fmt.Errorf("given, but the labels of %s are %s class indices: class names are for string labels (use --classes for the count)", shards[0].Path, in.LabelKind)}
	case cfg.Classes.Set:
		// Scanned anyway: a label outside [0, C) or input with no label at
		// all fails here, naming the file and row, before anything runs.
		if err = shardio.CheckClasses(ctx, shards, ro, cfg.Classes.V); err != nil {
			return nil, err
		}
		p.C = cfg.Classes.V
	default:
		if p.C, err = shardio.ScanNumClasses(ctx, shards, ro); err != nil {
			return nil, err
		}
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
	seen := map[string]string{}
	for _, s := range shards {
		name := stages.OutputName(s.Path, cfg.Format)
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
	p.Mode = neighbourMode(&cfg, p.Rows)
	if p.Mixture, err = cfg.Mixture(p.C); err != nil {
		return nil, err
	}
	p.Candidates = cfg.Candidates.Or(0)
	if p.Mode == NeighboursSample && !cfg.Candidates.Set {
		p.Candidates = PaperCandidates
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
	if _, _, p.Device, err = stages.Backends(cfg.Device); err != nil {
		return nil, err
	}
	if err := planCrowd(ctx, &cfg, p); err != nil {
		return nil, err
	}
	if err := checkPlan(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Build adds the relabelling of plan to the pipeline rooted at s, writing into
// tmpDir. Element types: shardio.Unit -> schemas.Rows -> stages.Items ->
// schemas.Cleaned (grouped by shard).
func Build(s beam.Scope, plan *Plan, tmpDir string) {
	s = s.Scope("relabel")
	if plan.Crowd != nil && plan.Crowd.LabelOnly {
		buildLabelOnly(s, plan, tmpDir)
		return
	}
	o := &plan.Options
	units := beam.CreateList(s, plan.Units)
	rows := stages.Read(s, units, plan.Read)
	var items beam.PCollection
	if plan.Mode == NeighboursIVF {
		items = buildIVF(s, plan, units, rows)
	} else {
		stats := stages.ComputeStats(s, rows, stages.StatsParams{Candidates: plan.Candidates, Seed: o.Seed, IDColumn: plan.Read.Columns.WithDefaults().ID})
		items = stages.Neighbours(s, rows, stats, plan.NeighbourParams())
		if plan.Crowd != nil {
			items = buildCrowdFeatures(s, plan, units, items, tmpDir)
		} else {
			items = stages.Rounds(s, items, stages.RoundsParams{Rounds: o.Rounds, Workers: plan.Workers, Mixture: plan.Mixture})
		}
	}
	stages.Write(s, items, stages.WriteParams{
		TmpDir: tmpDir, Format: o.Format,
		Meta:      schemas.Metadata(Version, o.Seed, plan.OptionMap(), plan.ClassNames),
		LabelKind: plan.LabelKind, ClassNames: plan.ClassNames, IDKind: plan.IDKind, C: plan.C,
		Cal: plan.Calibration(),
	})
}

// Calibration is what the writer stage makes of the final states.
func (p *Plan) Calibration() stages.Calibration {
	if p.Crowd != nil {
		return p.Crowd.calibration(&p.Options)
	}
	t := p.Options.Temperature
	return stages.Calibration{Temperature: t.V, Auto: !t.Set, MinConfidence: p.Options.MinConfidence}
}

// NeighbourParams is what both neighbour paths (stages.Neighbours, and
// ivfstages.Neighbours inside its blocks) get: the options as given, the
// mixture resolved for the class set.
func (p *Plan) NeighbourParams() stages.NeighbourParams {
	o := &p.Options
	return stages.NeighbourParams{
		K: o.K, Metric: o.Metric, Standardise: o.Standardise,
		Weighting: o.Weighting, LLC: o.LLC(), Mixture: p.Mixture, Device: o.Device,
	}
}

// OptionMap spells every resolved option as its flag would, for the output
// metadata and summary.json: what the run used, defaults included.
func (p *Plan) OptionMap() map[string]string {
	o, m := &p.Options, p.Mixture
	opts := map[string]string{
		"k":                 strconv.Itoa(o.K),
		"metric":            o.Metric.String(),
		"standardise":       strconv.FormatBool(o.Standardise),
		"candidates":        strconv.Itoa(p.Candidates),
		"weights":           o.Weighting.String(),
		"llc-lambda":        fmtF(o.LLCLambda),
		"llc-sigma":         fmtF(o.LLCSigma),
		"rounds":            strconv.Itoa(o.Rounds),
		"classes":           strconv.Itoa(m.C),
		"c0":                strconv.Itoa(m.C0),
		"l":                 strconv.Itoa(m.L),
		"n":                 strconv.Itoa(m.N),
		"mu":                fmtF(m.Mu),
		"gamma":             fmtF(m.Gamma),
		"alpha":             fmtF(m.Alpha),
		"beta":              fmtF(m.Beta),
		"em-iters":          strconv.Itoa(m.EMIters),
		"em-tol":            fmtF(m.EMTol),
		"em-variant":        m.Variant.String(),
		"min-class-mass":    fmtF(m.MinClassMass),
		"smooth":            fmtF(m.Smooth),
		"anchor":            fmtF(m.Anchor),
		"annotation-weight": fmtF(m.AnnotationWeight),
		"temperature":       (&optAuto{p: &o.Temperature}).String(),
		"min-confidence":    fmtF(o.MinConfidence),
		"max-row-terms":     strconv.Itoa(m.MaxRowEntries),
		"seed":              strconv.FormatUint(o.Seed, 10),
		"format":            o.Format.String(),
		"device":            o.Device,
		"neighbours":        p.Mode,
		"partitions":        strconv.Itoa(o.Partitions.Or(0)),
		"nprobe":            strconv.Itoa(o.NProbe.Or(0)),
	}
	p.crowdOptions(opts)
	return opts
}
