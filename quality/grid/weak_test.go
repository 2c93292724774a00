package grid

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/internal/weak"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
)

var (
	weakCheck = flag.Bool("weak", false, "issue 32's weak-neighbour check (TestWeak): relabel against the kNN and logreg peers on weak-neighbour features (needs python3 with scikit-learn; minutes)")
	weakOnly  = flag.String("weak.only", "", "TestWeak: only the datasets whose names contain one of these comma-separated words")
	weakRatio = flag.Int("weak.ratio", weak.DefaultRatio, "TestWeak: nuisance dimensions per feature dimension")
)

// weakNoises are the check's labels: issue 32's sym-0.6 (the target) and
// idn-0.4 for reference, the data folder's .i32 files.
var weakNoises = []string{"sym-0.6", "idn-0.4"}

// weakPeers is scripts/peer_weak.py's output.
type weakPeers struct {
	Noisy          float64 `json:"noisy"`
	Vote           float64 `json:"vote"`
	CleanlabKNN    float64 `json:"cleanlab_knn"`
	Logreg         float64 `json:"logreg"`
	CleanlabLogreg float64 `json:"cleanlab_logreg"`
}

// best is the best of the peers' cleanings (the logreg argmax alone is not
// a cleaner's output: cleanlab keeps the labels it does not flag).
func (p weakPeers) best() float64 { return max(p.Vote, p.CleanlabKNN, p.CleanlabLogreg) }

// weakDataset returns the weak-neighbour copy of the dataset in dir (the
// weak package's transform with ratio and seed NoiseSeed), registered in the
// harness's cache under a folder name of its own so that RunCell runs on it,
// and its folder name.
func weakDataset(t *testing.T, dir string, ratio int) (*dataset, string) {
	t.Helper()
	ds, err := loadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := filepath.Abs(fmt.Sprintf("%s#weak%d", dir, ratio))
	if err != nil {
		t.Fatal(err)
	}
	cache.Lock()
	defer cache.Unlock()
	if w, ok := cache.datasets[key]; ok {
		return w, key
	}
	x, d, err := weak.Features(ds.x, ds.ids, ds.d, weak.Params{Ratio: ratio, Seed: NoiseSeed})
	if err != nil {
		t.Fatal(err)
	}
	w := &dataset{name: ds.name + "-weak", n: ds.n, d: d, c: ds.c, ids: ds.ids, row: ds.row, x: x, truth: ds.truth}
	cache.datasets[key] = w
	return w, key
}

// peerPython is a python3 that imports scikit-learn: $RELABEL_PYTHON, else
// the first of python3 on the PATH and /usr/bin/python3 (Debian's
// python3-sklearn installs there, beside a pyenv's shim).
func peerPython(t *testing.T) string {
	t.Helper()
	cands := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("RELABEL_PYTHON"); p != "" {
		cands = []string{p}
	}
	for _, p := range cands {
		if exec.Command(p, "-c", "import sklearn").Run() == nil {
			return p
		}
	}
	t.Fatalf("-weak needs a python3 with scikit-learn (tried %s; Debian: apt-get install -y python3-sklearn, or set RELABEL_PYTHON)", strings.Join(cands, ", "))
	return ""
}

// runPeers writes w's features and the labels to tmp and runs
// scripts/peer_weak.py on them.
func runPeers(t *testing.T, py, tmp string, w *dataset, labels []int32, name string) weakPeers {
	t.Helper()
	write := func(file string, v any) string {
		p := filepath.Join(tmp, file)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := binary.Write(f, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	feat := write(w.name+".f32", w.x)
	lab := write(name+".i32", labels)
	tru := write(w.name+"-truth.i32", w.truth)
	out, err := exec.Command(py, filepath.Join("..", "..", "scripts", "peer_weak.py"), feat, fmt.Sprint(w.d), lab, tru).Output()
	if err != nil {
		t.Fatalf("%s: peer_weak.py: %v", name, err)
	}
	var p weakPeers
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("%s: peer_weak.py printed %q: %v", name, out, err)
	}
	return p
}

// weakVariants are what TestWeak runs relabel with: the defaults, and
// whatever -weak.variants adds (weakVariant).
var weakVariants = flag.String("weak.variants", "", "TestWeak: comma-separated extra variants to run beside the defaults: headW, the linear head (transforms/head) with weight W")

// headVariant returns the engine tweak of a variant name for the dataset
// ds: "default" (nil: options.Defaults, whose --head is
// options.DefaultHead), "headoff" (no head), "headW" (transforms/head
// with weight W and options.HeadParams' other fields), "headfit" (the
// weight fitted every round, logged), or an error for an unknown name.
func headVariant(t *testing.T, name string, ds *dataset) (func(*engine.Options), error) {
	switch name {
	case "default":
		return nil, nil
	case "headoff":
		return func(o *engine.Options) { o.NewComponent = nil }, nil
	}
	var w float64
	if name != "headfit" {
		if _, err := fmt.Sscanf(name, "head%g", &w); err != nil || w <= 0 {
			return nil, fmt.Errorf("variant %q: want default, headoff, headfit (the head's weight fitted) or headW (W > 0 the head's weight)", name)
		}
	}
	hp, err := options.HeadParams(options.HeadFit, options.Defaults().Seed)
	if err != nil {
		return nil, err
	}
	p := *hp
	p.Weight = w
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("variant %q: %w", name, err)
	}
	return func(o *engine.Options) {
		var onWeight func(r int, w float64)
		if t != nil && w == 0 {
			var ws []string
			onWeight = func(r int, w float64) {
				ws = append(ws, fmt.Sprintf("%.2f", w/(1+w)))
				if r == o.Rounds-1 {
					t.Logf("%s: the head's fitted share, rounds 1..%d: %s", ds.name, o.Rounds, strings.Join(ws, " "))
				}
			}
		}
		o.NewComponent = head.Factory(p, o.Mixture.C, o.Mixture.C0, o.Mixture.Smooth, onWeight)
	}, nil
}

