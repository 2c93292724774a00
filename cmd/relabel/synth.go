package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"

	"github.com/relabel/relabel/internal/budget"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/io/synthio"
	"github.com/relabel/relabel/transforms/synth"
)

// synthCmd writes a synthetic dataset (transforms/synth) for scale runs.
func synthCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var p synth.Params
	var o synthio.Options
	var out, format string
	var rank int
	fs.Int64Var(&p.Rows, "rows", 100000, "rows (ids 0..rows-1)")
	fs.IntVar(&p.D, "d", 64, "feature dimension")
	fs.IntVar(&p.Classes, "classes", 20, "number of classes")
	fs.Float64Var(&p.Noise, "noise", 0.3, "fraction of labels flipped to a uniformly random other class")
	fs.IntVar(&rank, "rank", 0, fmt.Sprintf("directions each class spreads along, >= 1 (default min(d, %d))", synth.MaxDefaultRank))
	var separation, jitter float64
	fs.Float64Var(&separation, "separation", synth.DefaultSeparation, "standard deviation of the class means' coordinates (smaller: classes closer, a harder set)")
	fs.Float64Var(&jitter, "jitter", synth.DefaultJitter, "standard deviation of every row's isotropic noise (larger: a harder set)")
	fs.Uint64Var(&p.Seed, "seed", 1, "seed: the same flags write the same files")
	fs.IntVar(&o.Shards, "shards", 1, "number of output files")
	fs.IntVar(&o.BatchRows, "batch-rows", 16384, "rows per row group (the pipeline's unit of work)")
	fs.StringVar(&format, "format", "parquet", "file format: parquet or arrow")
	fs.StringVar(&out, "output", "", "output directory: part-NNNNN shards and truth.i32 (required)")
	fs.BoolVar(&o.Overwrite, "overwrite", false, "replace existing shards and truth.i32 in --output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if out == "" {
		return usageError{fmt.Errorf("--output is required")}
	}
	// The generator's defaults (synth.DefaultParams), the flags' values as
	// given: an explicit --rank 0 is refused below, not replaced.
	p = synth.DefaultParams(p.Rows, p.D, p.Classes, p.Noise, p.Seed)
	p.Separation, p.Jitter = separation, jitter
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "rank" {
			p.Rank = rank
		}
	})
	var err error
	if o.Format, err = shardio.ParseFormat(format); err != nil {
		return usageError{err}
	}
	// Before synth.New allocates anything: --d 1000000000 is refused, not
	// an out-of-memory crash.
	switch {
	case p.Rows < 1:
		return usageError{fmt.Errorf("--rows %d, want >= 1", p.Rows)}
	case p.D < 1:
		return usageError{fmt.Errorf("--d %d, want >= 1", p.D)}
	case p.Classes < 1 || int64(p.Classes) > math.MaxInt32:
		return usageError{fmt.Errorf("--classes %d, want in [1, %d]", p.Classes, math.MaxInt32)}
	case p.Rank < 1:
		return usageError{fmt.Errorf("--rank %d, want >= 1", p.Rank)}
	case !(p.Separation >= 0) || math.IsInf(p.Separation, 0):
		return usageError{fmt.Errorf("--separation %v, want a finite value >= 0", p.Separation)}
	case !(p.Jitter >= 0) || math.IsInf(p.Jitter, 0):
		return usageError{fmt.Errorf("--jitter %v, want a finite value >= 0", p.Jitter)}
	}
	est := budget.Synth(p.Rows, p.D, p.Classes, p.Rank, o.Shards, runtime.GOMAXPROCS(0))
	if err := budget.Fit(est, budget.Memory()); err != nil {
		be := err.(*budget.Error)
		return usageError{fmt.Errorf("--%s: %s (fewer --rows per shard, more --shards, or a smaller --d)", be.Flag, be.Msg)}
	}
	if free := budget.FreeDisk(out); free > 0 && est.Output > free {
		return usageError{fmt.Errorf("--rows %d --d %d: the shards would take about %s, more than the %s free under %s", p.Rows, p.D, budget.Bytes(est.Output), budget.Bytes(free), progress.Safe(out))}
	}
	g, err := synth.New(p)
	if err != nil {
		return usageError{err}
	}
	paths, err := synthio.Write(ctx, out, g, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "relabel: wrote %d rows (d=%d, %d classes, %.0f%% noise) in %d shards under %s; true classes in truth.i32\n",
		p.Rows, p.D, p.Classes, 100*p.Noise, len(paths), out)
	return nil
}
