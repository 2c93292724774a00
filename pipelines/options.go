package pipelines

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivfstages"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// Version is relabel's version, recorded in every output.
const Version = "0.1.0"

// Opt is an option whose default depends on the data (the class count, the
// row count, the runner): unset is its own state, so an explicit value is
// always used as given (or rejected), never mistaken for "use the default".
type Opt[T any] struct {
	V   T
	Set bool
}

// Some is a set Opt.
func Some[T any](v T) Opt[T] { return Opt[T]{V: v, Set: true} }

// Or returns the value if set, else def.
func (o Opt[T]) Or(def T) T {
	if o.Set {
		return o.V
	}
	return def
}

// Options is one relabelling job: every option of `relabel run`, in one
// place. Defaults() holds every default; Flags binds each field to its flag
// (name, group, doc and validation); Engine resolves the data-dependent
// defaults once the class count is known and hands each stage its typed
// value. Layers below receive the values, never this struct's flag names.
type Options struct {
	// Input/output.
	Input      string
	Output     string
	Format     shardio.Format
	Overwrite  bool
	Columns    schemas.Columns
	Classes    Opt[int]
	ClassNames []string
	// Lake: Iceberg tables in and out, incremental runs (lake.go).
	Lake LakeOptions

	// Neighbours.
	K           int
	Metric      knn.Metric
	Standardise bool
	Candidates  Opt[int]
	Neighbours  string
	Partitions  Opt[int]
	NProbe      Opt[int]
	WaveMiB     Opt[int]
	SpillDir    Opt[string]
	LocalMiB    Opt[int]
	Weighting   engine.Weighting
	LLCLambda   float64
	LLCSigma    float64

	// Method.
	Rounds           int
	C0               Opt[int]
	L                int
	N                Opt[int]
	Mu               float64
	Gamma            float64
	Alpha            float64
	Beta             float64
	EMIters          Opt[int]
	EMTol            float64
	Variant          mixture.Variant
	Draws            mixture.Draws
	Smooth           float64
	Anchor           float64
	AnnotationWeight float64
	ActiveTol        float64
	MinClassMass     float64
	// Temperature calibrates the output's probabilities (pi^(1/T)
	// renormalised); unset ("auto", the default), T is fitted to the run's
	// final states (mixture.AutoTemperature). MinConfidence changes a label
	// only where the calibrated clean_prob reaches it (stages.Calibration).
	Temperature   Opt[float64]
	MinConfidence float64

	// Seed seeds all sampling (with the item id and the round).
	Seed uint64

	// Device and run.
	Device  string
	Workers Opt[int]
	// Report writes report.html beside summary.json.
	Report bool
	// Verbose shows Beam's and Prism's own INFO log lines and the plain
	// per-stage progress lines instead of the one live line.
	Verbose bool

	// Annotators (crowd.go): who gave each label.
	Annotations       string
	AnnotationColumns annotio.Columns
	AnnotatorsColumn  string
	CrowdIters        int
	AnnotatorPrior    Opt[float64]
	NeighbourPrior    float64
	ClassBalance      float64
}

// Defaults returns every option's default. The method's (transforms/mixture,
// transforms/llc) come from mixture.DefaultParams and llc.DefaultParams,
// chosen by measurement on the dev grid (docs/QUALITY.md); the rest are
// written here. No other layer defaults anything: the CLI's flags, the
// quality harness and the tests start here, so what is measured is what
// users get.
func Defaults() Options {
	m := mixture.DefaultParams(0) // c0, n (data) and em-iters (variant) stay unset (Opt)
	l := llc.DefaultParams()
	return Options{
		Format:           shardio.ArrowFile,
		Columns:          schemas.Columns{ID: schemas.ColID, Features: schemas.ColFeatures, Label: schemas.ColLabel, Labels: schemas.ColLabels},
		K:                10,
		Metric:           knn.L2,
		Standardise:      true,
		Neighbours:       NeighboursAuto,
		Weighting:        engine.Blend,
		LLCLambda:        l.Lambda,
		LLCSigma:         l.Sigma,
		Rounds:           10,
		L:                m.L,
		Mu:               m.Mu,
		Gamma:            m.Gamma,
		Alpha:            m.Alpha,
		Beta:             m.Beta,
		EMTol:            m.EMTol,
		Variant:          m.Variant,
		Draws:            m.Draws,
		Smooth:           m.Smooth,
		Anchor:           m.Anchor,
		AnnotationWeight: m.AnnotationWeight,
		ActiveTol:        m.ActiveTol,
		MinClassMass:     m.MinClassMass,
		Seed:             1,
		Device:           "auto",
		Report:           true,

		AnnotationColumns: annotio.Columns{ID: annotio.ColID, Annotator: annotio.ColAnnotator, Label: annotio.ColLabel},
		AnnotatorsColumn:  annotio.ColAnnotators,
		CrowdIters:        30,
		NeighbourPrior:    0.8,
		ClassBalance:      0.1,
	}
}

