package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/runners"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/mixture"
)

func version() string { return pipelines.Version }

// runFlags binds every option of `relabel run` to a Config.
type runFlags struct {
	fs                             *flag.FlagSet
	cfg                            pipelines.Config
	format, metric, weights, em    string
	idCol, featCol, labelCol, lbls string
	classNames                     string
	noStd                          bool
}

func newRunFlags(stderr io.Writer) *runFlags {
	f := &runFlags{fs: flag.NewFlagSet("run", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	c := &f.cfg
	e := &c.Engine
	m := &e.Mixture
	d := pipelines.DefaultEngine()
	dm := d.Mixture
	fs.StringVar(&c.Input, "input", "", "input shards: a glob of Parquet or Arrow IPC files, local or gs:// (required)")
	fs.StringVar(&c.Output, "output", "", "output directory, local or gs:// (required)")
	fs.StringVar(&f.format, "format", "arrow", "output format: arrow (IPC file) or parquet")
	fs.BoolVar(&c.Overwrite, "overwrite", false, "replace outputs of an earlier run")
	fs.StringVar(&f.idCol, "id-column", schemas.ColID, "id column (int64 or string, unique)")
	fs.StringVar(&f.featCol, "features-column", schemas.ColFeatures, "features column (fixed_size_list or list of float32/float64)")
	fs.StringVar(&f.labelCol, "label-column", schemas.ColLabel, "single noisy label column (int32/int64 or string; null = unlabelled)")
	fs.StringVar(&f.lbls, "labels-column", schemas.ColLabels, "list-of-annotations column, used when there is no label column")
	fs.IntVar(&c.Classes, "classes", 0, "number of classes C of integer labels (default: one more than the largest label)")
	fs.StringVar(&f.classNames, "class-names", "", "comma-separated class set of string labels (default: every label seen)")

	fs.IntVar(&e.K, "k", d.K, "neighbours per item")
	fs.StringVar(&f.metric, "metric", "l2", "neighbour distance: l2 (squared Euclidean) or cosine")
	fs.BoolVar(&f.noStd, "no-standardise", !d.Standardise, "search neighbours on raw features instead of z-scored ones")
	fs.IntVar(&e.Candidates, "candidates", d.Candidates, "candidate set size neighbours are searched in (0 = all items; the paper uses 15000)")
	fs.StringVar(&c.Neighbours, "neighbours", "auto", "where neighbours are searched: exact (all items), sample (--candidates subset), ivf (k-means partitions, for large inputs) or auto (by size)")
	fs.IntVar(&c.Partitions, "partitions", 0, "ivf: k-means partitions (default rows/500)")
	fs.IntVar(&c.NProbe, "nprobe", 0, "ivf: partitions each item is stored in (default 8)")
	fs.IntVar(&c.WaveMiB, "wave-mib", 0, "ivf with --spill-dir none: MiB one wave of the search or of a round shuffles (default 128 on the embedded runner, no waves elsewhere; -1: no waves)")
	fs.StringVar(&c.SpillDir, "spill-dir", "", "ivf on the embedded runner: local directory under which blocks and states wait between stages, instead of in the runner's memory (default: the system temporary directory; none: keep them in memory)")
	fs.StringVar(&f.weights, "weights", d.Weighting.String(), "neighbour weights: llc (locality-constrained linear coding), uniform, or blend (their average)")
	fs.Float64Var(&e.LLC.Lambda, "llc-lambda", 0, "LLC locality adaptor weight (0 = the paper's plain LLC)")
	fs.Float64Var(&e.LLC.Sigma, "llc-sigma", 1, "LLC locality adaptor scale")
	fs.IntVar(&e.Rounds, "rounds", d.Rounds, "relabelling rounds")
	fs.IntVar(&m.C0, "c0", dm.C0, "classes kept per item's posterior (default min(C, 10))")
	fs.IntVar(&m.L, "l", dm.L, "count vectors sampled per item per round")
	fs.IntVar(&m.N, "n", dm.N, "trials per count vector (default 2*c0-1, the identifiability bound)")
	fs.Float64Var(&m.Mu, "mu", dm.Mu, "weight of the item's own state in its mixture (neighbours get 1-mu)")
	fs.Float64Var(&m.Gamma, "gamma", dm.Gamma, "momentum of the state update (0 = EM output replaces the state)")
	fs.Float64Var(&m.Alpha, "alpha", dm.Alpha, "Dirichlet prior of pi")
	fs.Float64Var(&m.Beta, "beta", dm.Beta, "Dirichlet prior of rho rows")
	fs.IntVar(&m.EMIters, "em-iters", dm.EMIters, "EM iterations per round")
	fs.StringVar(&f.em, "em-variant", dm.Variant.String(), "EM variant: paper (sample once, warm start) or code (authors' code: re-initialise, re-sample every iteration)")
	fs.Float64Var(&m.Smooth, "smooth", dm.Smooth, "label smoothing of the initial transition rows")
	fs.Float64Var(&m.Anchor, "anchor", dm.Anchor, "weight of the given labels as an extra mixture component every round")
	fs.Float64Var(&m.AnnotationWeight, "annotation-weight", dm.AnnotationWeight, "weight per extra annotation of an item's given labels as a mixture component every round")
	fs.Uint64Var(&m.Seed, "seed", dm.Seed, "seed of all sampling (with item id and round)")
	fs.StringVar(&c.Device, "device", "auto", "kNN/LLC kernels: cpu, cuda (needs a -tags cuda build and a GPU) or auto")
	fs.IntVar(&e.Workers, "workers", 0, "goroutines per stage (default GOMAXPROCS)")
	// Beam's own flags (--runner, --endpoint, --environment_type,
	// --worker_binary, --project, --region, --temp_location, ...) are accepted
	// as they are: they live on flag.CommandLine, where Beam and
	// runners.FromFlags read them.
	flag.CommandLine.VisitAll(func(g *flag.Flag) {
		if fs.Lookup(g.Name) == nil {
			fs.Var(g.Value, g.Name, g.Usage)
		}
	})
	return f
}

func (f *runFlags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if f.fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", f.fs.Args())}
	}
	c := &f.cfg
	var err error
	if c.Format, err = shardio.ParseFormat(f.format); err != nil {
		return usageError{err}
	}
	switch f.metric {
	case "l2":
		c.Engine.Metric = knn.L2
	case "cosine":
		c.Engine.Metric = knn.Cosine
	default:
		return usageError{fmt.Errorf("--metric %q: want l2 or cosine", f.metric)}
	}
	if c.Engine.Weighting, err = engine.ParseWeighting(f.weights); err != nil {
		return usageError{err}
	}
	if c.Engine.Mixture.Variant, err = mixture.ParseVariant(f.em); err != nil {
		return usageError{err}
	}
	c.Engine.Standardise = !f.noStd
	c.Columns = schemas.Columns{ID: f.idCol, Features: f.featCol, Label: f.labelCol, Labels: f.lbls}
	if !flagSet(f.fs, "label-column") && flagSet(f.fs, "labels-column") {
		c.Columns.Label = ""
	}
	if f.classNames != "" {
		c.ClassNames = strings.Split(f.classNames, ",")
	}
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// errDryRun ends a dry run's pipelines.Run before it looks for output.
var errDryRun = errors.New("relabel: dry run")

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newRunFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	ro := runners.FromFlags()
	if ro.Runner == "" || ro.Runner == "direct" {
		ro.Runner = runners.Prism
	}
	if err := ro.Validate(); err != nil {
		return usageError{err}
	}
	if !flagSet(f.fs, "wave-mib") && ro.Runner != runners.Prism {
		f.cfg.WaveMiB = -1 // waves bound the embedded runner's memory; elsewhere they only add stages
	}
	// Spilling keeps ivf's blocks and states out of Prism's in-memory
	// shuffle. It needs workers that share this process's disk (the LOOPBACK
	// environment, Prism's default); a distributed runner's own shuffle
	// spreads over workers and disks instead.
	loopback := strings.EqualFold(ro.EnvironmentType, "LOOPBACK") || ro.EnvironmentType == "" && ro.Runner == runners.Prism
	switch {
	case f.cfg.SpillDir == "none":
		f.cfg.SpillDir = ""
	case f.cfg.SpillDir != "" && !loopback:
		return usageError{fmt.Errorf("--spill-dir %s: spilling needs workers in this process (the embedded runner, or --environment_type=LOOPBACK)", f.cfg.SpillDir)}
	case f.cfg.SpillDir == "" && ro.Runner == runners.Prism && loopback:
		f.cfg.SpillDir = os.TempDir()
	}
	// relabel commits the output after the job: Beam's --async would return
	// before there is anything to commit.
	if a := flag.Lookup("async"); a != nil && a.Value.String() == "true" {
		return usageError{errors.New("--async is not supported: relabel waits for the job to finish, then commits its output")}
	}
	// A Dataflow dry run prints the job and runs nothing: there is no output.
	dryRun := strings.EqualFold(strings.TrimSpace(ro.Runner), runners.Dataflow) && ro.Dataflow.DryRun
	exec := func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
		res, err := runners.Run(ctx, p, ro)
		if err == nil && dryRun {
			return nil, errDryRun
		}
		return res, err
	}
	sum, err := pipelines.Run(ctx, f.cfg, exec)
	if errors.Is(err, errDryRun) {
		fmt.Fprintln(stdout, "relabel: dry run: the Dataflow job request is printed on stderr; nothing was submitted or written")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "relabel: %d rows relabelled, %d labels changed (%.1f%%); output in %s (summary.json beside the shards)\n",
		sum.Rows, sum.Changed, 100*float64(sum.Changed)/float64(max(sum.Rows, 1)), sum.Output)
	return nil
}

// oneLine reduces an error to the line a user needs: Beam wraps DoFn errors in
// stack and stage context, but relabel's own messages start with a package
// prefix and name the file, row and column.
func oneLine(err error) string {
	msg := err.Error()
	best := -1
	for _, p := range []string{"shardio: ", "relabel: ", "stages: ", "blobio: ", "engine: ", "mixture: ", "schemas: "} {
		if i := strings.Index(msg, p); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best >= 0 {
		msg = msg[best:]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}
