package grid

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/evaluate"
	"github.com/relabel/relabel/transforms/mixture"
	"github.com/relabel/relabel/transforms/noise"
)

var (
	quality        = flag.Bool("quality", false, "run the quality benchmark over the whole dev grid and write docs/QUALITY.md (slow: see docs/QUALITY.md for its time)")
	dataDir        = flag.String("data", filepath.Join("..", "..", "..", "shared", "data"), "the dev data folder (its README.md lists the peers)")
	qualityOut     = flag.String("quality-out", defaultQualityOut, "the file whose generated section -quality rewrites (created with that section alone when absent)")
	without        = flag.String("without", "", "comma-separated datasets -quality leaves out (e.g. fashion_mnist_pca50 for a quick look)")
	qualityOnly    = flag.String("quality-only", "", "comma-separated noises (clean,sym-0.1) or cells (letter/pair-0.2) -quality runs, the others left out")
	qualityFlags   = flag.String("quality-flags", "", "relabel run flags -quality runs with instead of the defaults, space-separated (e.g. '--given-label bayes')")
	sweep          = flag.Bool("sweep", false, "run the parameter sweep of docs/QUALITY.md (TestSweep; slow)")
	sweepPendigits = flag.Bool("sweep.pendigits", false, "TestSweep: add pendigits' idn-0.4 and sym-0.4 cells")
	sweepOnly      = flag.String("sweep.only", "", "TestSweep: run only the variants whose names contain one of these comma-separated words")
)

// defaultQualityOut is docs/QUALITY.md from the package's folder.
var defaultQualityOut = filepath.Join("..", "..", "docs", "QUALITY.md")

// QualityCommand is the command docs/QUALITY.md says reproduces it.
const QualityCommand = "go test ./quality/grid -quality -run Quality -timeout 4h -v   # or scripts/quality.sh"

// TestQuality is the benchmark of issue 4: relabel with
// options.Defaults() over every cell of DevGrid, written to
// docs/QUALITY.md. It checks that every cell was scored and that the
// measured kNN vote reproduces the data README's where it lists one (the
// harness reads the same labels the peers were run on).
func TestQuality(t *testing.T) {
	if !*quality {
		t.Skip("the quality benchmark runs with -quality (it takes long; see docs/QUALITY.md)")
	}
	cells := devGrid(t)
	if *without != "" {
		cells = Without(cells, strings.Split(*without, ",")...)
	}
	if *qualityOnly != "" {
		cells = Only(cells, strings.Split(*qualityOnly, ",")...)
	}
	if len(cells) == 0 {
		t.Fatalf("-without %q -quality-only %q leave no cell", *without, *qualityOnly)
	}
	d := options.Defaults()
	if *qualityFlags != "" {
		fs := flag.NewFlagSet("relabel", flag.ContinueOnError)
		d.Bind(fs)
		if err := fs.Parse(strings.Fields(*qualityFlags)); err != nil {
			t.Fatalf("-quality-flags: %v", err)
		}
	}
	t0 := time.Now()
	rs, err := Run(cells, job.NewConfig(d), &testWriter{t: t})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		// Detection (F1, AUC) needs a wrong given label: a clean cell has none.
		detect := r.Report.GivenWrong == 0 || (r.Report.F1.Valid() && r.Report.AUC.Valid())
		if !r.Report.CleanedAccuracy.Valid() || !detect || !r.Report.ECE.Valid() {
			t.Errorf("%s: a metric is undefined: %+v", r.Cell.Name(), r.Report)
		}
		if !math.IsNaN(r.Cell.Peers.KNN) && math.Abs(r.KNN()-r.Cell.Peers.KNN) > 0.005 {
			t.Errorf("%s: kNN vote %.4f, the data README's %.3f", r.Cell.Name(), r.KNN(), r.Cell.Peers.KNN)
		}
	}
	opts := d.FlagValues(options.GroupMethod, options.GroupNeighbours)
	// The pipeline's neighbour modes, which the in-process engine (exact
	// neighbours) does not have.
	for _, k := range []string{"neighbours", "partitions", "nprobe", "wave-mib", "spill-dir", "local-rounds-mib"} {
		delete(opts, k)
	}
	cmd := QualityCommand
	if *qualityOnly != "" {
		cmd = strings.Replace(cmd, "-v", "-v -quality-only "+*qualityOnly, 1)
	}
	if *without != "" {
		cmd = strings.Replace(cmd, "-v", "-v -without "+*without, 1)
	}
	if *qualityFlags != "" {
		cmd = strings.Replace(cmd, "-v", "-v -quality-flags '"+*qualityFlags+"'", 1)
	}
	if *qualityOut != defaultQualityOut {
		cmd = strings.Replace(cmd, "-v", "-v -quality-out "+*qualityOut, 1)
	}
	var md bytes.Buffer
	if err := Markdown(&md, rs, Meta{Command: cmd, Options: opts, Elapsed: time.Since(t0), Procs: runtime.GOMAXPROCS(0)}); err != nil {
		t.Fatal(err)
	}
	if err := WriteSection(*qualityOut, md.String()); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", *qualityOut, md.String())
}

