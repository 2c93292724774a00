package noise

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// synth is a dataset of n rows over c classes with d Gaussian features whose
// mean depends on the class; ids are not 0..n-1 so that tests notice code
// that seeds by row index instead of id.
func synth(n, d, c int) Dataset {
	r := rand.New(rand.NewPCG(1, 2))
	ds := Dataset{IDs: make([]int64, n), Truth: make([]int32, n), Features: make([]float32, n*d), D: d, C: c}
	for i := range n {
		ds.IDs[i] = int64(i)*7919 + 13
		ds.Truth[i] = int32(i % c)
		for k := range d {
			ds.Features[i*d+k] = float32(r.NormFloat64() + float64((i%c)*(k%3)))
		}
	}
	return ds
}

// binomTol is a 4.5 sigma band for the fraction of successes in n Bernoulli(p)
// trials; a correct generator fails it about once in 150,000 runs, and the
// runs are deterministic anyway.
func binomTol(p float64, n int) float64 {
	return 4.5*math.Sqrt(p*(1-p)/float64(n)) + 1/float64(n)
}

// truncMean is the mean of N(mu, sd^2) truncated to [0,1].
func truncMean(mu, sd float64) float64 {
	if sd == 0 {
		return mu
	}
	phi := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	cdf := func(x float64) float64 { return 0.5 * (1 + math.Erf(x/math.Sqrt2)) }
	a, b := -mu/sd, (1-mu)/sd
	return mu + sd*(phi(a)-phi(b))/(cdf(b)-cdf(a))
}

func wrongFraction(truth, noisy []int32) float64 {
	wrong := 0
	for i := range truth {
		if truth[i] != noisy[i] {
			wrong++
		}
	}
	return float64(wrong) / float64(len(truth))
}

func TestFlipRates(t *testing.T) {
	ds := synth(20000, 6, 10)
	for _, tc := range []struct {
		name string
		kind Kind
		rate float64
		want float64 // expected fraction of wrong labels
	}{
		{"sym 0", Symmetric, 0, 0},
		{"sym 0.2", Symmetric, 0.2, 0.2},
		{"sym 0.4", Symmetric, 0.4, 0.4},
		{"sym 1", Symmetric, 1, 1},
		{"pair 0.3", PairFlip, 0.3, 0.3},
		{"pair 1", PairFlip, 1, 1},
		{"idn 0.4", InstanceDependent, 0.4, truncMean(0.4, 0.1)},
		{"idn 0.2", InstanceDependent, 0.2, truncMean(0.2, 0.1)},
		{"idn 0.05 (truncation lifts the mean)", InstanceDependent, 0.05, truncMean(0.05, 0.1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Generate(ds, Params{Kind: tc.kind, Rate: tc.rate, Seed: 42})
			if err != nil {
				t.Fatal(err)
			}
			if out.Offsets != nil {
				t.Errorf("single-label kind returned offsets")
			}
			got := wrongFraction(ds.Truth, out.Labels)
			if tol := binomTol(tc.want, ds.Len()); math.Abs(got-tc.want) > tol {
				t.Errorf("wrong fraction %.4f, want %.4f +- %.4f", got, tc.want, tol)
			}
		})
	}
	if m := truncMean(0.05, 0.1); m < 0.09 {
		t.Errorf("truncMean(0.05, 0.1) = %v: the idn 0.05 case would not test truncation", m)
	}
}

