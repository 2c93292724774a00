package grid

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestNPSum checks numpy's pairwise summation order against an exact sum
// at awkward lengths, and against plain left-to-right addition below 8
// values, where numpy adds one by one.
func TestNPSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 127, 128, 129, 300, 1000} {
		a := make([]float64, n)
		var seq, comp float64 // Kahan: a near-exact reference
		for i := range a {
			a[i] = r.Float64()*2 - 0.5
			y := a[i] - comp
			tt := seq + y
			comp = (tt - seq) - y
			seq = tt
		}
		got := npSum(a)
		if math.Abs(got-seq) > 1e-12*float64(max(n, 1)) {
			t.Errorf("n=%d: npSum %v, exact %v", n, got, seq)
		}
		if n < 8 {
			s := 0.0
			for _, v := range a {
				s += v
			}
			if got != s {
				t.Errorf("n=%d: npSum %v, left to right %v", n, got, s)
			}
		}
	}
	// Eight interleaved partial sums: the ones added to 1e16 one by one are
	// lost (its spacing is 2), those summed apart first are kept.
	a := []float64{1e16, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	if got := npSum(a); got != 1e16+14 {
		t.Errorf("npSum of 1e16 and fifteen ones: %v, numpy's order gives 1e16+14", got)
	}
}

// TestRoundPreservingSum checks cleanlab's rounding: integers within one of
// the values, their total the rounded total, halves to even where the total
// allows.
func TestRoundPreservingSum(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    []float64
		want []int
	}{
		{"exact", []float64{3, 0, 2}, []int{3, 0, 2}},
		{"halves to even", []float64{0.5, 1.5, 2}, []int{0, 2, 2}},
		{"short by one", []float64{95.3, 0.3, 4.4}, []int{95, 0, 5}},
		// cleanlab visits the entries in descending order of value minus
		// rounded value whichever way it moves them: lowering one, it lowers
		// the one that lost least in rounding up, as its code does.
		{"over by one", []float64{2.6, 2.6, 2.8}, []int{3, 3, 2}},
	} {
		got := make([]int, len(tc.v))
		roundPreservingSum(got, tc.v)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v rounded to %v, want %v", tc.name, tc.v, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		v := make([]float64, 1+r.IntN(30))
		for i := range v {
			v[i] = r.Float64() * 50
		}
		got := make([]int, len(v))
		roundPreservingSum(got, v)
		total := 0
		for i, g := range got {
			total += g
			if math.Abs(float64(g)-v[i]) > 1.5 {
				t.Fatalf("%v rounded to %v: entry %d off by more than one", v, got, i)
			}
		}
		if float64(total) != math.RoundToEven(npSum(v)) {
			t.Fatalf("%v rounded to %v: total %d, want %v", v, got, total, math.RoundToEven(npSum(v)))
		}
	}
}

// TestFindLabelIssues builds probabilities that point to the truth and
// given labels with a known set flipped: cleanlab flags exactly the flipped
// items (the confident joint counts them, the pruning takes the largest
// margins, and no item whose argmax is its label is flagged); a row whose
// probabilities agree with its wrong label is kept.
func TestFindLabelIssues(t *testing.T) {
	const n, c = 3000, 5
	r := rand.New(rand.NewPCG(5, 6))
	truth := make([]int32, n)
	given := make([]int32, n)
	probs := make([]float64, n*c)
	wrong := make([]bool, n)
	for i := range n {
		truth[i] = int32(i % c)
		given[i] = truth[i]
		if r.Float64() < 0.2 {
			given[i] = int32((i%c + 1 + r.IntN(c-1)) % c)
			wrong[i] = true
		}
		top := 0.6 + 0.3*r.Float64()
		for y := range c {
			probs[i*c+y] = (1 - top) / (c - 1)
		}
		probs[i*c+int(truth[i])] = top
	}
	mask := FindLabelIssues(given, probs, c)
	if !slices.Equal(mask, wrong) {
		diff := 0
		for i := range mask {
			if mask[i] != wrong[i] {
				diff++
			}
		}
		t.Errorf("%d of %d items flagged differently from the flipped set", diff, n)
	}
	// A flipped item whose model agrees with the wrong label is not an issue.
	for i := range n {
		if wrong[i] {
			p := probs[i*c : (i+1)*c]
			p[truth[i]], p[given[i]] = p[given[i]], p[truth[i]]
			if FindLabelIssues(given, probs, c)[i] {
				t.Errorf("item %d flagged although its argmax is its given label", i)
			}
			break
		}
	}

	// The kNN form: ten neighbours all of the truth's class, given labels
	// wrong on a fifth: cleanlab puts the truth back everywhere.
	nb := make([]int32, n*VoteK)
	for i := range n {
		for k := range VoteK {
			nb[i*VoteK+k] = int32((i + c*(k+1)) % n) // same class as i
		}
	}
	// Neighbours carry the given labels, so some are wrong; with a fifth
	// wrong, the majority of ten is still the truth nearly everywhere.
	cleaned := CleanlabKNN(given, nb, VoteK, c)
	bad := 0
	for i := range n {
		if cleaned[i] != truth[i] {
			bad++
		}
	}
	if bad > n/100 {
		t.Errorf("CleanlabKNN left %d of %d labels wrong", bad, n)
	}
}

