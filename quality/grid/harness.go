package grid

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/evaluate"
	"github.com/relabel/relabel/transforms/mixture"
	"github.com/relabel/relabel/transforms/noise"
)

// Cell is one benchmark: a dataset of the dev data and one set of noisy
// labels for it.
type Cell struct {
	// Dataset is the dataset's name (its folder's base name).
	Dataset string
	// Dir is the dataset's folder: clean.parquet (ids, features, truth) and
	// meta.json.
	Dir string
	// Noise names the labels: "idn-0.4", "sym-0.4", "pair-0.3", "sym-0.2",
	// "annotators-5".
	Noise string
	// File holds the noisy labels (Parquet or Arrow with the clean file's ids
	// and features, or raw .i32 labels in the clean file's row order); empty
	// when the harness generates them with Generate from the truth.
	File string
	// Generate is the noise model of a cell without File.
	Generate noise.Params
	// Peers are the data README's figures for the cell (NaN when absent).
	Peers Peers
}

// Name is "dataset/noise".
func (c Cell) Name() string { return c.Dataset + "/" + c.Noise }

// Target reports whether the cell is one of the grid's accuracy target cells: the
// idn-0.4 and sym-0.4 files, whose cleanlab figures the README lists.
func (c Cell) Target() bool {
	return (c.Noise == "idn-0.4" || c.Noise == "sym-0.4") && !math.IsNaN(c.Peers.Cleanlab)
}

// HighNoise reports whether the cell is a high-noise cell: 60% symmetric or
// 45% pair-flip noise, where a vote of the neighbours' labels fails.
func (c Cell) HighNoise() bool { return c.Noise == "sym-0.6" || c.Noise == "pair-0.45" }

// GeneratedNoise is a cell of noise the harness generates on every dataset
// with transforms/noise at NoiseSeed.
type GeneratedNoise struct {
	Name   string
	Params noise.Params
}

// StructuredRate is the flip rate of the partly structured cells (perm,
// multi, mixed): as heavy as the pair-0.45 cells, where a vote of the
// neighbours fails as soon as the flips concentrate on few classes.
const StructuredRate = 0.45

// GeneratedNoises are the cells of the grid made on every dataset from its
// truth alone (beyond pair-0.3 and sym-0.2): the clean labels themselves
// ("clean": noise at rate 0, the given labels are the truth), low noise of
// each kind (sym, pair, idn at 0.05 to 0.2), where most datasets people have
// are and where cleaning must not do harm, and partly structured noise
// (perm, multi with 2 targets, mixed) at StructuredRate.
var GeneratedNoises = []GeneratedNoise{
	{"clean", noise.Params{Kind: noise.Symmetric, Rate: 0, Seed: NoiseSeed}},
	{"sym-0.05", noise.Params{Kind: noise.Symmetric, Rate: 0.05, Seed: NoiseSeed}},
	{"sym-0.1", noise.Params{Kind: noise.Symmetric, Rate: 0.1, Seed: NoiseSeed}},
	{"pair-0.1", noise.Params{Kind: noise.PairFlip, Rate: 0.1, Seed: NoiseSeed}},
	{"pair-0.2", noise.Params{Kind: noise.PairFlip, Rate: 0.2, Seed: NoiseSeed}},
	{"idn-0.1", noise.Params{Kind: noise.InstanceDependent, Rate: 0.1, Seed: NoiseSeed}},
	{"idn-0.2", noise.Params{Kind: noise.InstanceDependent, Rate: 0.2, Seed: NoiseSeed}},
	{"perm-0.45", noise.Params{Kind: noise.Perm, Rate: StructuredRate, Seed: NoiseSeed}},
	{"multi-0.45", noise.Params{Kind: noise.Multi, Rate: StructuredRate, Targets: 2, Seed: NoiseSeed}},
	{"mixed-0.45", noise.Params{Kind: noise.Mixed, Rate: StructuredRate, Seed: NoiseSeed}},
}

// Clean reports whether the cell's given labels are the truth.
func (c Cell) Clean() bool { return c.Noise == "clean" }

// LowNoise reports whether the cell has noise of 0.05 to 0.2 (sym, pair,
// idn), where cleaning must keep up with the best of doing nothing, the kNN
// vote and cleanlab.
func (c Cell) LowNoise() bool {
	return slices.Contains([]string{"sym-0.05", "sym-0.1", "sym-0.2", "pair-0.1", "pair-0.2", "idn-0.1", "idn-0.2"}, c.Noise)
}