// Flag groups, in the order `relabel run -h` prints them.
const (
	GroupIO         = "Input and output"
	GroupMethod     = "Method"
	GroupNeighbours = "Neighbours and scale"
	GroupRun        = "Device and run"
)

// Groups lists the flag groups in help order.
var Groups = []string{GroupIO, GroupMethod, GroupNeighbours, GroupRun}

// Flag is one option of `relabel run`: its name, group, one-line doc, the
// field it binds and the check of an explicit value. The default shown is
// the bound field's value in Defaults(), or Default where it depends on the
// data.
type Flag struct {
	Name    string
	Group   string
	Usage   string
	Default string // for data-dependent defaults: the rule, in words
	bind    func(o *Options) flag.Value
	check   func(o *Options) error
}

// Flags are relabel run's own flags, in help order within each group.
var Flags = []Flag{
	{Name: "input", Group: GroupIO, Usage: "input shards: a glob of Parquet or Arrow IPC files, local or gs:// (required, but for label-only --annotations)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Input) },
		check: func(o *Options) error {
			if o.Input == "" && o.Lake.InputTable == "" && o.Annotations == "" {
				return errors.New("is required (or --input-table, or --annotations alone for label-only mode)")
			}
			return nil
		}},
	{Name: "output", Group: GroupIO, Usage: "output directory, local or gs:// (required)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Output) },
		check: func(o *Options) error {
			if o.Output == "" && o.Lake.OutputTable == "" {
				return errors.New("is required (or --output-table)")
			}
			return nil
		}},
	{Name: "format", Group: GroupIO, Usage: "output format: arrow (IPC file) or parquet",
		bind: func(o *Options) flag.Value {
			return &enumValue[shardio.Format]{p: &o.Format, parse: func(s string) (shardio.Format, error) {
				f, err := shardio.ParseFormat(s)
				if err != nil || (f != shardio.ArrowFile && f != shardio.Parquet) {
					return 0, errors.New("want arrow or parquet")
				}
				return f, nil
			}}
		}},
	{Name: "overwrite", Group: GroupIO, Usage: "replace the finished output of an earlier run",
		bind: func(o *Options) flag.Value { return (*boolValue)(&o.Overwrite) }},
	{Name: "report", Group: GroupIO, Usage: "write report.html beside summary.json",
		bind: func(o *Options) flag.Value { return (*boolValue)(&o.Report) }},
	{Name: "id-column", Group: GroupIO, Usage: "id column (int64 or string, unique)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Columns.ID) }, check: nonEmpty(func(o *Options) string { return o.Columns.ID })},
	{Name: "features-column", Group: GroupIO, Usage: "features column (fixed_size_list or list of float32/float64)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Columns.Features) }, check: nonEmpty(func(o *Options) string { return o.Columns.Features })},
	{Name: "label-column", Group: GroupIO, Usage: "single noisy label column (int32/int64 or string; null = unlabelled)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Columns.Label) }},
	{Name: "labels-column", Group: GroupIO, Usage: "list-of-annotations column, used when there is no label column",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Columns.Labels) }},
	{Name: "classes", Group: GroupIO, Usage: "number of classes C of integer labels", Default: "one more than the largest label",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.Classes} }, check: atLeast(1, func(o *Options) Opt[int] { return o.Classes })},
	{Name: "class-names", Group: GroupIO, Usage: "comma-separated class set of string labels", Default: "every label seen",
		bind: func(o *Options) flag.Value { return &namesValue{p: &o.ClassNames} },
		check: func(o *Options) error {
			if o.ClassNames != nil && o.Classes.Set && o.Classes.V != len(o.ClassNames) {
				return fmt.Errorf("names %d classes, but --classes is %d", len(o.ClassNames), o.Classes.V)
			}
			return nil
		}},

	{Name: "rounds", Group: GroupMethod, Usage: "relabelling rounds (0: the given labels' initial states only)",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.Rounds) }, check: intAtLeast(0, func(o *Options) int { return o.Rounds })},
	{Name: "c0", Group: GroupMethod, Usage: "classes kept per item's posterior", Default: fmt.Sprintf("min(C, %d)", mixture.DefaultC0Max),
		bind: func(o *Options) flag.Value { return &optInt{p: &o.C0} }, check: atLeast(1, func(o *Options) Opt[int] { return o.C0 })},
	{Name: "l", Group: GroupMethod, Usage: "count vectors sampled per item per round",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.L) }, check: intAtLeast(1, func(o *Options) int { return o.L })},
	{Name: "n", Group: GroupMethod, Usage: "trials per count vector", Default: "2*c0-1, the identifiability bound",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.N} }, check: atLeast(1, func(o *Options) Opt[int] { return o.N })},
	{Name: "mu", Group: GroupMethod, Usage: "weight of the item's own state in its mixture (neighbours get 1-mu), in [0,1]",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Mu) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.Mu })},
	{Name: "gamma", Group: GroupMethod, Usage: "momentum of the state update, in [0,1) (0: the EM output replaces the state)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Gamma) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.Gamma })},
	{Name: "alpha", Group: GroupMethod, Usage: "Dirichlet prior of pi, >= 1",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Alpha) }, check: floatAtLeast(1, func(o *Options) float64 { return o.Alpha })},
	{Name: "beta", Group: GroupMethod, Usage: "Dirichlet prior of rho rows, >= 1",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Beta) }, check: floatAtLeast(1, func(o *Options) float64 { return o.Beta })},
	{Name: "em-iters", Group: GroupMethod, Usage: "EM iterations per round", Default: fmt.Sprintf("%d (paper), %d (code)", mixture.DefaultEMIters(mixture.Paper), mixture.DefaultEMIters(mixture.Code)),
		bind: func(o *Options) flag.Value { return &optInt{p: &o.EMIters} }, check: atLeast(1, func(o *Options) Opt[int] { return o.EMIters })},
	{Name: "em-tol", Group: GroupMethod, Usage: "stop a round's EM once a step moves no class's posterior by more than this, in [0,1) (0: --em-iters steps or an exact fixpoint)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.EMTol) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.EMTol })},
	{Name: "min-class-mass", Group: GroupMethod, Usage: "leave out of a round's EM the classes below this share of the item's mixture (the heaviest always stays), in [0,1] (0: every class, the paper's)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.MinClassMass) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.MinClassMass })},
	{Name: "em-variant", Group: GroupMethod, Usage: "EM variant: paper (sample once, warm start) or code (authors' code: re-initialise, re-sample every iteration)",
		bind: func(o *Options) flag.Value {
			return &enumValue[mixture.Variant]{p: &o.Variant, parse: mixture.ParseVariant}
		}},
	{Name: "draws", Group: GroupMethod, Usage: "how the l count vectors pick their mixture components: systematic (evenly spaced through the weights, one random offset) or iid (independent picks, the paper's)",
		bind: func(o *Options) flag.Value {
			return &enumValue[mixture.Draws]{p: &o.Draws, parse: mixture.ParseDraws}
		}},
	{Name: "smooth", Group: GroupMethod, Usage: "label smoothing of the initial transition rows, in [0,1)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Smooth) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.Smooth })},
	{Name: "anchor", Group: GroupMethod, Usage: "weight of the given labels as an extra mixture component every round, >= 0",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Anchor) }, check: floatAtLeast(0, func(o *Options) float64 { return o.Anchor })},
	{Name: "annotation-weight", Group: GroupMethod, Usage: "weight per extra annotation of an item's given labels as a mixture component, >= 0",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.AnnotationWeight) }, check: floatAtLeast(0, func(o *Options) float64 { return o.AnnotationWeight })},
	{Name: "active-tol", Group: GroupMethod, Usage: "rerun an item only when it or a neighbour moved more than this (total variation) since it last did, in [0,1] (0: every item every round)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.ActiveTol) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.ActiveTol })},
	{Name: "temperature", Group: GroupMethod, Usage: "calibration of the output probabilities: pi^(1/T) renormalised, T in (0, 100] (1: uncalibrated mixture weights), or auto: T fitted to the run's changes without labels",
		bind: func(o *Options) flag.Value { return &optAuto{p: &o.Temperature} }, check: func(o *Options) error {
			if t := o.Temperature; t.Set && (!(t.V > 0) || t.V > 100) {
				return fmt.Errorf("%v: want a temperature in (0, 100], or auto", t.V)
			}
			return nil
		}},
	{Name: "min-confidence", Group: GroupMethod, Usage: "change a label only where the calibrated clean_prob is at least this, in [0,1] (0: always take the most probable class)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.MinConfidence) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.MinConfidence })},
	{Name: "seed", Group: GroupMethod, Usage: "seed of all sampling (with item id and round)",
		bind: func(o *Options) flag.Value { return (*uint64Value)(&o.Seed) }},

	{Name: "k", Group: GroupNeighbours, Usage: "neighbours per item",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.K) }, check: intAtLeast(1, func(o *Options) int { return o.K })},
	{Name: "metric", Group: GroupNeighbours, Usage: "neighbour distance: l2 (squared Euclidean) or cosine",
		bind: func(o *Options) flag.Value {
			return &enumValue[knn.Metric]{p: &o.Metric, parse: func(s string) (knn.Metric, error) {
				switch s {
				case "l2":
					return knn.L2, nil
				case "cosine":
					return knn.Cosine, nil
				}
				return 0, errors.New("want l2 or cosine")
			}}
		}},
	{Name: "no-standardise", Group: GroupNeighbours, Usage: "search neighbours on raw features instead of z-scored ones",
		bind: func(o *Options) flag.Value { return (*notValue)(&o.Standardise) }},
	{Name: "weights", Group: GroupNeighbours, Usage: "neighbour weights: llc (locality-constrained linear coding), uniform, or blend (their average)",
		bind: func(o *Options) flag.Value {
			return &enumValue[engine.Weighting]{p: &o.Weighting, parse: engine.ParseWeighting}
		}},
	{Name: "llc-lambda", Group: GroupNeighbours, Usage: "LLC locality adaptor weight, >= 0 (0: the paper's plain LLC)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.LLCLambda) }, check: floatAtLeast(0, func(o *Options) float64 { return o.LLCLambda })},
	{Name: "llc-sigma", Group: GroupNeighbours, Usage: "LLC locality adaptor scale, > 0",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.LLCSigma) },
		check: func(o *Options) error {
			if !(o.LLCSigma > 0) {
				return fmt.Errorf("%s: want > 0", fmtF(o.LLCSigma))
			}
			return nil
		}},
	{Name: "neighbours", Group: GroupNeighbours, Usage: "where neighbours are searched: exact (all items), sample (a --candidates subset), ivf (k-means partitions grouped by key, for large inputs) or auto (exact below 50,000 rows, ivf from there; summary.json says which ran)",
		bind: func(o *Options) flag.Value {
			return &enumValue[string]{p: &o.Neighbours, parse: func(s string) (string, error) {
				switch s {
				case NeighboursAuto, NeighboursExact, NeighboursSample, NeighboursIVF:
					return s, nil
				}
				return "", errors.New("want auto, exact, sample or ivf")
			}}
		},
		check: func(o *Options) error {
			switch o.Neighbours {
			case NeighboursAuto, NeighboursExact, NeighboursSample, NeighboursIVF:
			default:
				return fmt.Errorf("%q: want auto, exact, sample or ivf", o.Neighbours)
			}
			if o.Candidates.Set && o.Neighbours != NeighboursSample && o.Neighbours != NeighboursAuto {
				return fmt.Errorf("%s with --candidates: candidates bound the sample mode only", o.Neighbours)
			}
			if (o.Partitions.Set || o.NProbe.Set) && o.Neighbours != NeighboursIVF && o.Neighbours != NeighboursAuto {
				return fmt.Errorf("%s with --partitions/--nprobe: they configure ivf only", o.Neighbours)
			}
			return nil
		}},
	{Name: "candidates", Group: GroupNeighbours, Usage: "sample: candidate set size neighbours are searched in (the paper uses 15000)", Default: "15000 with --neighbours sample",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.Candidates} }, check: atLeast(1, func(o *Options) Opt[int] { return o.Candidates })},
	{Name: "partitions", Group: GroupNeighbours, Usage: "ivf: k-means partitions", Default: "rows/500",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.Partitions} }, check: atLeast(1, func(o *Options) Opt[int] { return o.Partitions })},
	{Name: "nprobe", Group: GroupNeighbours, Usage: "ivf: partitions each item is stored in", Default: "8",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.NProbe} },
		check: func(o *Options) error {
			if err := atLeast(1, func(o *Options) Opt[int] { return o.NProbe })(o); err != nil {
				return err
			}
			if o.NProbe.Set && o.Partitions.Set && o.NProbe.V > o.Partitions.V {
				return fmt.Errorf("%d: more than the %d --partitions", o.NProbe.V, o.Partitions.V)
			}
			return nil
		}},
	{Name: "wave-mib", Group: GroupNeighbours, Usage: "ivf with --spill-dir none: MiB one wave of the search or of a round shuffles (-1: no waves)", Default: "128 on the embedded runner, no waves elsewhere",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.WaveMiB} },
		check: func(o *Options) error {
			if o.WaveMiB.Set && o.WaveMiB.V < 1 && o.WaveMiB.V != -1 {
				return fmt.Errorf("%d: want >= 1, or -1 for no waves", o.WaveMiB.V)
			}
			return nil
		}},
	{Name: "local-rounds-mib", Group: GroupNeighbours, Usage: "ivf with spill files (the embedded runner): run all rounds in one stage, every block in memory, when they take at most this many MiB (estimated); beyond it, or at 0, a join per round through the spill files (the same results)", Default: strconv.Itoa(ivfstages.LocalRoundsBytes >> 20),
		bind: func(o *Options) flag.Value { return &optInt{p: &o.LocalMiB} },
		check: func(o *Options) error {
			if o.LocalMiB.Set && o.LocalMiB.V < 0 {
				return fmt.Errorf("%d: want >= 0 (0: a join per round)", o.LocalMiB.V)
			}
			return nil
		}},
	{Name: "spill-dir", Group: GroupNeighbours, Usage: "ivf and annotator-aware runs on the embedded runner: local directory where blocks and states wait between stages instead of in the runner's memory, up to about 8 KB per row (none: keep them in memory)", Default: "the system temporary directory",
		bind: func(o *Options) flag.Value { return &optString{p: &o.SpillDir} },
		check: func(o *Options) error {
			if o.SpillDir.Set && o.SpillDir.V == "" {
				return errors.New(`empty: give a directory, or "none"`)
			}
			return nil
		}},

	{Name: "device", Group: GroupRun, Usage: "kNN/LLC kernels: cpu, cuda (needs a -tags cuda build and a GPU) or auto",
		bind: func(o *Options) flag.Value {
			return &enumValue[string]{p: &o.Device, parse: func(s string) (string, error) {
				switch s {
				case "auto", "cpu", "cuda":
					return s, nil
				}
				return "", errors.New("want cpu, cuda or auto")
			}}
		},
		check: func(o *Options) error {
			switch o.Device {
			case "auto", "cpu", "cuda":
				return nil
			}
			return fmt.Errorf("%q: want cpu, cuda or auto", o.Device)
		}},
	{Name: "workers", Group: GroupRun, Usage: "goroutines per stage", Default: "GOMAXPROCS",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.Workers} }, check: atLeast(1, func(o *Options) Opt[int] { return o.Workers })},
	{Name: "verbose", Group: GroupRun, Usage: "show Beam's and Prism's own log lines (hidden by default; their warnings and errors always show)",
		bind: func(o *Options) flag.Value { return (*boolValue)(&o.Verbose) }},
}

