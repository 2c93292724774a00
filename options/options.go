package options

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

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
	// Lake: Iceberg tables in and out, incremental runs.
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
	LocalMiB    int
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
	// PooledIters, PooledWeight and PooledGate configure the pooled start
	// (mixture.Params.PooledIters, PooledWeight, PooledGate).
	// PooledIters unset is mixture.DefaultPooledIters where the run can
	// fit it (exact and sample modes, no annotators) and 0 elsewhere
	// (pipelines.MakePlan); 0 given is the paper's start, everywhere.
	PooledIters Opt[int]
	// PooledTol is mixture.Params.PooledTol: the fit stops before
	// PooledIters steps once a step moves no transition entry by more.
	PooledTol    float64
	PooledWeight float64
	PooledGate   float64
	// GivenLabel is how the output reads each item's given label
	// (engine.Options.Given): DefaultGivenLabel unless given
	// (ResolveGiven).
	GivenLabel Opt[engine.GivenModel]
	// Head is the linear head (transforms/head): "fit" (its
	// share fitted every round, head.Stack), "off", or a fixed share in
	// (0, head.MaxShare]. Unset is DefaultHead in exact and sample modes
	// and ivf mode's local rounds, and off where the run cannot fit it (ivf
	// mode's join per round, annotator-aware runs: ResolveHead).
	Head Opt[string]
	// Temperature calibrates the output's probabilities (pi^(1/T)
	// renormalised); unset ("auto", the default), T is fitted to the run's
	// final states (mixture.AutoTemperature). MinConfidence changes a label
	// only where the calibrated clean_prob reaches it (resultio.Calibration).
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

	// Annotators: who gave each label.
	Annotations       string
	AnnotationColumns annotio.Columns
	AnnotatorsColumn  string
	CrowdIters        int
	AnnotatorPrior    Opt[float64]
	NeighbourPrior    float64
	ClassBalance      float64
}

// Defaults returns every option's default. The method's (transforms/mixture,
// transforms/llc, transforms/crowd) come from mixture.DefaultParams,
// llc.DefaultParams and crowd.DefaultParams,
// chosen by measurement on the dev grid (docs/QUALITY.md); the rest are
// written here. No other layer defaults anything: the CLI's flags, the
// quality harness and the tests start here, so what is measured is what
// users get.
func Defaults() Options {
	m := mixture.DefaultParams(0) // c0, n (data) and em-iters (variant) stay unset (Opt)
	l := llc.DefaultParams()
	cp := crowd.DefaultParams(0) // the annotator model's (C is the data's)
	return Options{
		Format:           shardio.ArrowFile,
		Columns:          schemas.Columns{ID: schemas.ColID, Features: schemas.ColFeatures, Label: schemas.ColLabel, Labels: schemas.ColLabels},
		K:                10,
		Metric:           knn.L2,
		Standardise:      true,
		Neighbours:       NeighboursAuto,
		LocalMiB:         DefaultLocalRoundsMiB,
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
		PooledTol:        m.PooledTol,
		PooledWeight:     m.PooledWeight,
		PooledGate:       m.PooledGate,
		Seed:             1,
		Device:           "auto",
		Report:           true,

		AnnotationColumns: annotio.DefaultColumns(),
		AnnotatorsColumn:  annotio.ColAnnotators,
		CrowdIters:        cp.Iterations,
		NeighbourPrior:    cp.NeighbourWeight,
		ClassBalance:      cp.ClassBalance,
	}
}

// LakeOptions are the data-lake options of relabel run: Apache Iceberg
// tables in and out (io/icebergio), and incremental runs.
type LakeOptions struct {
	// Catalog is the Iceberg catalog's URI (sqlite:///path/catalog.db).
	Catalog string
	// CatalogName is the catalog's name (icebergio.CatalogOptions.Name);
	// empty: the URI's ?name= or the default, "default".
	CatalogName string
	// Warehouse is where tables the run creates keep their files; empty: the
	// catalog's default (a "warehouse" directory beside the catalog file).
	Warehouse string
	// InputTable is the input table (ns.table), instead of Options.Input.
	InputTable string
	// OutputTable is the output table (ns.table), instead of Options.Output.
	OutputTable string
	// Incremental relabels only the rows appended to the input table since
	// the input snapshot the output table last covered, or, for a directory
	// output, only the new, changed and gone input files (package lake).
	Incremental bool
}

// Neighbour modes (Options.Neighbours, summary.json "neighbours").
const (
	NeighboursAuto   = "auto"
	NeighboursExact  = "exact"
	NeighboursSample = "sample"
	NeighboursIVF    = "ivf"
)