// Structured reports whether the cell has partly structured noise (perm,
// multi, mixed).
func (c Cell) Structured() bool {
	k, _, _ := strings.Cut(c.Noise, "-")
	return k == "perm" || k == "multi" || k == "mixed"
}

// Annotators reports whether the cell has several labels per item.
func (c Cell) Annotators() bool { return strings.HasPrefix(c.Noise, "annotators") }

// DevGrid returns the dev grid over dataDir (../shared/data): for
// every dataset folder with a clean.parquet, smallest first, the
// noisy-idn-0.4 labels (.parquet, else .i32), the noisy-sym-0.4 labels
// (.arrow, else .i32), pair-flip noise at 0.3 and symmetric noise at 0.2
// generated here with NoiseSeed, the high-noise cells of issue 32
// (noisy-sym-0.6 and noisy-pair-0.45, .parquet else .i32; generated here with
// NoiseSeed for a dataset without the files, fashion_mnist_pca50),
// annotators-5.parquet where present, and then the GeneratedNoises cells.
func DevGrid(dataDir string) ([]Cell, error) {
	peers, err := ReadPeers(dataDir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	type ds struct {
		name, dir string
		n         int
	}
	var sets []ds
	for _, e := range ents {
		dir := filepath.Join(dataDir, e.Name())
		if !e.IsDir() || !exists(filepath.Join(dir, "clean.parquet")) {
			continue
		}
		m, err := readMeta(dir)
		if err != nil {
			return nil, err
		}
		sets = append(sets, ds{e.Name(), dir, m.N})
	}
	slices.SortFunc(sets, func(a, b ds) int {
		if a.n != b.n {
			return a.n - b.n
		}
		return strings.Compare(a.name, b.name)
	})
	var cells []Cell
	for _, s := range sets {
		add := func(nz, file string, gen noise.Params) {
			p, ok := peers[s.name+"/"+nz]
			if !ok {
				p = Peers{KNN: nan, Cleanlab: nan, Logreg: nan}
			}
			cells = append(cells, Cell{Dataset: s.name, Dir: s.dir, Noise: nz, File: file, Generate: gen, Peers: p})
		}
		if f := firstFile(s.dir, "noisy-idn-0.4.parquet", "noisy-idn-0.4.i32"); f != "" {
			add("idn-0.4", f, noise.Params{})
		}
		if f := firstFile(s.dir, "noisy-sym-0.4.arrow", "noisy-sym-0.4.i32"); f != "" {
			add("sym-0.4", f, noise.Params{})
		}
		add("pair-0.3", "", noise.Params{Kind: noise.PairFlip, Rate: 0.3, Seed: NoiseSeed})
		add("sym-0.2", "", noise.Params{Kind: noise.Symmetric, Rate: 0.2, Seed: NoiseSeed})
		if f := firstFile(s.dir, "noisy-sym-0.6.parquet", "noisy-sym-0.6.i32"); f != "" {
			add("sym-0.6", f, noise.Params{})
		} else {
			add("sym-0.6", "", noise.Params{Kind: noise.Symmetric, Rate: 0.6, Seed: NoiseSeed})
		}
		if f := firstFile(s.dir, "noisy-pair-0.45.parquet", "noisy-pair-0.45.i32"); f != "" {
			add("pair-0.45", f, noise.Params{})
		} else {
			add("pair-0.45", "", noise.Params{Kind: noise.PairFlip, Rate: 0.45, Seed: NoiseSeed})
		}
		if f := firstFile(s.dir, "annotators-5.parquet"); f != "" {
			add("annotators-5", f, noise.Params{})
		}
		for _, g := range GeneratedNoises {
			add(g.Name, "", g.Params)
		}
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("grid: no dataset folder with a clean.parquet in %s", dataDir)
	}
	return cells, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func firstFile(dir string, names ...string) string {
	for _, n := range names {
		if p := filepath.Join(dir, n); exists(p) {
			return p
		}
	}
	return ""
}

// Without returns the cells whose dataset is none of datasets: a sweep leaves
// out fashion_mnist_pca50, whose 70,000 rows take minutes per run on 2 cores.
func Without(cells []Cell, datasets ...string) []Cell {
	var out []Cell
	for _, c := range cells {
		if !slices.Contains(datasets, c.Dataset) {
			out = append(out, c)
		}
	}
	return out
}

// Only returns the cells whose noise ("idn-0.4", ...) or name
// ("letter/clean") is one of names.
func Only(cells []Cell, names ...string) []Cell {
	var out []Cell
	for _, c := range cells {
		if slices.Contains(names, c.Noise) || slices.Contains(names, c.Name()) {
			out = append(out, c)
		}
	}
	return out
}

// RunCell relabels cell's labels with cfg (resolved for the data's class
// count as relabel run resolves them: job.Config.Engine), in process with the CPU kernels, and evaluates the result against the truth
// with the kNN vote (VoteK, z-scored) as baseline "knn". It returns the
// report and the time engine.Run took (loading and the baseline excluded:
// both are cached across calls).
func RunCell(cell Cell, cfg job.Config) (evaluate.Report, time.Duration, error) {
	return RunCellEngine(cell, cfg, nil)
}

// RunCellEngine is RunCell with tweak (nil: none) applied to the resolved
// engine options: for trying a model part that has no flag yet.
func RunCellEngine(cell Cell, cfg job.Config, tweak func(*engine.Options)) (evaluate.Report, time.Duration, error) {
	ds, err := loadDataset(cell.Dir)
	if err != nil {
		return evaluate.Report{}, 0, err
	}
	g, err := loadGiven(cell, ds)
	if err != nil {
		return evaluate.Report{}, 0, err
	}
	eo, err := cfg.Engine(ds.c)
	if err != nil {
		return evaluate.Report{}, 0, fmt.Errorf("grid: %s: %w", cell.Name(), err)
	}
	if tweak != nil {
		tweak(&eo)
	}
	// The pooled fit's label transition, where the run starts from the
	// pooled posterior (the gate open), calibrates the output
	// (mixture.CalibrationStats.AddLabelLikelihood).
	var tOwn []float64
	if onPooled := eo.OnPooled; eo.Mixture.PooledIters > 0 {
		eo.OnPooled = func(m *mixture.Pooled) {
			if eo.Mixture.PooledOpen(m) {
				tOwn = m.LabelTransition()
			}
			if onPooled != nil {
				onPooled(m)
			}
		}
	}
	t0 := time.Now()
	res, err := engine.Run(&engine.Data{Keys: ds.ids, D: ds.d, Features: ds.x, Labels: g.labels, LabelOff: g.off}, eo, engine.Backends{})
	dt := time.Since(t0)
	if err != nil {
		return evaluate.Report{}, dt, fmt.Errorf("grid: %s: %w", cell.Name(), err)
	}
	if d := os.Getenv("RELABEL_CALDUMP"); d != "" {
		caldump(filepath.Join(d, fmt.Sprintf("%s-mu%g.tsv", strings.ReplaceAll(cell.Name(), "/", "__"), eo.Mixture.Mu)), ds.truth, g.single, &res.States)
	}
	cal := cfg.Calibration()
	if res.Given != nil {
		// The given-label model's posteriors are probabilities already.
		cal.Temperature, cal.Auto = 1, false
	}
	cal = resolve(cal, &res.States, g.labels, g.off, tOwn, ds.c)
	in := Inputs(ds.c, ds.truth, g.single, &res.States, cal)
	if g.multi {
		in.Given, in.GivenMulti, in.GivenOffsets = nil, g.labels, g.off
	}
	in.Baselines = []evaluate.Baseline{{Name: "knn", Labels: g.vote(ds)}, {Name: "cleanlab", Labels: g.cleanlab(ds)}}
	rep, err := evaluate.Evaluate(in)
	if err != nil {
		return rep, dt, fmt.Errorf("grid: %s: %w", cell.Name(), err)
	}
	return rep, dt, nil
}

// resolve fits an Auto calibration to the final states as the pipeline's
// writer fits it: the formula's statistics of every item (labels[off[i]:
// off[i+1]] are item i's annotations) and, where tOwn is set (the run
// started from the pooled posterior, tOwn its fitted c x c transition of the
// given labels), each item's likelihood of its given label. A fixed
// temperature is kept.
func resolve(cal resultio.Calibration, st *mixture.States, labels, off []int32, tOwn []float64, c int) resultio.Calibration {
	if !cal.Auto {
		return cal
	}
	var stats mixture.CalibrationStats
	item := func(i int) []int32 { return labels[off[i]:off[i+1]] }
	resultio.StatsOf(&stats, st, item, tOwn, c)
	return cal.Resolve(stats)
}

// Inputs turns final engine states into the evaluation inputs the way relabel
// writes its output (resultio.Calibration.Clean, the writer's; cal resolved):
// clean_label and
// clean_prob are the top class of the calibrated pi and its mass,
// given_label_prob is its mass on the given label (the majority annotation
// when several), and changed is clean_label != given. An empty state (no
// information; the output's null) keeps the given label with probability 0.
func Inputs(c int, truth, given []int32, st *mixture.States, cal resultio.Calibration) evaluate.Inputs {
	n := len(truth)
	in := evaluate.Inputs{
		C: c, Truth: truth, Given: given,
		Clean: make([]int32, n), CleanProb: make([]float32, n), GivenProb: make([]float32, n),
	}
	var post []float32
	for i := range n {
		var top int32
		var p, gp float32
		top, p, gp, _, post = cal.Clean(st, i, given[i], post)
		if top < 0 {
			top, p = given[i], 0
		}
		if gp != gp { // NaN: unlabelled
			gp = 0
		}
		in.Clean[i], in.CleanProb[i], in.GivenProb[i] = top, clamp01(p), clamp01(gp)
	}
	return in
}

// clamp01 absorbs float32 rounding of probabilities that sum to 1.
func clamp01(p float32) float32 { return min(max(p, 0), 1) }

// Result is one cell's outcome.
type Result struct {
	Cell   Cell
	Report evaluate.Report
	// Time is engine.Run's wall time.
	Time time.Duration
	// NoFeatures, for annotator cells, is the report of the same options with
	// Mu = 1: every item's mixture is its own state alone, so the
	// method sees the annotations but no neighbour, i.e. no feature.
	NoFeatures *evaluate.Report
}

// Cleaned is the cleaned-label accuracy.
func (r Result) Cleaned() float64 { return float64(r.Report.CleanedAccuracy) }

// KNN is the measured kNN-vote accuracy.
func (r Result) KNN() float64 { return r.baseline("knn") }

// Cleanlab is the measured accuracy of cleanlab on out-of-sample kNN
// probabilities (CleanlabKNN), NaN where the report has none.
func (r Result) Cleanlab() float64 { return r.baseline("cleanlab") }

// Given is the accuracy of the given labels (their majority vote with
// annotators): the peer that does nothing.
func (r Result) Given() float64 { return float64(r.Report.NoisyAccuracy) }

// Changed is the share of items whose label relabel changed.
func (r Result) Changed() float64 {
	return float64(r.Report.Flagged) / float64(max(r.Report.Items, 1))
}

func (r Result) baseline(name string) float64 {
	for _, b := range r.Report.Baselines {
		if b.Name == name {
			return float64(b.Accuracy)
		}
	}
	return nan
}

// Run runs every cell with cfg, logging a line per cell to log (nil: none).
func Run(cells []Cell, cfg job.Config, log io.Writer) ([]Result, error) {
	if log == nil {
		log = io.Discard
	}
	out := make([]Result, 0, len(cells))
	for _, c := range cells {
		rep, dt, err := RunCell(c, cfg)
		if err != nil {
			return out, err
		}
		r := Result{Cell: c, Report: rep, Time: dt}
		if c.Annotators() {
			// Mu 1: the items' neighbours out, their annotations alone.
			nf, _, err := RunCellEngine(c, cfg, func(eo *engine.Options) { eo.Mixture.Mu = 1 })
			if err != nil {
				return out, err
			}
			r.NoFeatures = &nf
		}
		fmt.Fprintf(log, "%-32s noisy %.4f  knn %.4f  relabel %.4f  (%.1fs)\n",
			c.Name(), float64(rep.NoisyAccuracy), r.KNN(), r.Cleaned(), dt.Seconds())
		out = append(out, r)
	}
	return out, nil
}

// caldump writes the raw final states of a cell for scripts/fit_temperature.py
// (RELABEL_CALDUMP names the folder; docs/QUALITY.md, the calibration
// section): per row the truth, the given label, then per kept class
// "class:pi:rho_class(given):rho_class(class)".
func caldump(name string, truth, given []int32, st *mixture.States) {
	f, err := os.Create(name)
	if err != nil {
		panic(err) // a developer's tool: the folder must exist
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	for i := range truth {
		fmt.Fprintf(w, "%d\t%d", truth[i], given[i])
		lo, hi := st.ItemOff[i], st.ItemOff[i+1]
		for e := lo; e < hi; e++ {
			var rg, rk float32
			for q := st.RowOff[e]; q < st.RowOff[e+1]; q++ {
				if st.Cat[q] == given[i] {
					rg = st.P[q]
				}
				if st.Cat[q] == st.Class[e] {
					rk = st.P[q]
				}
			}
			fmt.Fprintf(w, "\t%d:%.6g:%.4g:%.4g", st.Class[e], st.Pi[e], rg, rk)
		}
		fmt.Fprintln(w)
	}
}