func TestFlipTargets(t *testing.T) {
	const c = 5
	ds := synth(25000, 4, c)
	sym, err := SymmetricLabels(ds, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := PairFlipLabels(ds, 0.5, 3)
	if err != nil {
		t.Fatal(err)
	}
	idn, err := InstanceDependentLabels(ds, 1, 0, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	// offset[k] counts symmetric flips to (y+k) mod C; each k in 1..C-1 should
	// get a quarter of them.
	var offset [c]int
	for i, y := range ds.Truth {
		offset[(int(sym[i])-int(y)+c)%c]++
		if pair[i] != y && pair[i] != (y+1)%c {
			t.Fatalf("pair: row %d: truth %d became %d, want %d or %d", i, y, pair[i], y, (y+1)%c)
		}
		if idn[i] == y {
			t.Fatalf("idn at rate 1, std 0: row %d kept its label %d", i, y)
		}
		if idn[i] < 0 || idn[i] >= c {
			t.Fatalf("idn: row %d: label %d outside [0,%d)", i, idn[i], c)
		}
	}
	if offset[0] != 0 {
		t.Errorf("sym at rate 1: %d labels kept their true class", offset[0])
	}
	for k := 1; k < c; k++ {
		p := 1.0 / (c - 1)
		got := float64(offset[k]) / float64(ds.Len())
		if tol := binomTol(p, ds.Len()); math.Abs(got-p) > tol {
			t.Errorf("sym: fraction flipped by +%d is %.4f, want %.4f +- %.4f", k, got, p, tol)
		}
	}
}

func TestIDNTargetProbs(t *testing.T) {
	ds := synth(500, 8, 6)
	m, err := NewIDN(ds, 1, 9)
	if err != nil {
		t.Fatal(err)
	}
	row := func(i int) []float32 { return ds.Features[i*ds.D : (i+1)*ds.D] }
	p0 := m.TargetProbs(make([]float64, ds.C), row(0), 2)
	again := m.TargetProbs(make([]float64, ds.C), slices.Clone(row(0)), 2)
	if !slices.Equal(p0, again) {
		t.Errorf("identical features and label: %v vs %v", p0, again)
	}
	if p0[2] != 0 {
		t.Errorf("mass %v on the true class", p0[2])
	}
	var sum float64
	for _, p := range p0 {
		sum += p
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("probabilities sum to %v", sum)
	}
	// The target must depend on the instance: across rows of one label the
	// distributions should differ substantially, not just by rounding.
	maxTV := 0.0
	for i := 1; i < 50; i++ {
		maxTV = max(maxTV, tv(p0, m.TargetProbs(make([]float64, ds.C), row(i), 2)))
	}
	if maxTV < 0.5 {
		t.Errorf("max total variation between rows' target distributions %.3f, want >= 0.5", maxTV)
	}
	// ... and on the label: W_y differs per class, so even restricted to the
	// classes both labels can flip to (renormalised) the distributions differ.
	p1 := m.TargetProbs(make([]float64, ds.C), row(0), 3)
	p0[3], p1[2] = 0, 0
	if d := tv(normalise(p0), normalise(p1)); d < 0.1 {
		t.Errorf("labels 2 and 3 flip row 0 to classes 0,1,4,5 alike (tv %.3f): W_y shared across labels?", d)
	}
}

// TestIDNSharpness checks that sharpness concentrates the flip targets: the
// mean entropy of TargetProbs over rows falls as it grows.
func TestIDNSharpness(t *testing.T) {
	ds := synth(300, 16, 8)
	prev := math.Inf(1)
	for _, s := range []float64{0.25, 1, 4} {
		m, err := NewIDN(ds, s, 1)
		if err != nil {
			t.Fatal(err)
		}
		var h float64
		p := make([]float64, ds.C)
		for i, y := range ds.Truth {
			for _, v := range m.TargetProbs(p, ds.Features[i*ds.D:(i+1)*ds.D], y) {
				if v > 0 {
					h -= v * math.Log(v) / float64(ds.Len())
				}
			}
		}
		if h >= prev {
			t.Errorf("sharpness %v: mean target entropy %.3f, not below %.3f at the smaller sharpness", s, h, prev)
		}
		prev = h
	}
}

func normalise(p []float64) []float64 {
	var s float64
	for _, v := range p {
		s += v
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

func tv(p, q []float64) float64 {
	var s float64
	for i := range p {
		s += math.Abs(p[i] - q[i])
	}
	return s / 2
}

// TestIDNEmpirical generates labels for many copies of two feature rows with
// the same label and checks each copy set follows its own TargetProbs.
func TestIDNEmpirical(t *testing.T) {
	base := synth(200, 5, 4)
	const copies = 4000
	a, b := base.Features[0:5], base.Features[5*17:5*18] // two unrelated rows
	ds := Dataset{D: 5, C: 4}
	for i := range 2 * copies {
		ds.IDs = append(ds.IDs, int64(i))
		ds.Truth = append(ds.Truth, 1)
		if i < copies {
			ds.Features = append(ds.Features, a...)
		} else {
			ds.Features = append(ds.Features, b...)
		}
	}
	const seed = 5
	out, err := InstanceDependentLabels(ds, 1, 0, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewIDN(ds, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	pa := m.TargetProbs(make([]float64, 4), a, 1)
	pb := m.TargetProbs(make([]float64, 4), b, 1)
	if d := tv(pa, pb); d < 0.2 {
		t.Fatalf("fixture: the two rows' distributions are too close (tv %.3f) to tell apart", d)
	}
	for _, half := range []struct {
		name string
		lo   int
		p    []float64
	}{{"row a", 0, pa}, {"row b", copies, pb}} {
		var count [4]int
		for _, y := range out[half.lo : half.lo+copies] {
			count[y]++
		}
		for c, p := range half.p {
			got := float64(count[c]) / copies
			if tol := binomTol(p, copies); math.Abs(got-p) > tol {
				t.Errorf("%s: class %d drawn %.4f of the time, want %.4f +- %.4f", half.name, c, got, p, tol)
			}
		}
	}
}

func TestDeterminism(t *testing.T) {
	ds := synth(3000, 5, 7)
	// Reversing the rows must reverse the output: draws follow ids, not
	// positions. The IDN standardisation is order-free up to rounding of the
	// feature sums, which these features do not reach.
	rev := Dataset{IDs: slices.Clone(ds.IDs), Truth: slices.Clone(ds.Truth), D: ds.D, C: ds.C}
	slices.Reverse(rev.IDs)
	slices.Reverse(rev.Truth)
	for i := range ds.Len() {
		rev.Features = append(rev.Features, ds.Features[(ds.Len()-1-i)*ds.D:(ds.Len()-i)*ds.D]...)
	}
	for _, p := range []Params{
		{Kind: Symmetric, Rate: 0.4},
		{Kind: PairFlip, Rate: 0.4},
		{Kind: InstanceDependent, Rate: 0.4},
		{Kind: Annotators, Accuracies: []float64{0.6, 0.7, 0.8}},
		{Kind: Perm, Rate: 0.4},
		{Kind: Multi, Rate: 0.4},
		{Kind: Mixed, Rate: 0.4},
	} {
		t.Run(p.Kind.String(), func(t *testing.T) {
			gen := func(ds Dataset, seed uint64) []int32 {
				p.Seed = seed
				out, err := Generate(ds, p)
				if err != nil {
					t.Fatal(err)
				}
				return out.Labels
			}
			first, second, other := gen(ds, 11), gen(ds, 11), gen(ds, 12)
			if !slices.Equal(first, second) {
				t.Errorf("same seed, different labels")
			}
			if slices.Equal(first, other) {
				t.Errorf("seeds 11 and 12 gave identical labels")
			}
			backwards := gen(rev, 11)
			per := len(first) / ds.Len()
			for i := range ds.Len() {
				j := ds.Len() - 1 - i
				if !slices.Equal(first[i*per:(i+1)*per], backwards[j*per:(j+1)*per]) {
					t.Fatalf("row id %d: labels %v in order, %v reversed", ds.IDs[i], first[i*per:(i+1)*per], backwards[j*per:(j+1)*per])
				}
			}
		})
	}
}

func TestAnnotators(t *testing.T) {
	ds := synth(20000, 2, 10)
	acc := []float64{0.55, 0.65, 0.75, 0.85, 0.95}
	labels, off, err := AnnotatorLabels(ds, acc, 8)
	if err != nil {
		t.Fatal(err)
	}
	n, m := ds.Len(), len(acc)
	if len(off) != n+1 || len(labels) != n*m || off[0] != 0 || int(off[n]) != n*m {
		t.Fatalf("layout: %d labels, %d offsets (first %d, last %d); want %d and %d", len(labels), len(off), off[0], off[len(off)-1], n*m, n+1)
	}
	correct := make([]int, m)
	vote := 0
	for i, y := range ds.Truth {
		row := labels[off[i]:off[i+1]]
		if len(row) != m {
			t.Fatalf("row %d has %d labels, want %d", i, len(row), m)
		}
		var count [10]int
		for a, l := range row {
			if l < 0 || l >= 10 {
				t.Fatalf("row %d annotator %d: label %d outside [0,10)", i, a, l)
			}
			if l == y {
				correct[a]++
			}
			count[l]++
		}
		best := 0 // majority, ties to the lowest class
		for c := range count {
			if count[c] > count[best] {
				best = c
			}
		}
		if int32(best) == y {
			vote++
		}
	}
	var mean float64
	for a, p := range acc {
		got := float64(correct[a]) / float64(n)
		mean += got / float64(m)
		if tol := binomTol(p, n); math.Abs(got-p) > tol {
			t.Errorf("annotator %d: accuracy %.4f, want %.4f +- %.4f", a, got, p, tol)
		}
	}
	if v := float64(vote) / float64(n); v < mean+0.1 {
		t.Errorf("majority vote accuracy %.4f, want clearly above the mean annotator %.4f", v, mean)
	}
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		n      int
		lo, hi float64
		want   []float64
	}{
		{1, 0.7, 0.9, []float64{0.7}},
		{3, 0.6, 0.8, []float64{0.6, 0.7, 0.8}},
		{5, 0.9, 0.5, []float64{0.9, 0.8, 0.7, 0.6, 0.5}},
	} {
		got := Spread(tc.n, tc.lo, tc.hi)
		if len(got) != len(tc.want) {
			t.Fatalf("Spread(%d, %v, %v) = %v, want %v", tc.n, tc.lo, tc.hi, got, tc.want)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("Spread(%d, %v, %v) = %v, want %v", tc.n, tc.lo, tc.hi, got, tc.want)
				break
			}
		}
	}
}

func TestKindNames(t *testing.T) {
	for _, k := range []Kind{Symmetric, PairFlip, InstanceDependent, Annotators, Perm, Multi, Mixed} {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", k.String(), got, err, k)
		}
	}
	if _, err := ParseKind("uniform"); err == nil {
		t.Errorf("ParseKind(uniform) succeeded")
	}
}

func TestErrors(t *testing.T) {
	ok := synth(10, 3, 4)
	mod := func(f func(*Dataset)) Dataset {
		ds := Dataset{IDs: slices.Clone(ok.IDs), Truth: slices.Clone(ok.Truth), Features: slices.Clone(ok.Features), D: ok.D, C: ok.C}
		f(&ds)
		return ds
	}
	for _, tc := range []struct {
		name string
		ds   Dataset
		p    Params
		want string // substring of the error
	}{
		{"label too large", mod(func(d *Dataset) { d.Truth[3] = 4 }), Params{Kind: Symmetric, Rate: 0.1}, "row 3"},
		{"negative label", mod(func(d *Dataset) { d.Truth[0] = -1 }), Params{Kind: PairFlip, Rate: 0.1}, "label -1"},
		{"one class", mod(func(d *Dataset) { d.C = 1; clear(d.Truth) }), Params{Kind: Symmetric, Rate: 0.1}, "1 classes"},
		{"ids short", mod(func(d *Dataset) { d.IDs = d.IDs[:9] }), Params{Kind: Symmetric, Rate: 0.1}, "9 ids"},
		{"rate NaN", ok, Params{Kind: Symmetric, Rate: math.NaN()}, "rate NaN"},
		{"rate above 1", ok, Params{Kind: PairFlip, Rate: 1.5}, "rate 1.5"},
		{"idn without features", mod(func(d *Dataset) { d.Features = nil }), Params{Kind: InstanceDependent, Rate: 0.4}, "0 feature values"},
		{"idn NaN feature", mod(func(d *Dataset) { d.Features[7] = float32(math.NaN()) }), Params{Kind: InstanceDependent, Rate: 0.4}, "row 2"},
		{"idn sharpness", ok, Params{Kind: InstanceDependent, Rate: 0.4, Sharpness: -2}, "sharpness -2"},
		{"idn negative std", ok, Params{Kind: InstanceDependent, Rate: 0.4, RateStd: -1}, "rate std"},
		{"no annotators", ok, Params{Kind: Annotators}, "no annotator"},
		{"annotator accuracy", ok, Params{Kind: Annotators, Accuracies: []float64{0.5, 2}}, "annotator 1"},
		{"no kind", ok, Params{Rate: 0.1}, "unknown kind"},
	} {
		_, err := Generate(tc.ds, tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