// Bind registers every flag on fs, bound to o's fields; o's current values
// are the defaults shown.
func (o *Options) Bind(fs *flag.FlagSet) {
	for _, f := range Flags {
		fs.Var(f.bind(o), f.Name, f.Usage)
	}
}

// DefaultText is the default a flag shows: the field's value in Defaults(),
// or the rule of a data-dependent default.
func (f Flag) DefaultText() string {
	if f.Default != "" {
		return f.Default
	}
	d := Defaults()
	return f.bind(&d).String()
}

// OptionError is an invalid option value, named as the user gave it.
type OptionError struct {
	Flag string
	Err  error
}

func (e *OptionError) Error() string { return "--" + e.Flag + " " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// Validate checks every option that can be checked before reading the
// input; each error names its flag.
func (o *Options) Validate() error {
	var errs []error
	for _, f := range Flags {
		if f.check == nil {
			continue
		}
		if err := f.check(o); err != nil {
			errs = append(errs, &OptionError{Flag: f.Name, Err: err})
		}
	}
	return errors.Join(errs...)
}

// Mixture resolves the method's parameters for c classes: c0 and n take
// their data-dependent defaults (mixture.DefaultC0, DefaultN) unless given,
// and em-iters its variant's (mixture.DefaultEMIters),
// the stored rows are bounded at mixture.DefaultMaxRowEntries(c0), and Seed
// is the job's seed. An explicit value the data makes impossible (c0 > C) is
// an error naming the flag, never clamped.
func (o *Options) Mixture(c int) (mixture.Params, error) {
	if o.C0.Set && o.C0.V > c {
		return mixture.Params{}, &OptionError{Flag: "c0", Err: fmt.Errorf("%d: more than the input's %d classes", o.C0.V, c)}
	}
	c0 := o.C0.Or(mixture.DefaultC0(c))
	return mixture.Params{
		C:                c,
		C0:               c0,
		L:                o.L,
		N:                o.N.Or(mixture.DefaultN(c0)),
		Mu:               o.Mu,
		Gamma:            o.Gamma,
		Alpha:            o.Alpha,
		Beta:             o.Beta,
		EMIters:          o.EMIters.Or(mixture.DefaultEMIters(o.Variant)),
		EMTol:            o.EMTol,
		Variant:          o.Variant,
		Draws:            o.Draws,
		Smooth:           o.Smooth,
		MaxRowEntries:    mixture.DefaultMaxRowEntries(c0),
		Anchor:           o.Anchor,
		AnnotationWeight: o.AnnotationWeight,
		ActiveTol:        o.ActiveTol,
		MinClassMass:     o.MinClassMass,
		Seed:             o.Seed,
	}, nil
}

// LLC returns the LLC QP's parameters: --llc-lambda and --llc-sigma, and
// the solver's own settings from llc.DefaultParams.
func (o *Options) LLC() llc.Params {
	p := llc.DefaultParams()
	p.Lambda, p.Sigma = o.LLCLambda, o.LLCSigma
	return p
}

// WorkerCount resolves --workers: GOMAXPROCS unless given.
func (o *Options) WorkerCount() int { return o.Workers.Or(runtime.GOMAXPROCS(0)) }

// Engine returns the in-process engine's options for c classes (the quality
// harness, and tests comparing the engine with the pipeline): the values the
// stages get, from the same resolution (Mixture, LLC, WorkerCount).
// Candidates is --candidates as given (0: every item).
func (o *Options) Engine(c int) (engine.Options, error) {
	m, err := o.Mixture(c)
	if err != nil {
		return engine.Options{}, err
	}
	return engine.Options{
		K:           o.K,
		Metric:      o.Metric,
		Standardise: o.Standardise,
		Candidates:  o.Candidates.Or(0),
		Weighting:   o.Weighting,
		LLC:         o.LLC(),
		Rounds:      o.Rounds,
		Workers:     o.WorkerCount(),
		Mixture:     m,
	}, nil
}

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Checks shared by several flags.

func atLeast(lo int, get func(*Options) Opt[int]) func(*Options) error {
	return func(o *Options) error {
		if v := get(o); v.Set && v.V < lo {
			return fmt.Errorf("%d: want >= %d", v.V, lo)
		}
		return nil
	}
}

func intAtLeast(lo int, get func(*Options) int) func(*Options) error {
	return func(o *Options) error {
		if v := get(o); v < lo {
			return fmt.Errorf("%d: want >= %d", v, lo)
		}
		return nil
	}
}

func floatAtLeast(lo float64, get func(*Options) float64) func(*Options) error {
	return func(o *Options) error {
		if v := get(o); !(v >= lo) {
			return fmt.Errorf("%s: want >= %s", fmtF(v), fmtF(lo))
		}
		return nil
	}
}

// inRange checks lo <= v < hi, or v <= hi with closed.
func inRange(lo, hi float64, closed bool, get func(*Options) float64) func(*Options) error {
	return func(o *Options) error {
		v := get(o)
		if v >= lo && (v < hi || closed && v == hi) {
			return nil
		}
		if closed {
			return fmt.Errorf("%s: want in [%s,%s]", fmtF(v), fmtF(lo), fmtF(hi))
		}
		return fmt.Errorf("%s: want in [%s,%s)", fmtF(v), fmtF(lo), fmtF(hi))
	}
}

func nonEmpty(get func(*Options) string) func(*Options) error {
	return func(o *Options) error {
		if get(o) == "" {
			return errors.New("is empty")
		}
		return nil
	}
}

// flag.Values. Plain fields use the plain values: their default is the
// field's value in Defaults(). Opt fields record that they were set.

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

// notValue is a --no-X flag bound to X.
type notValue bool

func (v *notValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v = notValue(!b)
	return nil
}
func (v *notValue) String() string   { return strconv.FormatBool(!bool(*v)) }
func (v *notValue) IsBoolFlag() bool { return true }

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want an integer")
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type uint64Value uint64

func (v *uint64Value) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return errors.New("want an integer in [0, 2^64)")
	}
	*v = uint64Value(n)
	return nil
}
func (v *uint64Value) String() string { return strconv.FormatUint(uint64(*v), 10) }

