package evaluate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/relabel/relabel/internal/devdata"
)

// oracle returns, for each item, the float64 distances to all other items,
// sorted: the k smallest are what any exact kNN must return, up to ties.
func oracle(x []float32, n, d int, standardise bool) [][]float64 {
	if standardise {
		x = Standardise(x, n, d)
	}
	out := make([][]float64, n)
	for i := range n {
		for j := range n {
			if j == i {
				continue
			}
			var s float64
			for c := range d {
				v := float64(x[i*d+c]) - float64(x[j*d+c])
				s += v * v
			}
			out[i] = append(out[i], s)
		}
		slices.Sort(out[i])
	}
	return out
}

func TestNeighboursOracle(t *testing.T) {
	for _, tc := range []struct {
		n, d, k     int
		integer     bool // small integer features: duplicates and tied distances
		standardise bool
	}{
		{1, 3, 2, false, false},
		{2, 1, 1, false, true},
		{5, 4, 10, false, false}, // k >= n: padded
		{257, 1, 3, false, false},
		{263, 31, 10, true, false},
		{600, 33, 7, false, true},
		{530, 129, 10, true, true},
		{300, 2, 10, true, false}, // many exact duplicates
	} {
		name := fmt.Sprintf("n=%d d=%d k=%d int=%v z=%v", tc.n, tc.d, tc.k, tc.integer, tc.standardise)
		r := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.d)))
		x := make([]float32, tc.n*tc.d)
		for i := range x {
			if tc.integer {
				x[i] = float32(r.IntN(4))
			} else {
				x[i] = float32(r.NormFloat64()*3 + 10)
			}
		}
		got := Neighbours(x, tc.n, tc.d, tc.k, tc.standardise)
		if len(got) != tc.n*tc.k {
			t.Fatalf("%s: %d entries, want %d", name, len(got), tc.n*tc.k)
		}
		want := oracle(x, tc.n, tc.d, tc.standardise)
		zx := x
		if tc.standardise {
			zx = Standardise(x, tc.n, tc.d)
		}
		for i := range tc.n {
			row := got[i*tc.k : (i+1)*tc.k]
			valid := min(tc.k, tc.n-1)
			seen := map[int32]bool{}
			var dist []float64
			for p, j := range row {
				if p >= valid {
					if j != -1 {
						t.Fatalf("%s: item %d slot %d = %d, want padding -1", name, i, p, j)
					}
					continue
				}
				if j < 0 || int(j) >= tc.n || int(j) == i || seen[j] {
					t.Fatalf("%s: item %d: neighbours %v (self, repeated or out of range)", name, i, row)
				}
				seen[j] = true
				var s float64
				for c := range tc.d {
					v := float64(zx[i*tc.d+c]) - float64(zx[int(j)*tc.d+c])
					s += v * v
				}
				dist = append(dist, s)
			}
			// Nearest first (up to float32 rounding), and the same distances
			// as the k smallest: ties may pick different items.
			tol := func(v float64) float64 { return 1e-4 * (1 + v) }
			for p := 1; p < len(dist); p++ {
				if dist[p] < dist[p-1]-tol(dist[p]) {
					t.Fatalf("%s: item %d: distances not ascending: %v", name, i, dist)
				}
			}
			slices.Sort(dist)
			for p := range dist {
				if math.Abs(dist[p]-want[i][p]) > tol(want[i][p]) {
					t.Fatalf("%s: item %d: neighbour distances %v, exact %v", name, i, dist, want[i][:valid])
				}
			}
		}
	}
}

