package job

import (
	"context"

	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
)

// Config is a run as given, before anything is scanned: its options, held
// where the layers that receive it cannot read them. cmd/relabel makes one
// (NewConfig) and hands it to the run it dispatches to (pipelines.Run,
// lake.RunDir, lake.RunTable); they read only where it goes (Lake) and
// resolve it (Resolve, ResolveTable) into the Job every later step reads.
// Package job is the only one outside cmd/ and internal/ that imports
// package options (internal/archcheck).
type Config struct{ opts options.Options }

// NewConfig is the run of the options o (validated by Resolve).
func NewConfig(o options.Options) Config { return Config{opts: o} }

// Defaults is the run of relabel run's defaults (options.Defaults).
func Defaults() Config { return NewConfig(options.Defaults()) }

// Engine is the in-process engine's options for a run over classes
// classes (options.Options.Engine): the values the stages get, for the
// quality harnesses, which run the engine without scanning an input.
func (c Config) Engine(classes int) (engine.Options, error) { return c.opts.Engine(classes) }

// Calibration is how the run turns final states into output rows
// (--temperature: unset fits it, Auto; --min-confidence), before the
// given-label model and the annotators are known (Job.Calibration).
func (c Config) Calibration() resultio.Calibration {
	t := c.opts.Temperature
	return resultio.Calibration{Temperature: t.V, Auto: !t.Set, MinConfidence: c.opts.MinConfidence}
}

// Lake is where a lake run reads and commits, and whether it relabels
// only what is new.
type Lake struct {
	// Catalog is the Iceberg catalog's URI; CatalogName and Warehouse its
	// name and where tables it creates keep their files (empty: the
	// catalog's defaults; icebergio.CatalogOptions).
	Catalog, CatalogName, Warehouse string
	// InputTable and OutputTable are the tables read and written (ns.table;
	// empty: none).
	InputTable, OutputTable string
	// Incremental relabels only the rows new since the output's last run
	// (package lake).
	Incremental bool
}

func lakeOf(o *options.Options) Lake {
	l := &o.Lake
	return Lake{Catalog: l.Catalog, CatalogName: l.CatalogName, Warehouse: l.Warehouse,
		InputTable: l.InputTable, OutputTable: l.OutputTable, Incremental: l.Incremental}
}

// Lake is where the run reads and commits.
func (c Config) Lake() Lake { return lakeOf(&c.opts) }

// Resolve resolves the run (the package's Resolve).
func (c Config) Resolve(ctx context.Context) (*Job, error) { return Resolve(ctx, c.opts) }

// ResolveTable resolves a run over the input table's current snapshot on
// cat, the catalog the table lake also commits through: the snapshot's data
// files become the job's shards (resolveTable).
func (c Config) ResolveTable(ctx context.Context, cat *icebergio.Catalog) (*Job, *icebergio.InputPlan, error) {
	return resolveTable(ctx, c.opts, cat)
}

// Neighbour modes (Job.Mode, summary.json "neighbours"), as options
// spells them.
const (
	ModeExact  = options.NeighboursExact
	ModeSample = options.NeighboursSample
	ModeIVF    = options.NeighboursIVF
)

// HeadOff is Job.Head for a run without the linear head.
const HeadOff = options.HeadOff

// FlagError is an error about the option named flag (as the user spells it,
// without dashes): the command exits 2 for it, as for an invalid value.
func FlagError(flag string, err error) error { return &options.Error{Flag: flag, Err: err} }

// Changed lists the compared options (the flag table's) whose recorded
// values differ between two runs, last and now (Job.Recorded, summary.json
// "options"), each naming the flag and both values.
func Changed(last, now map[string]string) []string { return options.Changed(last, now) }