// testWriter logs what is written to it a whole line at a time (Sweep
// writes a line in pieces).
type testWriter struct {
	t    *testing.T
	line []byte
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.line = append(w.line, b...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.t.Log(string(w.line[:i]))
		w.line = w.line[i+1:]
	}
}

// devGrid is DevGrid of the dev data folder, skipping the test where it is
// absent.
func devGrid(t *testing.T) []Cell {
	t.Helper()
	needData(t)
	cells, err := DevGrid(*dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

func needData(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(*dataDir, "README.md")); err != nil {
		t.Skipf("dev data absent (%v): this test reads ../shared/data", err)
	}
}

// TestDevData checks the grid and the loading against the dev data's own
// figures: the README's peers, its noisy and majority-vote accuracies, and
// the noise generated for the pair-flip and sym-0.2 cells.
func TestDevData(t *testing.T) {
	needData(t)
	peers, err := ReadPeers(*dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 18 {
		t.Errorf("%d peer rows in the README, want 18: %v", len(peers), peers)
	}
	if p := peers["sklearn_digits/sym-0.4"]; p.KNN != 0.937 || p.Cleanlab != 0.954 || !math.IsNaN(p.Logreg) {
		t.Errorf("sklearn_digits/sym-0.4 peers %+v, want kNN .937, cleanlab .954, no logreg", p)
	}
	if p := peers["pendigits/sym-0.6"]; p.KNN != 0.813 || p.Cleanlab != 0.801 || p.Logreg != 0.872 || p.Best() != 0.872 {
		t.Errorf("pendigits/sym-0.6 peers %+v, want kNN .813, cleanlab .801, logreg .872", p)
	}
	cells, err := DevGrid(*dataDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	targets := 0
	for _, c := range cells {
		names = append(names, c.Name())
		if c.Target() {
			targets++
		}
	}
	gen := func(ds string) []string {
		return []string{ds + "/clean", ds + "/sym-0.05", ds + "/sym-0.1", ds + "/pair-0.1", ds + "/pair-0.2", ds + "/idn-0.1", ds + "/idn-0.2",
			ds + "/perm-0.45", ds + "/multi-0.45", ds + "/mixed-0.45"}
	}
	var want []string
	for _, block := range [][]string{
		{"sklearn_digits/idn-0.4", "sklearn_digits/sym-0.4", "sklearn_digits/pair-0.3", "sklearn_digits/sym-0.2", "sklearn_digits/sym-0.6", "sklearn_digits/pair-0.45", "sklearn_digits/annotators-5"},
		{"satellite/idn-0.4", "satellite/sym-0.4", "satellite/pair-0.3", "satellite/sym-0.2", "satellite/sym-0.6", "satellite/pair-0.45"},
		{"pendigits/idn-0.4", "pendigits/sym-0.4", "pendigits/pair-0.3", "pendigits/sym-0.2", "pendigits/sym-0.6", "pendigits/pair-0.45"},
		{"letter/idn-0.4", "letter/sym-0.4", "letter/pair-0.3", "letter/sym-0.2", "letter/sym-0.6", "letter/pair-0.45", "letter/annotators-5"},
		{"fashion_mnist_pca50/idn-0.4", "fashion_mnist_pca50/sym-0.4", "fashion_mnist_pca50/pair-0.3", "fashion_mnist_pca50/sym-0.2", "fashion_mnist_pca50/sym-0.6", "fashion_mnist_pca50/pair-0.45"},
	} {
		want = append(append(want, block...), gen(strings.Split(block[0], "/")[0])...)
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("DevGrid cells\n %v\nwant\n %v", names, want)
	}
	if targets != 10 {
		t.Errorf("%d target cells, want 10", targets)
	}
	if got := Without(cells, "fashion_mnist_pca50"); len(got) != len(want)-16 {
		t.Errorf("Without fashion: %d cells, want %d", len(got), len(want)-16)
	}
	if got := Only(cells, "clean", "letter/perm-0.45"); len(got) != 6 || got[4].Name() != "letter/perm-0.45" {
		t.Errorf("Only clean and letter/perm-0.45: %d cells", len(got))
	}
	clean, low, structured := 0, 0, 0
	for _, c := range cells {
		clean += btoi(c.Clean())
		low += btoi(c.LowNoise())
		structured += btoi(c.Structured())
	}
	if clean != 5 || low != 35 || structured != 15 {
		t.Errorf("%d clean, %d low-noise, %d structured cells; want 5, 35, 15", clean, low, structured)
	}
	high := 0
	for _, c := range cells {
		if c.HighNoise() {
			high++
			if (c.File == "") != (c.Dataset == "fashion_mnist_pca50") {
				t.Errorf("%s: file %q: want the data's file, generated only for fashion", c.Name(), c.File)
			}
		}
	}
	if high != 10 {
		t.Errorf("%d high-noise cells, want 10", high)
	}
	if got := Only(cells, "idn-0.4", "sym-0.4"); len(got) != 10 {
		t.Errorf("Only idn/sym 0.4: %d cells, want 10", len(got))
	}

	byName := map[string]Cell{}
	for _, c := range cells {
		byName[c.Name()] = c
	}
	ds, err := loadDataset(byName["sklearn_digits/idn-0.4"].Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cell  string
		noisy float64 // README / noise model
		tol   float64
	}{
		{"sklearn_digits/idn-0.4", 0.601, 0.0005},
		{"sklearn_digits/sym-0.4", 0.603, 0.0005},
		{"sklearn_digits/annotators-5", 0.912, 0.0005},
		{"sklearn_digits/pair-0.3", 0.7, 0.05},
		{"sklearn_digits/sym-0.2", 0.8, 0.05},
		{"sklearn_digits/sym-0.6", 0.406, 0.0005},
		{"sklearn_digits/pair-0.45", 0.558, 0.0005},
		{"sklearn_digits/clean", 1, 0},
		{"sklearn_digits/sym-0.05", 0.95, 0.03},
		{"sklearn_digits/pair-0.2", 0.8, 0.05},
		// Per-row rates ~ N(0.1, 0.1) truncated to [0,1] have mean .129.
		{"sklearn_digits/idn-0.1", 0.871, 0.04},
		{"sklearn_digits/perm-0.45", 0.55, 0.06},
		{"sklearn_digits/multi-0.45", 0.55, 0.06},
		{"sklearn_digits/mixed-0.45", 0.55, 0.06},
	} {
		g, err := loadGiven(byName[tc.cell], ds)
		if err != nil {
			t.Fatal(err)
		}
		if got := agreeFrac(g.single, ds.truth); math.Abs(got-tc.noisy) > tc.tol {
			t.Errorf("%s: given labels %.4f accurate, want %.3f +- %.4f", tc.cell, got, tc.noisy, tc.tol)
		}
		if want := strings.HasPrefix(tc.cell, "sklearn_digits/annotators"); g.multi != want || (want && len(g.labels) != 5*ds.n) {
			t.Errorf("%s: multi %v with %d labels for %d items", tc.cell, g.multi, len(g.labels), ds.n)
		}
		if strings.HasPrefix(tc.cell, "sklearn_digits/pair-") {
			for i, l := range g.single {
				if y := ds.truth[i]; l != y && int(l) != (int(y)+1)%ds.c {
					t.Fatalf("%s: item %d: true %d flipped to %d, not to the next class", tc.cell, i, y, l)
				}
			}
		}
	}
}

// TestRunCellDigits runs relabel with the defaults on sklearn_digits idn-0.4
// and checks what RunCell reports against the data README and against
// itself: the noisy and kNN figures, every metric defined, cleaning better
// than not cleaning, and 0 rounds giving back the given labels.
func TestRunCellDigits(t *testing.T) {
	cells := devGrid(t)
	cell := Only(Without(cells, "satellite", "pendigits", "letter", "fashion_mnist_pca50"), "idn-0.4")[0]
	rep, dt, err := RunCell(cell, job.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	r := Result{Cell: cell, Report: rep, Time: dt}
	t.Logf("%s: noisy %.4f knn %.4f relabel %.4f F1 %.4f AUC %.4f ECE %.4f in %v",
		cell.Name(), float64(rep.NoisyAccuracy), r.KNN(), r.Cleaned(), float64(rep.F1), float64(rep.AUC), float64(rep.ECE), dt)
	if rep.Items != 1797 || rep.Classes != 10 {
		t.Errorf("%d items, %d classes; want 1797, 10", rep.Items, rep.Classes)
	}
	if math.Abs(float64(rep.NoisyAccuracy)-0.601) > 0.0005 || math.Abs(r.KNN()-0.933) > 0.0005 {
		t.Errorf("noisy %.4f, kNN %.4f; the README says .601, .933", float64(rep.NoisyAccuracy), r.KNN())
	}
	if !(r.Cleaned() > float64(rep.NoisyAccuracy)) || !rep.F1.Valid() || !rep.AUC.Valid() || !rep.ECE.Valid() {
		t.Errorf("relabel %.4f against noisy %.4f; F1 %v AUC %v ECE %v", r.Cleaned(), float64(rep.NoisyAccuracy), rep.F1, rep.AUC, rep.ECE)
	}

	o := options.Defaults()
	// No rounds and the given labels read as votes: the states are the
	// labels. (The given-label model would read the neighbours' labels
	// even then.)
	o.Rounds, o.GivenLabel = 0, options.Some(engine.GivenVote)
	rep0, _, err := RunCell(cell, job.NewConfig(o))
	if err != nil {
		t.Fatal(err)
	}
	if rep0.CleanedAccuracy != rep0.NoisyAccuracy || rep0.Flagged != 0 {
		t.Errorf("0 rounds: cleaned %.4f, noisy %.4f, %d flagged; want the given labels back", float64(rep0.CleanedAccuracy), float64(rep0.NoisyAccuracy), rep0.Flagged)
	}
}

// TestSynthetic runs the whole harness on a small dataset written here (so
// it runs without the dev data): DevGrid finds its files and README figures,
// RunCell is deterministic, Run adds the no-features run to annotator cells,
// Sweep prints a line per variant, and the markdown states the targets.
func TestSynthetic(t *testing.T) {
	dir := t.TempDir()
	writeSynthetic(t, filepath.Join(dir, "blobs"), 600, 4, 3)
	cells, err := DevGrid(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cells {
		names = append(names, c.Name())
	}
	want := "blobs/sym-0.4 blobs/pair-0.3 blobs/sym-0.2 blobs/sym-0.6 blobs/pair-0.45 blobs/annotators-5"
	for _, g := range GeneratedNoises {
		want += " blobs/" + g.Name
	}
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("cells %q, want %q", got, want)
	}
	if p := cells[0].Peers; p.KNN != 0.9 || p.Cleanlab != 0.92 || !cells[0].Target() || cells[1].Target() {
		t.Errorf("peers of %s: %+v (target %v); of %s: target %v", cells[0].Name(), p, cells[0].Target(), cells[1].Name(), cells[1].Target())
	}

	o50 := options.Defaults()
	o50.L = 50
	opts := job.NewConfig(o50)
	a, _, err := RunCell(cells[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := RunCell(cells[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("RunCell twice differs:\n%s\n%s", ja, jb)
	}
	if math.Abs(float64(a.NoisyAccuracy)-0.6) > binomTol(0.4, 600) {
		t.Errorf("sym-0.4 file: noisy accuracy %.4f, want .6", float64(a.NoisyAccuracy))
	}
	if !(float64(a.CleanedAccuracy) > float64(a.NoisyAccuracy)+0.2) {
		t.Errorf("separated blobs: relabel %.4f, noisy %.4f; want a large gain", float64(a.CleanedAccuracy), float64(a.NoisyAccuracy))
	}

	rs, err := Run(cells, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if (r.NoFeatures != nil) != r.Cell.Annotators() {
			t.Errorf("%s: no-features run %v, want one for annotator cells only", r.Cell.Name(), r.NoFeatures != nil)
		}
	}
	var md bytes.Buffer
	if err := Markdown(&md, rs, Meta{Command: "CMD", Options: map[string]string{"k": "10", "mu": "0.5"}, Procs: 2}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"    CMD\n", "--k=10 --mu=0.5", "| blobs | sym-0.4 | 600 |", "| blobs | annotators-5 | 600 |",
		"Mean cleaned accuracy over the 1 idn-0.4 and sym-0.4 cells", "blobs/annotators-5: relabel",
		"### Targets of issue 32", "blobs/pair-0.45: relabel", "blobs/sym-0.6: relabel",
		"cleanlab kNN (ours)", "| blobs | clean | 600 | 1.0000 |", "| blobs | mixed-0.45 | 600 |", "### Targets of issue 44 (do no harm)",
		"Clean labels, share relabel changed, target ≤ 0.50% on every dataset (1 cells): worst blobs/clean",
		"Partly structured noise (perm, multi, mixed), relabel minus the best peer, target ≥ +5.0 points on every cell (3 cells)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}

	var sw bytes.Buffer
	o0 := o50
	o0.Rounds, o0.GivenLabel = 0, options.Some(engine.GivenVote)
	vrs, err := Sweep(&sw, cells[:2], []Variant{{"zero-rounds", job.NewConfig(o0)}, {"default-rounds", opts}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(sw.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "variant") || !strings.HasPrefix(lines[1], "zero-rounds") || !strings.HasPrefix(lines[2], "default-rounds") {
		t.Errorf("sweep output:\n%s", sw.String())
	}
	if len(vrs) != 2 || vrs[0].Summary.Mean >= vrs[1].Summary.Mean {
		t.Errorf("sweep: %d results; 0 rounds mean %.4f should be below the default rounds' %.4f", len(vrs), vrs[0].Summary.Mean, vrs[1].Summary.Mean)
	}
	noisy := (float64(vrs[0].Results[0].Report.NoisyAccuracy) + float64(vrs[0].Results[1].Report.NoisyAccuracy)) / 2
	if math.Abs(vrs[0].Summary.Mean-noisy) > 1e-12 {
		t.Errorf("0 rounds: mean %.4f, want the noisy mean %.4f", vrs[0].Summary.Mean, noisy)
	}
	t.Logf("sweep:\n%s", sw.String())
}

// writeSynthetic writes a dataset folder as the dev data lays them out: n
// rows of c well separated Gaussian blobs in d dimensions, ids 1000+i,
// clean.parquet, a noisy-sym-0.4.arrow made with transforms/noise, an
// annotators-5.parquet, meta.json and a README.md listing made-up peers.
func writeSynthetic(t *testing.T, dir string, n, d, c int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	rows := &schemas.Rows{IDKind: schemas.IDInt64, D: d, LabelOff: []int32{0}}
	for i := range n {
		y := int32(i % c)
		rows.IDs = append(rows.IDs, int64(1000+i))
		for k := range d {
			center := 0.0
			if k == int(y)%d {
				center = 6
			}
			rows.Features = append(rows.Features, float32(center+r.NormFloat64()))
		}
		rows.Labels = append(rows.Labels, y)
		rows.LabelOff = append(rows.LabelOff, int32(i+1))
	}
	ctx := context.Background()
	write := func(name string, f shardio.Format, rr *schemas.Rows) {
		if err := shardio.WriteInput(ctx, blobio.Local{}, filepath.Join(dir, name), f, []*schemas.Rows{rr}, schemas.LabelInt32, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	write("clean.parquet", shardio.Parquet, rows)
	ds := noise.Dataset{IDs: rows.IDs, Truth: rows.Labels, C: c}
	sym, err := noise.SymmetricLabels(ds, 0.4, 3)
	if err != nil {
		t.Fatal(err)
	}
	nr := *rows
	nr.Labels = sym
	write("noisy-sym-0.4.arrow", shardio.ArrowFile, &nr)
	al, aoff, err := noise.AnnotatorLabels(ds, noise.Spread(5, 0.5, 0.7), 3)
	if err != nil {
		t.Fatal(err)
	}
	ar := *rows
	ar.Labels, ar.LabelOff, ar.Multi = al, aoff, true
	write("annotators-5.parquet", shardio.Parquet, &ar)
	meta := fmt.Sprintf(`{"name": "blobs", "n": %d, "d": %d, "C": %d}`, n, d, c)
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	readme := "| dataset | noise | noisy | kNN majority vote | cleanlab (kNN probs) |\n|---|---|---:|---:|---:|\n| blobs | sym 0.4 | .600 | .900 | .920 |\n"
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func binomTol(p float64, n int) float64 { return 4.5*math.Sqrt(p*(1-p)/float64(n)) + 1/float64(n) }

// loadCell loads cell's dataset and given labels, failing t when it cannot.
func loadCell(t testing.TB, cell Cell) (*dataset, *given) {
	t.Helper()
	ds, err := loadDataset(cell.Dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := loadGiven(cell, ds)
	if err != nil {
		t.Fatal(err)
	}
	return ds, g
}

func agreeFrac(a, b []int32) float64 {
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	return float64(same) / float64(len(a))
}

// TestInputs checks the conversion of engine states to evaluation inputs on
// hand-made states: the top class and its mass, the mass of the given label
// (0 when pi has none), and an empty state keeping the given label.
func TestInputs(t *testing.T) {
	var ss mixture.States
	ss.Reset()
	add := func(classes []int32, pi []float64) {
		var s mixture.State
		s.Init(classes[:min(len(classes), 1)], 4, 4, 0.1)
		if len(classes) == 0 {
			s.Reset()
		}
		for k := range s.Pi {
			s.Pi[k] = pi[k]
		}
		ss.Append(&s)
	}
	add([]int32{2}, []float64{1})
	add([]int32{1}, []float64{1})
	add(nil, nil)
	in := Inputs(4, []int32{2, 3, 0}, []int32{2, 3, 1}, &ss, resultio.Calibration{Temperature: 1})
	want := evaluate.Inputs{C: 4, Truth: []int32{2, 3, 0}, Given: []int32{2, 3, 1},
		Clean: []int32{2, 1, 1}, CleanProb: []float32{1, 1, 0}, GivenProb: []float32{1, 0, 0}}
	got, _ := json.Marshal(in)
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		t.Errorf("Inputs\n got %s\nwant %s", got, exp)
	}
}

// TestTargetsAndSection checks the target arithmetic on made-up results and
// that WriteSection replaces only its own section.
func TestTargetsAndSection(t *testing.T) {
	mk := func(name, noise string, relabel, knn, cleanlab float64, nf *evaluate.Report) Result {
		return Result{
			Cell: Cell{Dataset: name, Noise: noise, Peers: Peers{KNN: knn, Cleanlab: cleanlab}},
			Report: evaluate.Report{CleanedAccuracy: evaluate.Metric(relabel), NoisyAccuracy: 0.6,
				Baselines: []evaluate.BaselineAccuracy{{Name: "knn", Accuracy: evaluate.Metric(knn)}}},
			NoFeatures: nf,
		}
	}
	rs := []Result{
		mk("a", "idn-0.4", 0.96, 0.93, 0.93, nil),  // +3 points
		mk("b", "sym-0.4", 0.90, 0.904, 0.90, nil), // 0 vs cleanlab, -0.4 vs kNN
		mk("b", "pair-0.3", 0.70, 0.80, nan, nil),  // not a target cell
		mk("c", "annotators-5", 0.97, 0.95, nan, &evaluate.Report{CleanedAccuracy: 0.98}),
	}
	s := Summarise(rs)
	if s.TargetCells != 2 || math.Abs(s.Margin-1.5) > 1e-9 || s.WorstCleanlab.Cell != "b/sym-0.4" || math.Abs(s.WorstKNN.Points+0.4) > 1e-9 {
		t.Errorf("summary %+v", s)
	}
	lines := strings.Join(TargetLines(rs), "\n")
	for _, want := range []string{"+1.50 points above cleanlab, target ≥ +1.0: **met**", "b/sym-0.4 at +0.00 points, target ≥ -0.5: **met**",
		"b/sym-0.4 at -0.40 points", "c/annotators-5: relabel .9700 against the majority vote .6000 (+37.00 points) and relabel without features .9800 (-1.00 points): **not met**"} {
		if !strings.Contains(lines, want) {
			t.Errorf("target lines lack %q:\n%s", want, lines)
		}
	}

	// Issue 32: pair-0.45 within 5 points of idn-0.4 and 10 above the best
	// peer (logreg counts); sym-0.6 above the best peer.
	hn := []Result{
		mk("d", "idn-0.4", 0.97, 0.93, 0.93, nil),
		mk("d", "pair-0.45", 0.93, 0.70, 0.62, nil),
		mk("e", "idn-0.4", 0.97, 0.93, 0.93, nil),
		mk("e", "pair-0.45", 0.91, 0.70, 0.62, nil),
		mk("e", "sym-0.6", 0.80, 0.70, 0.75, nil),
	}
	hn[4].Cell.Peers.Logreg = 0.82
	hl := strings.Join(HighNoiseLines(hn), "\n")
	for _, want := range []string{"d/pair-0.45: relabel .9300, -4.00 points from its idn-0.4 result .9700 (target ≥ -5.0) and +23.00 points from the best peer .7000 (target ≥ +10.0): **met**",
		"e/pair-0.45: relabel .9100, -6.00 points", "e/sym-0.6: relabel .8000, best peer .8200 (-2.00 points), target above it: **not met**",
		"idn/sym-0.4 mean .9700 against .9391"} {
		if !strings.Contains(hl, want) {
			t.Errorf("issue 32's lines lack %q:\n%s", want, hl)
		}
	}
	if strings.Contains(hl, "e/pair-0.45") && strings.Contains(hl, "e/pair-0.45: relabel .9100, -6.00 points from its idn-0.4 result .9700 (target ≥ -5.0) and +21.00 points from the best peer .7000 (target ≥ +10.0): **met**") {
		t.Error("e/pair-0.45 is 6 points below idn-0.4: not met")
	}

	path := filepath.Join(t.TempDir(), "QUALITY.md")
	if err := WriteSection(path, "one"); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte("# Q\n\nbefore\n"+strings.TrimPrefix(string(old), "# Label quality\n\n")+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteSection(path, "two\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "# Q\n\nbefore\n" + BeginMarker + "\ntwo\n" + EndMarker + "\n\nafter\n"; string(got) != want {
		t.Errorf("after rewriting:\n%q\nwant\n%q", got, want)
	}
	if err := os.WriteFile(path, []byte(EndMarker+"\n"+BeginMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteSection(path, "x"); err == nil {
		t.Error("markers out of order: no error")
	}
}

// Example is how a parameter sweep compares settings: every variant starts
// from the defaults users get and changes one thing; fashion_mnist_pca50 is
// left out to keep a sweep to minutes.
func Example() {
	cells, err := DevGrid("../shared/data")
	if err != nil {
		panic(err)
	}
	cells = Without(cells, "fashion_mnist_pca50")
	var variants []Variant
	for _, mu := range []float64{0.3, 0.5, 0.7} {
		o := options.Defaults()
		o.Mu = mu
		variants = append(variants, Variant{Name: fmt.Sprintf("mu=%g", mu), Config: job.NewConfig(o)})
	}
	if _, err := Sweep(os.Stdout, cells, variants); err != nil {
		panic(err)
	}
}