// AutoIVFRows is the row count from which auto picks ivf over exact. Exact
// search costs N^2 d and ships every candidate's features and, each round,
// every candidate's state to every worker; ivf costs about NProbe x
// partition size x N d plus a few shuffles. Measured on 2 cores
// (docs/perf/scale.md): at 50k rows the exact kNN already takes as long as
// three rounds of sample + EM, and it grows as N^2 from there, while below it
// ivf's extra shuffles and k-means buy little. Exact is the reference
// quality, so it is kept wherever it is cheap.
const AutoIVFRows = 50_000

// PaperCandidates is the candidate set size of --neighbours sample when
// --candidates is not given: the paper's 15,000.
const PaperCandidates = 15_000

// NeighbourMode fixes the mode for an input of rows rows: auto becomes
// sample when --candidates is given, else exact below AutoIVFRows and ivf
// from there.
func (o *Options) NeighbourMode(rows int64) string {
	if o.Neighbours != NeighboursAuto {
		return o.Neighbours
	}
	switch {
	case o.Candidates.Set:
		return NeighboursSample
	case rows >= AutoIVFRows:
		return NeighboursIVF
	}
	return NeighboursExact
}

// DefaultLocalRoundsMiB is --local-rounds-mib's default: ivf's rounds run
// in one stage while every block fits in this many MiB (about 1.25 million
// rows; docs/ARCHITECTURE.md). ivfstages.LocalRoundsBytes documents the
// same bound for the stage (TestDefaultsMatchStages).
const DefaultLocalRoundsMiB = 1024

