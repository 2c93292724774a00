package options

import (
	"errors"
	"flag"
	"fmt"
	"github.com/relabel/relabel/io/icebergio/catalogname"
	"strconv"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/mixture"
)

// Flag groups, in the order `relabel run -h` prints them.
const (
	GroupIO         = "Input and output"
	GroupLake       = "Data lake (Apache Iceberg tables, incremental runs)"
	GroupMethod     = "Method"
	GroupNeighbours = "Neighbours and scale"
	GroupRun        = "Device and run"
	GroupCrowd      = "Annotators (who gave each label)"
)

// Groups lists the flag groups in help order.
var Groups = []string{GroupIO, GroupLake, GroupMethod, GroupNeighbours, GroupRun, GroupCrowd}

// Recording says whether a run records a flag's value in its outputs
// (summary.json, the shards' metadata, an Iceberg snapshot's properties)
// and whether an incremental run compares it with the last run's.
type Recording int

const (
	// Unrecorded: where the run reads and writes, and runner policy that
	// does not change the output's bytes (--spill-dir, --wave-mib,
	// --local-rounds-mib: TestLocalRounds, TestIVFSpill).
	Unrecorded Recording = iota
	// Recorded: recorded, but an incremental run may differ (how the
	// neighbours are searched, the device, the output format).
	Recorded
	// Compared: the method's options; an incremental run refuses a value
	// other than the one the stored posteriors were made with.
	Compared
)

// Flag is one option of `relabel run`: its name, group, one-line doc, the
// field it binds and the check of an explicit value. The default shown is
// the bound field's value in Defaults(), or Default where it depends on the
// data.
type Flag struct {
	Name    string
	Group   string
	Usage   string
	Default string // for data-dependent defaults: the rule, in words
	// Record says whether the run records the flag's resolved value
	// (Record) and --incremental compares it (Changed).
	Record Recording
	bind   func(o *Options) flag.Value
	check  func(o *Options) error
}