// TestCleanlabREADME runs the Go port on the dev data's idn-0.4 and sym-0.4
// files and compares its accuracy with the data README's cleanlab column
// (cleanlab 2.9 on kNN probabilities), logging the differences. It needs ../shared/data;
// fashion_mnist_pca50 (70,000 rows) only with -quality.
func TestCleanlabREADME(t *testing.T) {
	cells := Only(devGrid(t), "idn-0.4", "sym-0.4")
	if !*quality {
		cells = Without(cells, "fashion_mnist_pca50")
	}
	for _, cell := range cells {
		ds, g := loadCell(t, cell)
		got := agreeFrac(g.cleanlab(ds), ds.truth)
		d := got - cell.Peers.Cleanlab
		t.Logf("%-30s cleanlab kNN (ours) %.4f, README %.3f: %+.4f", cell.Name(), got, cell.Peers.Cleanlab, d)
		// The port lands above the README on every file (+.0015 to +.012),
		// as scripts/peer_weak.py's numpy port does (docs/QUALITY.md, "Weak
		// neighbours"): the README's probabilities may be formed otherwise.
		// The bound catches a broken port, not that offset.
		if math.Abs(d) > 0.015 {
			t.Errorf("%s: cleanlab kNN %.4f, the README's %.3f", cell.Name(), got, cell.Peers.Cleanlab)
		}
	}
}

// TestCleanlabPeerWeak checks the Go port against scripts/peer_weak.py's
// numpy one on sklearn_digits idn-0.4 and sym-0.4: the same neighbours
// (no distance ties on digits), the same flags, so the same accuracy to the
// last item. It needs ../shared/data and a python3 with scikit-learn
// (Debian: python3-sklearn; RELABEL_PYTHON names another) and skips
// without them, and with -short (the script's logistic-regression peer
// takes seconds to minutes).
func TestCleanlabPeerWeak(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs scripts/peer_weak.py")
	}
	needData(t)
	py := ""
	for _, p := range []string{os.Getenv("RELABEL_PYTHON"), "python3", "/usr/bin/python3"} {
		if p != "" && exec.Command(p, "-c", "import sklearn").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no python3 with scikit-learn: this test runs scripts/peer_weak.py")
	}
	for _, cell := range Only(devGrid(t), "sklearn_digits/idn-0.4", "sklearn_digits/sym-0.4") {
		ds, g := loadCell(t, cell)
		p := runPeers(t, py, t.TempDir(), ds, g.single, cell.Noise)
		got := agreeFrac(g.cleanlab(ds), ds.truth)
		t.Logf("%s: cleanlab kNN Go %.6f, peer_weak.py %.6f", cell.Name(), got, p.CleanlabKNN)
		if math.Abs(got-p.CleanlabKNN) > 0.5/float64(ds.n) {
			t.Errorf("%s: cleanlab kNN %.6f in Go, %.6f in peer_weak.py", cell.Name(), got, p.CleanlabKNN)
		}
	}
}