// TestNeighboursDeterministic checks that the goroutine count does not change
// the answer, ties included.
func TestNeighboursDeterministic(t *testing.T) {
	n, d := 700, 5
	r := rand.New(rand.NewPCG(7, 7))
	x := make([]float32, n*d)
	for i := range x {
		x[i] = float32(r.IntN(3))
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one := Neighbours(x, n, d, 10, false)
	runtime.GOMAXPROCS(4)
	four := Neighbours(x, n, d, 10, false)
	if !slices.Equal(one, four) {
		t.Errorf("1 and 4 goroutines disagree")
	}
}

func TestKNNVote(t *testing.T) {
	// Points on a line; k = 2. Item 0 (at 0): neighbours 1, 2 -> labels 0, 1,
	// tie -> 0. Item 3 (at 10): 4, 5 -> 1, 0 -> 0. Item 5 (at 12): 4, 3 -> 1.
	x := []float32{0, 1, 2, 10, 11, 12}
	labels := []int32{0, 0, 1, 1, 1, 0}
	want := []int32{0, 0, 0, 0, 0, 1}
	for _, z := range []bool{false, true} {
		if got := KNNVote(x, 6, 1, labels, 2, 2, z); !slices.Equal(got, want) {
			t.Errorf("standardise=%v: KNNVote = %v, want %v", z, got, want)
		}
	}
	if got := KNNVote([]float32{3}, 1, 1, []int32{1}, 2, 10, true); !slices.Equal(got, []int32{1}) {
		t.Errorf("single item: KNNVote = %v, want its own label [1]", got)
	}
	// Standardising matters when one feature's scale swamps the other: the
	// label follows feature 0 (spread 1) while feature 1 is noise x1000.
	r := rand.New(rand.NewPCG(1, 1))
	n := 400
	xs := make([]float32, 2*n)
	truth := make([]int32, n)
	for i := range n {
		truth[i] = int32(i % 2)
		xs[2*i] = float32(truth[i]) * 4
		xs[2*i+1] = float32(r.NormFloat64() * 1000)
	}
	raw, z := accuracy(KNNVote(xs, n, 2, truth, 2, 10, false), truth), accuracy(KNNVote(xs, n, 2, truth, 2, 10, true), truth)
	if z < 0.99 || raw > 0.8 {
		t.Errorf("accuracy %.3f raw, %.3f z-scored: want z-scoring to fix the scale (>= .99, raw <= .8)", raw, z)
	}
}

func accuracy(got, truth []int32) float64 {
	right := 0
	for i := range got {
		if got[i] == truth[i] {
			right++
		}
	}
	return float64(right) / float64(len(got))
}

// TestKNNVoteDigits reproduces the data README's kNN majority vote figures
// (K = 10, z-scored) on sklearn_digits.
func TestKNNVoteDigits(t *testing.T) {
	dir := devdata.Dir(t, "sklearn_digits")
	const n, d, c = 1797, 64, 10
	x := devdata.ReadLE[float32](t, filepath.Join(dir, "features.f32"))
	truth := devdata.ReadLE[int32](t, filepath.Join(dir, "truth.i32"))
	if len(x) != n*d || len(truth) != n {
		t.Fatalf("read %d features, %d labels; want %d, %d", len(x), len(truth), n*d, n)
	}
	for _, tc := range []struct {
		file       string
		noisy, knn float64 // README
	}{
		{"noisy-sym-0.4.i32", 0.603, 0.937},
		{"noisy-idn-0.4.i32", 0.601, 0.933},
	} {
		given := devdata.ReadLE[int32](t, filepath.Join(dir, tc.file))
		vote := KNNVote(x, n, d, given, c, 10, true)
		r, err := Evaluate(Inputs{C: c, Truth: truth, Given: given, Baselines: []Baseline{{"knn", vote}}})
		if err != nil {
			t.Fatal(err)
		}
		if !near(r.NoisyAccuracy, tc.noisy, 0.0006) {
			t.Errorf("%s: noisy accuracy %.4f, README %.3f", tc.file, r.NoisyAccuracy, tc.noisy)
		}
		if got := r.Baselines[0].Accuracy; !near(got, tc.knn, 0.015) {
			t.Errorf("%s: kNN vote accuracy %.4f, README %.3f +- .015", tc.file, got, tc.knn)
		} else {
			t.Logf("%s: kNN vote accuracy %.4f (README %.3f)", tc.file, got, tc.knn)
		}
	}
}

// BenchmarkNeighbours reports pairs/s (unordered pairs whose distance is
// computed) at named sizes; fashion_mnist_pca50 is 70000 x 50.
func BenchmarkNeighbours(b *testing.B) {
	for _, s := range []struct{ n, d int }{{2000, 16}, {5000, 50}, {10000, 64}} {
		b.Run(fmt.Sprintf("n=%d/d=%d", s.n, s.d), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, s.n*s.d)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			for b.Loop() {
				Neighbours(x, s.n, s.d, 10, true)
			}
			pairs := float64(s.n) * float64(s.n-1) / 2
			b.ReportMetric(pairs*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