type floatValue float64

func (v *floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f {
		return errors.New("want a number")
	}
	*v = floatValue(f)
	return nil
}
func (v *floatValue) String() string { return fmtF(float64(*v)) }

type optInt struct{ p *Opt[int] }

func (v *optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want an integer")
	}
	*v.p = Some(n)
	return nil
}

func (v *optInt) String() string {
	if v.p == nil || !v.p.Set {
		return ""
	}
	return strconv.Itoa(v.p.V)
}

// optAuto is a float option whose unset value is spelled "auto" (fitted
// to the data).
type optAuto struct{ p *Opt[float64] }

func (v *optAuto) Set(s string) error {
	if s == "auto" {
		*v.p = Opt[float64]{}
		return nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("want a number or auto")
	}
	*v.p = Some(x)
	return nil
}

func (v *optAuto) String() string {
	if v.p == nil || !v.p.Set {
		return "auto"
	}
	return strconv.FormatFloat(v.p.V, 'g', -1, 64)
}

type optString struct{ p *Opt[string] }

func (v *optString) Set(s string) error { *v.p = Some(s); return nil }
func (v *optString) String() string {
	if v.p == nil || !v.p.Set {
		return ""
	}
	return v.p.V
}

// enumValue is a flag whose values are the names of an enum.
type enumValue[T any] struct {
	p     *T
	parse func(string) (T, error)
}

