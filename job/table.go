package job

import (
	"context"
	"fmt"
	"os"

	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/options"
)

// Resolving a run over an Iceberg input table (--input-table): the table's
// snapshot becomes the job's shards. Table runs themselves (an output
// table, or --incremental) are package lake's.

// planTableInput is Resolve with --input-table and a directory output.
// The files the catalog reads through iceberg-go's scanner (deletes applied,
// columns resolved by field id) outlive the catalog here, in the plan's
// Scratch directory, which the run's Session removes (Close) after the
// pipeline read them.
func planTableInput(ctx context.Context, cfg options.Options) (*Job, error) {
	scratch, err := os.MkdirTemp("", "relabel-iceberg-")
	if err != nil {
		return nil, err
	}
	cat, err := icebergio.OpenCatalog(ctx, cfg.Lake.Catalog, icebergio.CatalogOptions{Name: cfg.Lake.CatalogName, Warehouse: cfg.Lake.Warehouse, Scratch: scratch})
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	defer cat.Close()
	p, _, err := resolveTable(ctx, cfg, cat)
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	p.Scratch = scratch
	return p, nil
}

// resolveTable resolves a run over the input table's current snapshot: its
// data files become the shards (shardio.ScanPaths) and their units the
// pipeline's units. The table lake (package lake) resolves its runs with it
// (Config.ResolveTable), on the catalog it also commits through; the job's
// Input names the snapshot. A run into an output table writes Parquet
// (Iceberg data files) whatever --format says.
func resolveTable(ctx context.Context, cfg options.Options, cat *icebergio.Catalog) (*Job, *icebergio.InputPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	in, err := cat.PlanInput(ctx, cfg.Lake.InputTable)
	if err != nil {
		return nil, nil, err
	}
	if len(in.Tasks) == 0 {
		return nil, nil, fmt.Errorf("relabel: input table %s snapshot %d has no data files", in.Table, in.SnapshotID)
	}
	paths := make([]string, len(in.Tasks))
	for i, t := range in.Tasks {
		paths[i] = t.ReaderPath()
	}
	cfg.Input = fmt.Sprintf("%s@%d", in.Table, in.SnapshotID)
	if cfg.Lake.OutputTable != "" {
		cfg.Format = shardio.Parquet
	}
	ro := shardio.ReadOptions{Columns: cfg.Columns}
	shards, skipped, err := shardio.ScanPaths(ctx, paths, ro)
	if err != nil {
		return nil, nil, err
	}
	p, err := planShards(ctx, cfg, ro, shards, skipped)
	if err != nil {
		return nil, nil, err
	}
	return p, in, nil
}
