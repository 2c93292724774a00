package mixture

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// pairNoiseSet is a generated pair-flip set whose truth is known exactly:
// n items of c classes (item i's class is i mod c), each label flipped to
// the next class with probability rate, and every item's k neighbours drawn
// from its own class (the neighbourhoods the method hopes for).
func pairNoiseSet(n, c, k int, rate float64, seed uint64) (truth []int32, in PooledInput) {
	return pairSet(n, c, k, rate, rand.New(rand.NewPCG(seed, 1)), func(rng *rand.Rand, i int) int32 {
		// another item of the same class
		m := rng.IntN(n/c-1) + 1
		return int32((i + m*c) % n)
	})
}

// pairSet draws the labels of pairNoiseSet and its variants (item i of
// class i mod c, flipped to the next class with probability rate) and then
// each item's k neighbours from neighbour, all from rng in that order.
func pairSet(n, c, k int, rate float64, rng *rand.Rand, neighbour func(rng *rand.Rand, i int) int32) (truth []int32, in PooledInput) {
	truth = make([]int32, n)
	labels := make([]int32, n)
	off := make([]int32, n+1)
	for i := range n {
		truth[i] = int32(i % c)
		labels[i] = truth[i]
		if rng.Float64() < rate {
			labels[i] = (truth[i] + 1) % int32(c)
		}
		off[i+1] = int32(i + 1)
	}
	idx := make([]int32, n*k)
	for i := range n {
		for j := range k {
			idx[i*k+j] = neighbour(rng, i)
		}
	}
	return truth, PooledInput{N: n, K: k, C: c, Labels: labels, LabelOff: off, Index: idx}
}

