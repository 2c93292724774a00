package pipelines

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/stages"
)

// Plan is what the launcher learns before building the pipeline: the shards
// and their units of work, the class set, and the options with data-dependent
// defaults filled in.
type Plan struct {
	Config     Config
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
	// Config.SpillDir for ivf mode); empty: no spilling.
	Spill string
}

// MakePlan scans the input (footers and schemas only, plus the label column
// when the class set must be collected) and fixes every option.
func MakePlan(ctx context.Context, cfg Config) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ro := shardio.ReadOptions{Columns: cfg.Columns}
	shards, err := shardio.Scan(ctx, cfg.Input, ro)
	if err != nil {
		return nil, err
	}
	in := shards[0].Input
	p := &Plan{Config: cfg, Shards: shards, LabelKind: in.LabelKind, IDKind: in.IDKind}
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
	case cfg.Classes > 0:
		p.C = cfg.Classes
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
	p.Config = resolveNeighbours(p.Config, p.Rows)
	e := p.Config.Engine
	e.Mixture.C = p.C
	e = e.WithDefaults()
	if err := e.Validate(); err != nil {
		return nil, err
	}
	p.Config.Engine = e
	if _, _, p.Device, err = stages.Backends(cfg.Device); err != nil {
		return nil, err
	}
	return p, nil
}

// Build adds the relabelling of plan to the pipeline rooted at s, writing into
// tmpDir. Element types: shardio.Unit -> schemas.Rows -> stages.Items ->
// schemas.Cleaned (grouped by shard).
func Build(s beam.Scope, plan *Plan, tmpDir string) {
	s = s.Scope("relabel")
	e := plan.Config.Engine
	units := beam.CreateList(s, plan.Units)
	rows := stages.Read(s, units, plan.Read)
	var items beam.PCollection
	if plan.Config.Neighbours == NeighboursIVF {
		items = buildIVF(s, plan, units, rows)
	} else {
		stats := stages.ComputeStats(s, rows, stages.StatsParams{Candidates: e.Candidates, Seed: e.Mixture.Seed, IDColumn: plan.Read.Columns.WithDefaults().ID})
		items = stages.Neighbours(s, rows, stats, stages.NeighbourParams{
			K: e.K, Metric: e.Metric, Standardise: e.Standardise, Weighting: e.Weighting, Options: e,
			Device: plan.Config.Device,
		})
		items = stages.Rounds(s, items, stages.RoundsParams{Rounds: e.Rounds, Workers: e.Workers, Mixture: e.Mixture})
	}
	stages.Write(s, items, stages.WriteParams{
		TmpDir: tmpDir, Format: plan.Config.Format,
		Meta:      schemas.Metadata(Version, e.Mixture.Seed, plan.Config.OptionMap(), plan.ClassNames),
		LabelKind: plan.LabelKind, ClassNames: plan.ClassNames, IDKind: plan.IDKind, C: plan.C,
	})
}
