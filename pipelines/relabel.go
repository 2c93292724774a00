package pipelines

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/stages"
)

// Plan is what the launcher learns before building the pipeline: the shards
// and their units of work, the class set, and the options with data-dependent
// defaults filled in.
type Plan struct {
	// Options are the job's options as given; Engine is what the stages
	// get, with the data-dependent defaults resolved.
	Options Options
	Engine  engine.Options
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
	// Device describes the kernels the launcher's process resolved --device to.
	Device string
	// Spill is the run's own spill directory (Run makes it in
	// Options.SpillDir for ivf mode); empty: no spilling.
	Spill string
	// Crowd is the annotator-aware part (crowd.go); nil without annotators.
	Crowd *CrowdPlan
}

// MakePlan scans the input (footers and schemas only, plus the label column
// when the class set must be collected) and fixes every option.
func MakePlan(ctx context.Context, cfg Options) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Input == "" {
		return makeLabelOnlyPlan(ctx, cfg)
	}
	ro := shardio.ReadOptions{Columns: cfg.Columns}
	shards, err := shardio.Scan(ctx, cfg.Input, ro)
	if err != nil {
		return nil, err
	}
	in := shards[0].Input
	p := &Plan{Options: cfg, Shards: shards, LabelKind: in.LabelKind, IDKind: in.IDKind}
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
	case cfg.Classes.Set:
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
	e, err := cfg.Engine(p.C)
	if err != nil {
		return nil, err
	}
	if p.Mode == NeighboursSample && !cfg.Candidates.Set {
		e.Candidates = PaperCandidates
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	p.Engine = e
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
	e := plan.Engine
	units := beam.CreateList(s, plan.Units)
	rows := stages.Read(s, units, plan.Read)
	var items beam.PCollection
	if plan.Mode == NeighboursIVF {
		items = buildIVF(s, plan, units, rows)
	} else {
		stats := stages.ComputeStats(s, rows, stages.StatsParams{Candidates: e.Candidates, Seed: e.Mixture.Seed, IDColumn: plan.Read.Columns.WithDefaults().ID})
		items = stages.Neighbours(s, rows, stats, stages.NeighbourParams{
			K: e.K, Metric: e.Metric, Standardise: e.Standardise, Weighting: e.Weighting, Options: e,
			Device: plan.Options.Device,
		})
		if plan.Crowd != nil {
			items = buildCrowdFeatures(s, plan, units, items, tmpDir)
		} else {
			items = stages.Rounds(s, items, stages.RoundsParams{Rounds: e.Rounds, Workers: e.Workers, Mixture: e.Mixture})
		}
	}
	stages.Write(s, items, stages.WriteParams{
		TmpDir: tmpDir, Format: plan.Options.Format,
		Meta:      schemas.Metadata(Version, e.Mixture.Seed, plan.OptionMap(), plan.ClassNames),
		LabelKind: plan.LabelKind, ClassNames: plan.ClassNames, IDKind: plan.IDKind, C: plan.C,
	})
}

// OptionMap spells every resolved option as its flag would, for the output
// metadata and summary.json: what the run used, defaults included.
func (p *Plan) OptionMap() map[string]string {
	o, e := &p.Options, p.Engine
	m := e.Mixture
	opts := map[string]string{
		"k":                 strconv.Itoa(e.K),
		"metric":            e.Metric.String(),
		"standardise":       strconv.FormatBool(e.Standardise),
		"candidates":        strconv.Itoa(e.Candidates),
		"weights":           e.Weighting.String(),
		"llc-lambda":        fmtF(e.LLC.Lambda),
		"llc-sigma":         fmtF(e.LLC.Sigma),
		"rounds":            strconv.Itoa(e.Rounds),
		"classes":           strconv.Itoa(m.C),
		"c0":                strconv.Itoa(m.C0),
		"l":                 strconv.Itoa(m.L),
		"n":                 strconv.Itoa(m.N),
		"mu":                fmtF(m.Mu),
		"gamma":             fmtF(m.Gamma),
		"alpha":             fmtF(m.Alpha),
		"beta":              fmtF(m.Beta),
		"em-iters":          strconv.Itoa(m.EMIters),
		"em-variant":        m.Variant.String(),
		"smooth":            fmtF(m.Smooth),
		"anchor":            fmtF(m.Anchor),
		"annotation-weight": fmtF(m.AnnotationWeight),
		"max-row-terms":     strconv.Itoa(m.MaxRowEntries),
		"seed":              strconv.FormatUint(m.Seed, 10),
		"format":            o.Format.String(),
		"device":            o.Device,
		"neighbours":        p.Mode,
		"partitions":        strconv.Itoa(o.Partitions.Or(0)),
		"nprobe":            strconv.Itoa(o.NProbe.Or(0)),
	}
	p.crowdOptions(opts)
	return opts
}