// Mixture resolves the method's parameters for c classes: c0 and n take
// their data-dependent defaults (mixture.DefaultC0, DefaultN) unless given,
// and em-iters its variant's (mixture.DefaultEMIters), pooled-iters
// mixture.DefaultPooledIters (the plan turns an unset one off where the
// run cannot fit it),
// the stored rows are bounded at mixture.DefaultMaxRowEntries(c0), and Seed
// is the job's seed. An explicit value the data makes impossible (c0 > C) is
// an error naming the flag, never clamped.
func (o *Options) Mixture(c int) (mixture.Params, error) {
	if o.C0.Set && o.C0.V > c {
		return mixture.Params{}, &Error{Flag: "c0", Err: fmt.Errorf("%d: more than the input's %d classes", o.C0.V, c)}
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
		PooledIters:      o.PooledIters.Or(mixture.DefaultPooledIters),
		PooledTol:        o.PooledTol,
		PooledWeight:     o.PooledWeight,
		PooledSplit:      mixture.DefaultParams(c).PooledSplit,
		PooledGate:       o.PooledGate,
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
// stages get, from the same resolution (Mixture, LLC, WorkerCount, and the
// linear head of --head, DefaultHead unless given, as in exact mode).
// Candidates is --candidates as given (0: every item).
func (o *Options) Engine(c int) (engine.Options, error) {
	m, err := o.Mixture(c)
	if err != nil {
		return engine.Options{}, err
	}
	eo := engine.Options{
		K:           o.K,
		Metric:      o.Metric,
		Standardise: o.Standardise,
		Candidates:  o.Candidates.Or(0),
		Weighting:   o.Weighting,
		LLC:         o.LLC(),
		Rounds:      o.Rounds,
		Workers:     o.WorkerCount(),
		Mixture:     m,
		Given:       o.GivenLabel.Or(DefaultGivenLabel) == engine.GivenBayes,
	}
	hp, err := HeadParams(o.Head.Or(DefaultHead), o.Seed)
	if err != nil {
		return engine.Options{}, err
	}
	if hp != nil {
		eo.NewComponent = head.Factory(*hp, c, m.C0, m.Smooth, nil)
	}
	return eo, nil
}

// Head's values: its share fitted every round, or none.
const (
	HeadFit = "fit"
	HeadOff = "off"
)

// DefaultHead is --head's default in exact and sample modes (and the
// in-process engine's): docs/QUALITY.md, "Weak neighbours", has the grid it
// was chosen on.
const DefaultHead = HeadFit

// headFolds is the head's number of folds (HeadParams).
const headFolds = 5

// headTol is the head's fit tolerance (head.Params.Tol, HeadParams): a fit
// stops at an iteration that lowers its loss by less than a thousandth of
// it (1.3e-3 nats an item on a 9,300 x 256 set), under a tenth of the
// rounds' EM tolerance. The dev grid moved by +0.01 point on average with
// it, every cell within 0.4 (docs/QUALITY.md, "The head's fits stop when
// they settle").
const headTol = 1e-3

// parseHead checks a --head value: fit, off, or a share in (0,
// head.MaxShare].
func parseHead(v string) error {
	if v == HeadFit || v == HeadOff {
		return nil
	}
	a, err := strconv.ParseFloat(v, 64)
	if err != nil || !(a > 0 && a <= head.MaxShare) {
		return fmt.Errorf("%q: want %s, %s or a share in (0, %s]", v, HeadFit, HeadOff, fmtF(head.MaxShare))
	}
	return nil
}

// ResolveHead resolves --head for a run in neighbour mode mode (exact,
// sample or ivf), annotator-aware or not (crowd); local says whether an ivf
// run's rounds run in one stage with every block in memory, the head's
// included (the embedded runner up to --local-rounds-mib:
// pipelines/ivfstages' local rounds, the only ivf rounds that fit it).
// Unset is DefaultHead in exact and sample modes, and off in ivf mode: there
// the head is opt-in (an explicit value is used in the local rounds), since
// at the sizes ivf mode is for its fits dominate the run (fashion_mnist_pca50,
// 70,000 rows: 2.8-3.3 times the wall time with it, for +2.3 points at 60%
// symmetric noise and -0.06 at idn-0.4; docs/QUALITY.md part F), which would
// break the run's parity with scikit-learn's neighbour graph alone
// (BenchmarkVsSklearn). In ivf mode's join per round (Flink, Dataflow, or
// beyond --local-rounds-mib) and annotator-aware runs, whose rounds fit no
// head, a value other than off is an error naming the flag, not silently
// dropped.
func (o *Options) ResolveHead(mode string, local, crowd bool) (string, error) {
	switch {
	case !crowd && mode != NeighboursIVF:
		return o.Head.Or(DefaultHead), nil
	case !crowd && local:
		return o.Head.Or(HeadOff), nil
	}
	if v := o.Head; v.Set && v.V != HeadOff {
		where := "--neighbours ivf with a join per round (a distributed runner, or the blocks and the head's features over --local-rounds-mib)"
		if crowd {
			where = "annotator-aware runs"
		}
		return "", &Error{Flag: "head", Err: fmt.Errorf("%s: the linear head is fitted in exact and sample modes and in ivf mode's rounds in one stage only, not in %s (give off, or leave it unset)", v.V, where)}
	}
	return HeadOff, nil
}

// DefaultGivenLabel is --given-label where it is not given, in runs with
// one label per item.
const DefaultGivenLabel = engine.GivenBayes

// ResolveGiven fixes --given-label for a run: as given, else
// DefaultGivenLabel; runs with several labels per item (several:
// annotator-aware runs, whose annotators' model reads them, or a list label
// column, whose items' own mixtures do) read them as votes, so there the
// unset value is vote and an explicit bayes is refused, naming the flag. The model's
// posteriors are not tempered: beside it an explicit --temperature is
// refused.
func (o *Options) ResolveGiven(several bool) (engine.GivenModel, error) {
	v := o.GivenLabel
	if several {
		if v.Set && v.V == engine.GivenBayes {
			return 0, &Error{Flag: "given-label", Err: errors.New("bayes: runs with one label per item only, not runs with several per item (annotators, or a list label column), whose annotations the items' own mixtures read")}
		}
		return engine.GivenVote, nil
	}
	g := v.Or(DefaultGivenLabel)
	if g == engine.GivenBayes && o.Temperature.Set {
		why := "not with --given-label bayes"
		if !v.Set {
			why = "not with the given-label model (--given-label bayes, the default)"
		}
		return 0, &Error{Flag: "temperature", Err: errors.New(why + ", whose posteriors are probabilities already; give --given-label vote to temper the rounds' states")}
	}
	return g, nil
}

// HeadParams are the head's parameters for a resolved --head value v (nil:
// off): five folds by a hash of (seed, id) and scikit-learn's
// LogisticRegression default penalty (C = 1, the data README's logreg
// peer), 20 L-BFGS iterations for the first fit and 5 warm-started ones
// per round after it (each fit need not converge: the next round's starts
// where it stopped, and the rounds' posteriors it is fitted to move
// anyway; 100 and 10 cost a small run a third more for no gain on the
// dev grid or the weak-neighbour check, docs/QUALITY.md); Weight 0
// (fitted) for fit, share/(1-share) for a fixed share.
func HeadParams(v string, seed uint64) (*head.Params, error) {
	if err := parseHead(v); err != nil {
		return nil, &Error{Flag: "head", Err: err}
	}
	if v == HeadOff {
		return nil, nil
	}
	p := head.Params{Folds: headFolds, Lambda: 1, Iters: 20, WarmIters: 5, Tol: headTol, Seed: seed}
	if v != HeadFit {
		a, _ := strconv.ParseFloat(v, 64)
		p.Weight = a / (1 - a)
	}
	return &p, nil
}

// Error is an invalid option value, named as the user gave it.
type Error struct {
	Flag string
	Err  error
}

func (e *Error) Error() string { return "--" + e.Flag + " " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