func (v *enumValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v *enumValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	return fmt.Sprint(*v.p)
}

// namesValue is a comma-separated class set: no empty name, no repeats.
type namesValue struct{ p *[]string }

func (v *namesValue) Set(s string) error {
	names := strings.Split(s, ",")
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("%q: name %d is empty (a stray comma?)", s, i+1)
		}
		if seen[n] {
			return fmt.Errorf("%q: class %q given twice", s, n)
		}
		seen[n] = true
	}
	*v.p = names
	return nil
}

func (v *namesValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

// OptionsTable renders Flags as README's options table (Markdown), one table
// per group: README shows exactly this (TestREADMEOptions).
func OptionsTable() string {
	var b strings.Builder
	for _, g := range Groups {
		fmt.Fprintf(&b, "**%s**\n\n| flag | default | meaning |\n|---|---|---|\n", g)
		for _, f := range Flags {
			if f.Group != g {
				continue
			}
			def := f.DefaultText()
			if def == "" {
				def = "none"
			}
			fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.Name, strings.ReplaceAll(def, "|", `\|`), strings.ReplaceAll(f.Usage, "|", `\|`))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// FlagValues spells o as relabel run's flags of the given groups (all when
// none): each flag's name and value, "" for a data-dependent option left
// unset. The quality harness records what it ran with it.
func (o *Options) FlagValues(groups ...string) map[string]string {
	m := map[string]string{}
	for _, f := range Flags {
		if len(groups) == 0 || slices.Contains(groups, f.Group) {
			m[f.Name] = f.bind(o).String()
		}
	}
	return m
}