// TestWeak is issue 32's weak-neighbour check: on every dev dataset with
// .i32 labels for weakNoises, the features are made weak-neighbour
// features (internal/weak, ratio -weak.ratio), the peers computed on them
// (scripts/peer_weak.py: kNN vote, cleanlab on kNN probabilities, cleanlab
// on cross-validated logistic-regression probabilities) and relabel run with
// its defaults. It fails where relabel falls below the linear model's
// cleaning on a sym-0.6 cell (issue 32 target 2), and logs one line per cell
// for docs/QUALITY.md.
func TestWeak(t *testing.T) {
	if !*weakCheck {
		t.Skip("the weak-neighbour check runs with -weak (minutes; see docs/QUALITY.md)")
	}
	needData(t)
	py := peerPython(t)
	tmp := t.TempDir()
	cells, err := DevGrid(*dataDir)
	if err != nil {
		t.Fatal(err)
	}
	// fashion_mnist_pca50's 70,000 rows at twice the dimension would take
	// the logreg peer and relabel many minutes on 2 cores.
	cells = Without(cells, "fashion_mnist_pca50")
	variants := []string{"default"}
	if *weakVariants != "" {
		for _, v := range strings.Split(*weakVariants, ",") {
			if _, err := headVariant(t, v, nil); err != nil {
				t.Fatalf("-weak.variants: %v", err)
			}
			variants = append(variants, v)
		}
	}
	ran := 0
	for _, c := range cells {
		i32 := strings.TrimSuffix(c.File, filepath.Ext(c.File)) + ".i32"
		if !contains(weakNoises, c.Noise) || c.File == "" || !exists(i32) {
			continue
		}
		if *weakOnly != "" && !containsAny(c.Dataset, strings.Split(*weakOnly, ",")) {
			continue
		}
		w, key := weakDataset(t, c.Dir, *weakRatio)
		wc := Cell{Dataset: w.name, Dir: key, Noise: c.Noise, File: i32, Peers: Peers{KNN: nan, Cleanlab: nan, Logreg: nan}}
		g, err := loadGiven(wc, w)
		if err != nil {
			t.Fatal(err)
		}
		p := runPeers(t, py, tmp, w, g.single, strings.ReplaceAll(wc.Name(), "/", "_"))
		for _, v := range variants {
			tweak, _ := headVariant(t, v, w)
			rep, dt, err := RunCellEngine(wc, job.Defaults(), tweak)
			if err != nil {
				t.Fatal(err)
			}
			r := Result{Cell: wc, Report: rep, Time: dt}
			if d := r.KNN() - p.Vote; math.Abs(d) > 0.02 {
				t.Errorf("%s: the harness's kNN vote %.4f and peer_weak.py's %.4f differ by more than 2 points", wc.Name(), r.KNN(), p.Vote)
			}
			t.Logf("| %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %+.2f | %.1fs |", w.name, c.Noise, v,
				p.Noisy, p.Vote, p.CleanlabKNN, p.Logreg, p.CleanlabLogreg, r.Cleaned(), 100*(r.Cleaned()-p.best()), dt.Seconds())
			if v == "default" && c.Noise == "sym-0.6" && r.Cleaned() < p.CleanlabLogreg {
				t.Errorf("%s: relabel %.4f below the linear model's cleaning %.4f (issue 32 target 2)", wc.Name(), r.Cleaned(), p.CleanlabLogreg)
			}
		}
		ran++
	}
	if ran == 0 {
		t.Fatalf("no dataset in %s has .i32 labels for %v", *dataDir, weakNoises)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