// Flags are relabel run's flags, in help order within each group: one
// literal table (no init() appends to it).
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
	{Name: "format", Group: GroupIO, Record: Recorded, Usage: "output format: arrow (IPC file) or parquet",
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
	{Name: "classes", Group: GroupIO, Record: Compared, Usage: "number of classes C of integer labels", Default: "one more than the largest label",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.Classes} }, check: atLeast(1, func(o *Options) Opt[int] { return o.Classes })},
	{Name: "class-names", Group: GroupIO, Usage: "comma-separated class set of string labels", Default: "every label seen",
		bind: func(o *Options) flag.Value { return &namesValue{p: &o.ClassNames} },
		check: func(o *Options) error {
			if o.ClassNames != nil && o.Classes.Set && o.Classes.V != len(o.ClassNames) {
				return fmt.Errorf("names %d classes, but --classes is %d", len(o.ClassNames), o.Classes.V)
			}
			return nil
		}},

	{Name: "catalog", Group: GroupLake, Usage: "Iceberg catalog of --input-table/--output-table: sqlite:///path/catalog.db (a local SQL catalog, created if missing), or a REST catalog rest://HOST/PATH (HTTPS) or http(s)://HOST/PATH, credentials from $" + catalogname.EnvCatalogToken + " (bearer) or $" + catalogname.EnvCatalogCredential + " (OAuth2 CLIENT_ID:SECRET)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.Catalog) },
		check: func(o *Options) error {
			l := &o.Lake
			if l.Catalog == "" {
				if l.InputTable != "" || l.OutputTable != "" {
					return errors.New("is required with --input-table/--output-table")
				}
				return nil
			}
			if _, _, err := catalogname.ParseCatalogURI(l.Catalog, ""); err != nil {
				return err
			}
			if l.InputTable == "" && l.OutputTable == "" {
				return errors.New("given without --input-table or --output-table")
			}
			return nil
		}},
	{Name: "catalog-name", Group: GroupLake, Usage: "the catalog's name: a SQL catalog file files each table under one (other writers' default is \"default\"; relabel before this flag used \"relabel\"); also settable as ?name= in --catalog", Default: catalogname.DefaultCatalogName,
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.CatalogName) },
		check: func(o *Options) error {
			l := &o.Lake
			if l.CatalogName == "" {
				return nil
			}
			if l.Catalog == "" {
				return errors.New("given without --catalog")
			}
			_, _, err := catalogname.ParseCatalogURI(l.Catalog, l.CatalogName)
			return err
		}},
	{Name: "warehouse", Group: GroupLake, Usage: "where tables the run creates keep their files: a directory or gs://bucket/prefix (for a REST catalog: the warehouse the catalog serves, sent to it)", Default: "warehouse/ beside the catalog file; the REST catalog's own",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.Warehouse) },
		check: func(o *Options) error {
			if o.Lake.Warehouse != "" && o.Lake.Catalog == "" {
				return errors.New("given without --catalog")
			}
			return nil
		}},
	{Name: "input-table", Group: GroupLake, Usage: "input Iceberg table namespace.table, instead of --input (its current snapshot's data files are the shards)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.InputTable) },
		check: func(o *Options) error {
			l := &o.Lake
			if l.InputTable == "" {
				return nil
			}
			if o.Input != "" {
				return errors.New("with --input: give one input")
			}
			if _, err := catalogname.SplitIdent(l.InputTable); err != nil {
				return fmt.Errorf("%q: want namespace.table", l.InputTable)
			}
			return nil
		}},
	{Name: "output-table", Group: GroupLake, Usage: "output Iceberg table namespace.table, instead of --output: each run commits one snapshot recording the input snapshot, version, options and seed (Parquet files)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Lake.OutputTable) },
		check: func(o *Options) error {
			l := &o.Lake
			if l.OutputTable == "" {
				return nil
			}
			if o.Output != "" {
				return errors.New("with --output: give one output (the table's Parquet files are readable as shards)")
			}
			if l.InputTable == "" {
				return errors.New("needs --input-table (the snapshot records the input table it covered)")
			}
			if _, err := catalogname.SplitIdent(l.OutputTable); err != nil {
				return fmt.Errorf("%q: want namespace.table", l.OutputTable)
			}
			if l.OutputTable == l.InputTable {
				return errors.New("is --input-table: the output must be another table")
			}
			return nil
		}},
	{Name: "incremental", Group: GroupLake, Usage: "relabel only the rows appended to --input-table since the input snapshot --output-table last covered (or, with --input and --output, the rows of input files new or changed since the output directory's manifest), and the old rows they became neighbours of (the first run is a full one; nothing new: nothing committed)",
		bind: func(o *Options) flag.Value { return (*boolValue)(&o.Lake.Incremental) },
		check: func(o *Options) error {
			l := &o.Lake
			if !l.Incremental {
				return nil
			}
			if l.InputTable != "" && l.OutputTable == "" {
				return errors.New("with --input-table needs --output-table (the output table records what was covered)")
			}
			if l.OutputTable == "" && (o.Input == "" || o.Output == "") {
				return errors.New("needs --input and --output (a directory lake: the output directory records the files it covers), or --input-table and --output-table")
			}
			if o.Annotations != "" {
				return errors.New("with --annotations: incremental runs relabel items, not annotations")
			}
			if l.OutputTable == "" && o.Format == shardio.ArrowStream {
				return errors.New("with --format arrow-stream: the next run reads the stored posteriors back from the output shards, which needs parquet or arrow (random access)")
			}
			return nil
		}},

	{Name: "rounds", Group: GroupMethod, Record: Compared, Usage: "relabelling rounds (0: the given labels' initial states only)",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.Rounds) }, check: intAtLeast(0, func(o *Options) int { return o.Rounds })},
	{Name: "c0", Group: GroupMethod, Record: Compared, Usage: "classes kept per item's posterior", Default: fmt.Sprintf("min(C, %d)", mixture.DefaultC0Max),
		bind: func(o *Options) flag.Value { return &optInt{p: &o.C0} }, check: atLeast(1, func(o *Options) Opt[int] { return o.C0 })},
	{Name: "l", Group: GroupMethod, Record: Compared, Usage: "count vectors sampled per item per round",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.L) }, check: intAtLeast(1, func(o *Options) int { return o.L })},
	{Name: "n", Group: GroupMethod, Record: Compared, Usage: "trials per count vector", Default: "2*c0-1, the identifiability bound",
		bind: func(o *Options) flag.Value { return &optInt{p: &o.N} }, check: atLeast(1, func(o *Options) Opt[int] { return o.N })},
	{Name: "mu", Group: GroupMethod, Record: Compared, Usage: "weight of the item's own state in its mixture (neighbours get 1-mu), in [0,1]",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Mu) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.Mu })},
	{Name: "gamma", Group: GroupMethod, Record: Compared, Usage: "momentum of the state update, in [0,1) (0: the EM output replaces the state)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Gamma) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.Gamma })},
	{Name: "alpha", Group: GroupMethod, Record: Compared, Usage: "Dirichlet prior of pi, >= 1",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Alpha) }, check: floatAtLeast(1, func(o *Options) float64 { return o.Alpha })},
	{Name: "beta", Group: GroupMethod, Record: Compared, Usage: "Dirichlet prior of rho rows, >= 1",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Beta) }, check: floatAtLeast(1, func(o *Options) float64 { return o.Beta })},
	{Name: "em-iters", Group: GroupMethod, Record: Compared, Usage: "EM iterations per round", Default: fmt.Sprintf("%d (paper), %d (code)", mixture.DefaultEMIters(mixture.Paper), mixture.DefaultEMIters(mixture.Code)),
		bind: func(o *Options) flag.Value { return &optInt{p: &o.EMIters} }, check: atLeast(1, func(o *Options) Opt[int] { return o.EMIters })},
	{Name: "em-tol", Group: GroupMethod, Record: Compared, Usage: "stop a round's EM once a step moves no class's posterior by more than this, in [0,1) (0: --em-iters steps or an exact fixpoint)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.EMTol) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.EMTol })},
	{Name: "min-class-mass", Group: GroupMethod, Record: Compared, Usage: "leave out of a round's EM the classes below this share of the item's mixture (the heaviest always stays), in [0,1] (0: every class, the paper's)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.MinClassMass) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.MinClassMass })},
	{Name: "em-variant", Group: GroupMethod, Record: Compared, Usage: "EM variant: paper (sample once, warm start) or code (authors' code: re-initialise, re-sample every iteration)",
		bind: func(o *Options) flag.Value {
			return &enumValue[mixture.Variant]{p: &o.Variant, parse: mixture.ParseVariant}
		}},
	{Name: "draws", Group: GroupMethod, Record: Compared, Usage: "how the l count vectors pick their mixture components: systematic (evenly spaced through the weights, one random offset) or iid (independent picks, the paper's)",
		bind: func(o *Options) flag.Value {
			return &enumValue[mixture.Draws]{p: &o.Draws, parse: mixture.ParseDraws}
		}},
	{Name: "smooth", Group: GroupMethod, Record: Compared, Usage: "label smoothing of the initial transition rows, in [0,1)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Smooth) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.Smooth })},
	{Name: "anchor", Group: GroupMethod, Record: Compared, Usage: "weight of the given labels as an extra mixture component every round, >= 0",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.Anchor) }, check: floatAtLeast(0, func(o *Options) float64 { return o.Anchor })},
	{Name: "annotation-weight", Group: GroupMethod, Record: Compared, Usage: "weight per extra annotation of an item's given labels as a mixture component, >= 0",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.AnnotationWeight) }, check: floatAtLeast(0, func(o *Options) float64 { return o.AnnotationWeight })},
	{Name: "active-tol", Group: GroupMethod, Record: Compared, Usage: "rerun an item only when it or a neighbour moved more than this (total variation) since it last did, in [0,1] (0: every item every round)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.ActiveTol) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.ActiveTol })},
	{Name: "temperature", Group: GroupMethod, Record: Compared, Usage: "calibration of the output probabilities: pi^(1/T) renormalised, T in (0, 100] (1: uncalibrated mixture weights), or auto: T fitted to the run's changes without labels",
		bind: func(o *Options) flag.Value { return &optWord{p: &o.Temperature, unset: "auto"} }, check: func(o *Options) error {
			if t := o.Temperature; t.Set && (!(t.V > 0) || t.V > 100) {
				return fmt.Errorf("%v: want a temperature in (0, 100], or auto", t.V)
			}
			return nil
		}},
	{Name: "min-confidence", Group: GroupMethod, Record: Compared, Usage: "change a label only where the calibrated clean_prob is at least this, in [0,1] (0: always take the most probable class)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.MinConfidence) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.MinConfidence })},
	{Name: "pooled-iters", Group: GroupMethod, Record: Compared, Usage: "most EM steps of the pooled start (--pooled-tol stops it sooner): one class-level label transition fitted over every item's labels and its neighbours' (at most " + strconv.Itoa(mixture.PooledSampleCap) + " items, by a hash of seed and id), from which items start where the fitted noise is structured (--pooled-gate); 0: every item starts from its given labels (the paper's)",
		Default: fmt.Sprintf("%d; off with annotators, which do not fit it (given there: an error)", mixture.DefaultPooledIters),
		bind:    func(o *Options) flag.Value { return &optInt{p: &o.PooledIters} }, check: atLeast(0, func(o *Options) Opt[int] { return o.PooledIters })},
	{Name: "pooled-weight", Group: GroupMethod, Record: Compared, Usage: "share of the pooled posterior in an item's start (the rest its given labels'), in (0,1]",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.PooledWeight) },
		check: func(o *Options) error {
			if !(o.PooledWeight > 0 && o.PooledWeight <= 1) {
				return fmt.Errorf("%s: want in (0,1]", fmtF(o.PooledWeight))
			}
			return nil
		}},
	{Name: "pooled-tol", Group: GroupMethod, Record: Compared, Usage: "stop the pooled start's fit before --pooled-iters steps once a step moves no entry of its label transition by more than this, in [0,1) (0: all --pooled-iters steps)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.PooledTol) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.PooledTol })},
	{Name: "pooled-gate", Group: GroupMethod, Record: Compared, Usage: "take the pooled start only where the fitted noise's structure is at least this: how much more of each class's flips go to one class than under symmetric noise, 0 for symmetric noise, 1 for pair flips, 0 with 2 classes; in [0,1] (0: always)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.PooledGate) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.PooledGate })},
	{Name: "head", Group: GroupMethod, Record: Compared, Usage: "the linear head: a softmax regression on the features, fitted out of fold (" + strconv.Itoa(headFolds) + " folds by a hash of seed and id) to the current posteriors, as one more mixture component beside the neighbours; " + HeadFit + ": its share of the neighbours' mass fitted every round (at most " + fmtF(head.MaxShare) + ", off for the rest of the run once under " + fmtF(head.OffShare) + "), " + HeadOff + ", or a fixed share in (0, " + fmtF(head.MaxShare) + "]",
		Default: DefaultHead + " in exact and sample modes; off in ivf mode, where it is opt-in in the rounds in one stage (the embedded runner within --local-rounds-mib: its fits cost about 3 times the run there) and refused in the join per round (distributed runners, larger data) and with annotators, which do not fit it",
		bind:    func(o *Options) flag.Value { return &headValue{p: &o.Head} }, check: func(o *Options) error {
			if o.Head.Set {
				return parseHead(o.Head.V)
			}
			return nil
		}},
	{Name: "seed", Group: GroupMethod, Record: Compared, Usage: "seed of all sampling (with item id and round)",
		bind: func(o *Options) flag.Value { return (*uint64Value)(&o.Seed) }},

	{Name: "k", Group: GroupNeighbours, Record: Compared, Usage: "neighbours per item",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.K) }, check: intAtLeast(1, func(o *Options) int { return o.K })},
	{Name: "metric", Group: GroupNeighbours, Record: Compared, Usage: "neighbour distance: l2 (squared Euclidean) or cosine",
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
	{Name: "no-standardise", Group: GroupNeighbours, Record: Compared, Usage: "search neighbours on raw features instead of z-scored ones",
		bind: func(o *Options) flag.Value { return (*notValue)(&o.Standardise) }},
	{Name: "given-label", Group: GroupMethod, Record: Compared, Usage: "how the output reads each item's given label: vote (one component of its mixture, the paper's) or bayes (one noisy draw through the class-level label transition fitted after the rounds, weighed against its neighbours' final posteriors, their sharpness chosen by the given labels' likelihood: docs/QUALITY.md, the given-label model), for one label per item",
		Default: DefaultGivenLabel.String() + " with one label per item; vote with several (annotators, a list label column), whose own mixtures read them (bayes given there: an error)",
		bind: func(o *Options) flag.Value {
			return &optEnum[engine.GivenModel]{p: &o.GivenLabel, parse: engine.ParseGivenModel}
		}},
	{Name: "weights", Group: GroupNeighbours, Record: Compared, Usage: "neighbour weights: llc (locality-constrained linear coding), uniform, or blend (their average)",
		bind: func(o *Options) flag.Value {
			return &enumValue[engine.Weighting]{p: &o.Weighting, parse: engine.ParseWeighting}
		}},
	{Name: "llc-lambda", Group: GroupNeighbours, Record: Compared, Usage: "LLC locality adaptor weight, >= 0 (0: the paper's plain LLC)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.LLCLambda) }, check: floatAtLeast(0, func(o *Options) float64 { return o.LLCLambda })},
	{Name: "llc-sigma", Group: GroupNeighbours, Record: Compared, Usage: "LLC locality adaptor scale, > 0",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.LLCSigma) },
		check: func(o *Options) error {
			if !(o.LLCSigma > 0) {
				return fmt.Errorf("%s: want > 0", fmtF(o.LLCSigma))
			}
			return nil
		}},
	{Name: "neighbours", Group: GroupNeighbours, Record: Recorded, Usage: "where neighbours are searched: exact (all items), sample (a --candidates subset), ivf (k-means partitions grouped by key, for large inputs) or auto (exact below " + strconv.Itoa(AutoIVFRows) + " rows, ivf from there; summary.json says which ran)",
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
	{Name: "candidates", Group: GroupNeighbours, Record: Recorded, Usage: "sample: candidate set size neighbours are searched in (the paper uses " + strconv.Itoa(PaperCandidates) + ")", Default: fmt.Sprintf("%d with --neighbours sample", PaperCandidates),
		bind: func(o *Options) flag.Value { return &optInt{p: &o.Candidates} }, check: atLeast(1, func(o *Options) Opt[int] { return o.Candidates })},
	{Name: "partitions", Group: GroupNeighbours, Record: Recorded, Usage: "ivf: k-means partitions", Default: fmt.Sprintf("rows/%d", ivf.DefaultPartitionSize),
		bind: func(o *Options) flag.Value { return &optInt{p: &o.Partitions} }, check: atLeast(1, func(o *Options) Opt[int] { return o.Partitions })},
	{Name: "nprobe", Group: GroupNeighbours, Record: Recorded, Usage: "ivf: partitions each item is stored in", Default: strconv.Itoa(ivf.DefaultNProbe),
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
	{Name: "local-rounds-mib", Group: GroupNeighbours, Usage: "on the embedded runner (spill files): the exact and sample modes run every stage from the statistics to the given-label model in one, and ivf runs all rounds in one stage, every block in memory, when they take at most this many MiB (estimated); beyond it, ivf's rounds run in the same stage with only the items' states in memory and every block read from the spill files each round, where the run's estimate then fits in half of this machine's memory; beyond that, or at 0, a stage per step (exact, sample) and a join per round through the spill files (ivf), with the same results",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.LocalMiB) },
		check: func(o *Options) error {
			if o.LocalMiB < 0 {
				return fmt.Errorf("%d: want >= 0 (0: a stage per step, a join per round)", o.LocalMiB)
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

	{Name: "device", Group: GroupRun, Record: Recorded, Usage: "kernels of the kNN, LLC and rounds: cpu, cuda (needs a -tags cuda build and a GPU) or auto",
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

	{Name: "annotations", Group: GroupCrowd, Record: Compared, Usage: "long-format annotation shards (one row per annotation: item id, annotator, label), a glob of Parquet or Arrow IPC files; without --input: label-only mode",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Annotations) }},
	{Name: "annotation-id-column", Group: GroupCrowd, Usage: "item id column of the annotation shards (int64 or string, as the items' ids)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.AnnotationColumns.ID) }, check: nonEmpty(func(o *Options) string { return o.AnnotationColumns.ID })},
	{Name: "annotator-column", Group: GroupCrowd, Usage: "annotator column of the annotation shards (int64 or string)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.AnnotationColumns.Annotator) }, check: nonEmpty(func(o *Options) string { return o.AnnotationColumns.Annotator })},
	{Name: "annotation-label-column", Group: GroupCrowd, Usage: "label column of the annotation shards (int32 or int64)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.AnnotationColumns.Label) }, check: nonEmpty(func(o *Options) string { return o.AnnotationColumns.Label })},
	{Name: "annotators-column", Group: GroupCrowd, Record: Compared, Usage: "list column of the input aligned with its labels list, naming who gave each label (int64 or string); used when present",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.AnnotatorsColumn) }, check: nonEmpty(func(o *Options) string { return o.AnnotatorsColumn })},
	{Name: "crowd-iters", Group: GroupCrowd, Record: Compared, Usage: "EM iterations of the annotators' matrices and the items' posteriors",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.CrowdIters) }, check: intAtLeast(1, func(o *Options) int { return o.CrowdIters })},
	{Name: "annotator-prior", Group: GroupCrowd, Record: Compared, Usage: "weight, in labels, of the prior pulling each annotator's matrix rows toward the pooled rows (adjusted to its accuracy), > 0", Default: "from the data (empirical Bayes), every iteration",
		bind: func(o *Options) flag.Value { return &optWord{p: &o.AnnotatorPrior, unset: "data"} },
		check: func(o *Options) error {
			if o.AnnotatorPrior.Set && !(o.AnnotatorPrior.V > 0) {
				return fmt.Errorf("%s: want > 0", fmtF(o.AnnotatorPrior.V))
			}
			return nil
		}},
	{Name: "neighbour-prior", Group: GroupCrowd, Record: Compared, Usage: "with features: share of an item's class prior taken from its neighbours' posteriors, in [0,1)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.NeighbourPrior) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.NeighbourPrior })},
	{Name: "class-balance", Group: GroupCrowd, Record: Compared, Usage: "share of the class prior that is uniform (the rest estimated), in [0,1]",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.ClassBalance) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.ClassBalance })},
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

// Validate checks every option that can be checked before reading the
// input; each error names its flag.
func (o *Options) Validate() error {
	var errs []error
	for _, f := range Flags {
		if f.check == nil {
			continue
		}
		if err := f.check(o); err != nil {
			errs = append(errs, &Error{Flag: f.Name, Err: err})
		}
	}
	return errors.Join(errs...)
}