// TestFitPooledPairNoise: at 45% pair-flip noise a K = 10 vote of the
// neighbours' labels is barely better than the labels, while the pooled
// transition recovers the true one (.55 on the class, .45 on the next) and
// with it nearly every item's class; the fit is deterministic.
func TestFitPooledPairNoise(t *testing.T) {
	const n, c, k, rate = 3000, 5, 10, 0.45
	truth, in := pairNoiseSet(n, c, k, rate, 7)
	vote, noisy := 0, 0
	for i := range n {
		count := make([]int, c)
		count[in.Labels[i]]++
		for _, j := range in.Index[i*k : (i+1)*k] {
			count[in.Labels[j]]++
		}
		best := 0
		for x := range count {
			if count[x] > count[best] {
				best = x
			}
		}
		if int32(best) == truth[i] {
			vote++
		}
		if in.Labels[i] == truth[i] {
			noisy++
		}
	}
	m, post, err := FitPooled(in, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	right := 0
	for i := range n {
		q := post[i*c : (i+1)*c]
		if s := sum(q); math.Abs(s-1) > 1e-9 {
			t.Fatalf("item %d: posterior sums to %g", i, s)
		}
		if int32(argmax(q)) == truth[i] {
			right++
		}
	}
	acc, voteAcc := float64(right)/n, float64(vote)/n
	t.Logf("noisy %.4f, vote %.4f, pooled %.4f", float64(noisy)/n, voteAcc, acc)
	if acc < 0.98 || acc < voteAcc+0.15 {
		t.Errorf("pooled accuracy %.4f (vote %.4f), want >= .98 and 15 points above the vote", acc, voteAcc)
	}
	// The transition the evidence realises (every label the fit reads,
	// under the true class of the item it is evidence for): the fit must
	// find it, and it must be pair-flip at about the rate.
	emp := make([]float64, c*c)
	for i := range n {
		y := int(truth[i])
		emp[y*c+int(in.Labels[i])]++
		for _, j := range in.Index[i*k : (i+1)*k] {
			emp[y*c+int(in.Labels[j])]++
		}
	}
	for x := range c {
		row := emp[x*c : (x+1)*c]
		s := sum(row)
		for l := range row {
			row[l] /= s
			want := 0.0
			switch {
			case l == x:
				want = 1 - rate
			case l == (x+1)%c:
				want = rate
			}
			if math.Abs(row[l]-want) > 0.06 {
				t.Fatalf("generated evidence: T(%d, %d) = %.4f, want about %.2f", x, l, row[l], want)
			}
			if got := m.T[x*c+l]; math.Abs(got-row[l]) > 0.01 {
				t.Errorf("T(%d, %d) = %.4f, the evidence's %.4f", x, l, got, row[l])
			}
		}
	}
	_, again, _ := FitPooled(in, 20, 0)
	if !slices.Equal(post, again) {
		t.Error("two fits of the same input differ")
	}
	// EM does not lower the likelihood of the evidence.
	if first, _, _ := FitPooled(in, 1, 0); !(m.LogLik >= first.LogLik && m.LogLik < 0) {
		t.Errorf("log-likelihood after 20 steps %g, after 1 %g: want higher, and negative", m.LogLik, first.LogLik)
	}
}

func TestFitPooledErrors(t *testing.T) {
	_, in := pairNoiseSet(100, 4, 3, 0.2, 1)
	bad := in
	bad.Index = bad.Index[1:]
	if _, _, err := FitPooled(bad, 5, 0); err == nil {
		t.Error("short neighbour index: no error")
	}
	if _, _, err := FitPooled(in, 0, 0); err == nil {
		t.Error("0 iterations: no error")
	}
	p := DefaultParams(4)
	if p.PooledIters != DefaultPooledIters || p.PooledWeight != 0.3 || !p.PooledSplit || p.PooledGate != 0.5 {
		t.Errorf("default pooled start %d iterations, weight %g, split %v, gate %g; want %d, .3, split, .5 (docs/QUALITY.md)",
			p.PooledIters, p.PooledWeight, p.PooledSplit, p.PooledGate, DefaultPooledIters)
	}
	p.PooledIters, p.PooledWeight = 0, 0
	if err := p.Validate(); err != nil {
		t.Errorf("pooled start off (iterations 0), weight 0: %v", err)
	}
	p.PooledIters = 3
	if err := p.Validate(); err == nil {
		t.Error("pooled start with weight 0: no error")
	}
	p.PooledWeight = 0.5
	if err := p.Validate(); err != nil {
		t.Errorf("pooled start, weight .5: %v", err)
	}
}

// TestFitPooledTol: the tolerance stops the fit once a step moves no
// transition entry by more than it, with a model within about that of the
// full fit's; tol 0 runs every step, the same bits as before the tolerance
// existed (the fit of iters steps is the fit of the first iters of more).
func TestFitPooledTol(t *testing.T) {
	for _, split := range []bool{false, true} {
		_, in := pairNoiseSet(3000, 5, 8, 0.4, 3)
		in.SplitOwn = split
		full, _, err := FitPooled(in, 60, 0)
		if err != nil {
			t.Fatal(err)
		}
		if full.Iters != 60 {
			t.Errorf("split %v, tol 0: %d steps, want all 60", split, full.Iters)
		}
		early, _, err := FitPooled(in, 60, 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		if early.Iters < 2 || early.Iters >= 60 {
			t.Fatalf("split %v, tol 1e-3: %d steps, want it to stop between 2 and 59", split, early.Iters)
		}
		// The stopped fit is the fixed-step fit of as many steps, bit for bit.
		same, _, _ := FitPooled(in, early.Iters, 0)
		if !slices.Equal(same.T, early.T) || !slices.Equal(same.TOwn, early.TOwn) || same.LogLik != early.LogLik {
			t.Errorf("split %v: tol-stopped fit after %d steps differs from a %d-step fit", split, early.Iters, early.Iters)
		}
		// One more step would have moved no entry by more than the tolerance
		// (that is why it stopped), and it lands near the full fit.
		next, _, _ := FitPooled(in, early.Iters-1, 0)
		moved := max(maxMove(next.T, early.T), maxMove(next.TOwn, early.TOwn))
		if moved > 1e-3 {
			t.Errorf("split %v: stopped after a step that moved an entry by %g > 1e-3", split, moved)
		}
		if d := max(maxMove(full.T, early.T), maxMove(full.TOwn, early.TOwn)); d > 2e-2 {
			t.Errorf("split %v: stopped fit %g from the full fit's transition, want within 2e-2", split, d)
		}
	}
	_, in := pairNoiseSet(100, 4, 3, 0.2, 1)
	for _, tol := range []float64{-1e-3, 1, math.NaN()} {
		if _, _, err := FitPooled(in, 5, tol); err == nil {
			t.Errorf("tolerance %g: no error", tol)
		}
	}
	p := DefaultParams(4)
	if p.PooledTol != DefaultPooledTol {
		t.Errorf("default pooled tolerance %g, want %g", p.PooledTol, DefaultPooledTol)
	}
	for _, tol := range []float64{-0.1, 1, math.NaN()} {
		p.PooledTol = tol
		if err := p.Validate(); err == nil {
			t.Errorf("pooled tolerance %g: no error", tol)
		}
	}
}

// TestInitPosterior keeps the c0 most probable classes, renormalised, with
// the label-smoothed identity rows of a given label.
func TestInitPosterior(t *testing.T) {
	var s State
	s.InitPosterior([]float64{0.1, 0.6, 0, 0.3}, []int32{2}, 1, 2, 0.1)
	if !slices.Equal(s.Class, []int32{1, 3}) || math.Abs(s.Pi[0]-2.0/3) > 1e-12 || math.Abs(s.Pi[1]-1.0/3) > 1e-12 {
		t.Fatalf("classes %v pi %v, want [1 3] [2/3 1/3]", s.Class, s.Pi)
	}
	for k, r := range s.Rows {
		if !slices.Equal(r.Cat, []int32{s.Class[k]}) || r.P[0] != 0.9 || r.Rem != 0.1 {
			t.Errorf("row %d: %+v, want its class at .9, remainder .1", k, r)
		}
	}
	if err := s.Check(4); err != nil {
		t.Error(err)
	}
	// Half the given label's: class 2 .5, class 1 .3 kept.
	s.InitPosterior([]float64{0.1, 0.6, 0, 0.3}, []int32{2}, 0.5, 2, 0.1)
	if !slices.Equal(s.Class, []int32{2, 1}) || math.Abs(s.Pi[0]-0.5/0.8) > 1e-12 {
		t.Errorf("blend: classes %v pi %v, want [2 1] [.625 .375]", s.Class, s.Pi)
	}
}

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

func argmax(x []float64) int {
	b := 0
	for i := range x {
		if x[i] > x[b] {
			b = i
		}
	}
	return b
}

// TestOwnPosterior: under a pair-flip transition an item's own label c+1
// leaves two classes, c+1 and c (the one it flips from); under a symmetric
// one only the label (the other classes are below uniform).
func TestOwnPosterior(t *testing.T) {
	const c = 4
	pair := &Pooled{C: c, T: make([]float64, c*c), Prior: []float64{0.25, 0.25, 0.25, 0.25}}
	sym := &Pooled{C: c, T: make([]float64, c*c), Prior: pair.Prior}
	for x := range c {
		for l := range c {
			pair.T[x*c+l] = 0.01
			sym.T[x*c+l] = 0.4 / 3
		}
		pair.T[x*c+x], pair.T[x*c+(x+1)%c] = 0.55, 0.43
		sym.T[x*c+x] = 0.6
	}
	q := make([]float64, c)
	pair.OwnPosterior(q, []int32{2})
	if q[0] != 0 || q[3] != 0 || math.Abs(q[2]-0.55/0.98) > 1e-12 || math.Abs(q[1]-0.43/0.98) > 1e-12 {
		t.Errorf("pair: %v, want class 2 .55/.98 and class 1 .43/.98", q)
	}
	sym.OwnPosterior(q, []int32{2})
	if !slices.Equal(q, []float64{0, 0, 1, 0}) {
		t.Errorf("symmetric: %v, want the label alone", q)
	}
}

// confusedPairSet is pairNoiseSet whose neighbourhoods are imperfect: each
// neighbour is of the item's own class with probability 1 - confuse, else of
// the class two above it (a nearby class, as satellite's grey soils are to
// each other). Labels flip to the next class with probability rate. n must
// be a multiple of c, so that the index arithmetic keeps the class.
func confusedPairSet(n, c, k int, rate, confuse float64, seed uint64) (truth []int32, in PooledInput) {
	return pairSet(n, c, k, rate, rand.New(rand.NewPCG(seed, 2)), func(rng *rand.Rand, i int) int32 {
		shift := 0
		if rng.Float64() < confuse {
			shift = 2
		}
		// an item of class (i + shift) mod c, not i itself
		m := rng.IntN(n/c-1) + 1
		return int32((i + shift + m*c) % n)
	})
}

// TestFitPooledSplit: with neighbourhoods that hold 20% of a nearby class,
// the one-matrix fit's T takes that confusion in (T(c, c+2) well above 0),
// and so does the own-label posterior it gives; the split fit puts it in
// the neighbours' T only, and its TOwn is the label noise alone (.7 on
// the class, .3 on the next, about 0 elsewhere), so an item labelled c+2
// does not start with class c.
func TestFitPooledSplit(t *testing.T) {
	const n, c, k, rate, confuse = 3600, 6, 10, 0.3, 0.2 // n a multiple of c (see confusedPairSet)
	truth, in := confusedPairSet(n, c, k, rate, confuse, 11)
	one, _, err := FitPooled(in, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	if one.TOwn != nil {
		t.Fatal("one-matrix fit has TOwn")
	}
	in.SplitOwn = true
	split, post, err := FitPooled(in, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(split.TOwn) != c*c {
		t.Fatalf("split fit: TOwn has %d entries, want %d", len(split.TOwn), c*c)
	}
	var confOne, confOwn, confNb float64
	for x := range c {
		confOne += one.T[x*c+(x+2)%c] / c
		confNb += split.T[x*c+(x+2)%c] / c
		confOwn += split.TOwn[x*c+(x+2)%c] / c
		if d := split.TOwn[x*c+x]; math.Abs(d-(1-rate)) > 0.05 {
			t.Errorf("TOwn(%d, %d) = %.4f, want about %.2f", x, x, d, 1-rate)
		}
		if d := split.TOwn[x*c+(x+1)%c]; math.Abs(d-rate) > 0.05 {
			t.Errorf("TOwn(%d, %d) = %.4f, want about %.2f", x, (x+1)%c, d, rate)
		}
	}
	t.Logf("mean T(c, c+2): one matrix %.4f, split neighbours %.4f, split own %.4f", confOne, confNb, confOwn)
	if confOne < 0.08 || confNb < 0.1 {
		t.Errorf("the neighbourhoods' confusion is not in T: one matrix %.4f, split neighbours %.4f", confOne, confNb)
	}
	if confOwn > 0.03 {
		t.Errorf("split TOwn(c, c+2) = %.4f, want about 0 (no label flips there)", confOwn)
	}
	right := 0
	for i := range n {
		if int32(argmax(post[i*c:(i+1)*c])) == truth[i] {
			right++
		}
	}
	if acc := float64(right) / n; acc < 0.95 {
		t.Errorf("split posterior accuracy %.4f, want >= .95", acc)
	}
	// The own-label start of label 2: classes 2 and 1 (it flips from 1),
	// not 0 (which only neighbours confuse with 2).
	q := make([]float64, c)
	split.OwnPosterior(q, []int32{2})
	if q[0] != 0 || q[1] == 0 || q[2] == 0 {
		t.Errorf("split own posterior of label 2: %v, want classes 1 and 2 only", q)
	}
	if s := split.Structure(); s < 0.85 {
		t.Errorf("split structure %.4f, want >= .85 (pair-flip)", s)
	}
}

// TestStructure: symmetric noise spreads each row's off-diagonal mass
// evenly (structure 0), pair-flip noise puts it on one class (about 1),
// whatever C; with 2 classes the two cannot be told apart (0).
func TestStructure(t *testing.T) {
	const c = 5
	sym := &Pooled{C: c, T: make([]float64, c*c)}
	pair := &Pooled{C: c, T: make([]float64, c*c)}
	for x := range c {
		for l := range c {
			sym.T[x*c+l] = 0.1
			pair.T[x*c+l] = 0.01
		}
		sym.T[x*c+x] = 0.6
		pair.T[x*c+x], pair.T[x*c+(x+1)%c] = 0.6, 0.37
	}
	// The pair rows' share is .37/.40; rescaled from the symmetric
	// baseline 1/(C-1) = .25.
	wantPair := (0.37/0.4 - 0.25) / 0.75
	if s := sym.Structure(); math.Abs(s) > 1e-12 {
		t.Errorf("symmetric: %g, want 0", s)
	}
	if s := pair.Structure(); math.Abs(s-wantPair) > 1e-12 {
		t.Errorf("pair: %g, want %g", s, wantPair)
	}
	// TOwn, where set, is what it reads.
	sym.TOwn = pair.T
	if s := sym.Structure(); math.Abs(s-wantPair) > 1e-12 {
		t.Errorf("TOwn: %g, want %g", s, wantPair)
	}
	// Symmetric noise at C = 3 shares its flips .5/.5 (the unscaled share
	// sat at the .5 gate there): 0. Two classes: 0 whatever the matrix.
	sym3 := &Pooled{C: 3, T: []float64{.8, .1, .1, .1, .8, .1, .1, .1, .8}}
	if s := sym3.Structure(); math.Abs(s) > 1e-12 {
		t.Errorf("symmetric, C = 3: %g, want 0", s)
	}
	two := &Pooled{C: 2, T: []float64{.6, .4, .4, .6}}
	if s := two.Structure(); s != 0 {
		t.Errorf("C = 2: %g, want 0", s)
	}
	p := DefaultParams(c)
	for _, g := range []float64{-0.1, 1.5, math.NaN()} {
		p.PooledGate = g
		if err := p.Validate(); err == nil {
			t.Errorf("pooled gate %g: no error", g)
		}
	}
}

// TestAlign: a fit that settled with two classes exchanged (its TOwn rows
// 0 and 1 put most mass on each other's label) is permuted back, T, TOwn,
// the prior and the posteriors together; a diagonal-dominant fit is left
// as it is.
func TestAlign(t *testing.T) {
	const c = 3
	m := &Pooled{C: c,
		TOwn:  []float64{0.2, 0.7, 0.1, 0.6, 0.3, 0.1, 0.1, 0.1, 0.8},
		T:     []float64{0.3, 0.5, 0.2, 0.5, 0.4, 0.1, 0.2, 0.2, 0.6},
		Prior: []float64{0.5, 0.3, 0.2},
	}
	post := []float64{0.9, 0.1, 0, 0.2, 0.3, 0.5}
	m.align(post, 2)
	want := func(name string, got, w []float64) {
		t.Helper()
		if !slices.Equal(got, w) {
			t.Errorf("%s %v, want %v", name, got, w)
		}
	}
	want("TOwn", m.TOwn, []float64{0.6, 0.3, 0.1, 0.2, 0.7, 0.1, 0.1, 0.1, 0.8})
	want("T", m.T, []float64{0.5, 0.4, 0.1, 0.3, 0.5, 0.2, 0.2, 0.2, 0.6})
	want("prior", m.Prior, []float64{0.3, 0.5, 0.2})
	want("posteriors", post, []float64{0.1, 0.9, 0, 0.3, 0.2, 0.5})
	// Aligned already: nothing moves.
	before := append([]float64(nil), post...)
	m.align(post, 2)
	want("aligned posteriors", post, before)
	want("aligned TOwn", m.TOwn, []float64{0.6, 0.3, 0.1, 0.2, 0.7, 0.1, 0.1, 0.1, 0.8})
}

// TestPooledScorer: the scorer reads an item's evidence as the fit does,
// so on a fitted item (no permutation to undo: the fit's own last E step)
// it gives the fit's posterior bit for bit, split or not; and a fit whose
// neighbours' labels come from a separate table (NLabels, the sampled fit)
// equals the fit that reads them from the items.
func TestPooledScorer(t *testing.T) {
	const n, c, k = 600, 4, 6
	_, in := pairNoiseSet(n, c, k, 0.3, 7)
	for _, split := range []bool{false, true} {
		in.SplitOwn = split
		m, post, err := FitPooled(in, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		s := m.Scorer()
		q := make([]float64, c)
		differ := 0
		for i := range n {
			s.Posterior(q, in.Labels[in.LabelOff[i]:in.LabelOff[i+1]], k, func(j int) ([]int32, bool) {
				x := in.Index[i*k+j]
				if x < 0 {
					return nil, false
				}
				return in.Labels[in.LabelOff[x]:in.LabelOff[x+1]], true
			})
			if !slices.Equal(q, post[i*c:(i+1)*c]) {
				differ++
			}
		}
		if differ > 0 {
			t.Errorf("split %v: %d of %d items' scored posteriors differ from the fit's", split, differ, n)
		}
		sep := in
		sep.NLabels, sep.NLabelOff = append([]int32(nil), in.Labels...), append([]int32(nil), in.LabelOff...)
		m2, _, err := FitPooled(sep, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.T, m2.T) || !slices.Equal(m.TOwn, m2.TOwn) || m.LogLik != m2.LogLik {
			t.Errorf("split %v: the fit through NLabels differs from the fit through the items' labels", split)
		}
		sep.Index = append([]int32(nil), in.Index...)
		sep.Index[0] = int32(n) // past NLabelOff's rows
		if _, _, err := FitPooled(sep, 10, 0); err == nil {
			t.Errorf("split %v: a neighbour past the label table: no error", split)
		}
	}
}

// TestFitPooledCores: the fit's E steps run on all cores, and its result
// (T, TOwn, the prior, the log-likelihood and every posterior) is the same
// bits on one core as on four, as relabel run's byte-identical reruns on any
// worker count need.
func TestFitPooledCores(t *testing.T) {
	_, in := pairNoiseSet(3000, 7, 10, 0.45, 3)
	in.SplitOwn = true
	fit := func(procs int) (*Pooled, []float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		m, post, err := FitPooled(in, 30, 0)
		if err != nil {
			t.Fatal(err)
		}
		return m, post
	}
	m1, p1 := fit(1)
	m4, p4 := fit(4)
	same := func(what string, a, b []float64) {
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Fatalf("%s[%d]: %v on one core, %v on four", what, i, a[i], b[i])
			}
		}
	}
	same("T", m1.T, m4.T)
	same("TOwn", m1.TOwn, m4.TOwn)
	same("Prior", m1.Prior, m4.Prior)
	same("post", p1, p4)
	same("LogLik", []float64{m1.LogLik}, []float64{m4.LogLik})
}

// BenchmarkFitPooled fits the pooled start at fashion_mnist_pca50's size
// (70,000 items, C = 10, K = 10, 45% pair-flip noise, the split fit, the
// default 30 EM steps): the one single-stage step relabel run takes before
// round 0 (docs/PERFORMANCE.md).
func BenchmarkFitPooled(b *testing.B) {
	_, in := pairNoiseSet(70000, 10, 10, 0.45, 1)
	in.SplitOwn = true
	b.ResetTimer()
	for range b.N {
		if _, _, err := FitPooled(in, DefaultPooledIters, DefaultPooledTol); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*in.N)/b.Elapsed().Seconds(), "items/s")
}
