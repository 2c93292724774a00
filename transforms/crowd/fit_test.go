package crowd

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// testCrowd is 20 annotators of the four kinds.
func testCrowd() []SimAnnotator {
	var ann []SimAnnotator
	for _, acc := range []float64{.9, .85, .8, .75, .7, .9, .8, .7} {
		ann = append(ann, SimAnnotator{Expert, acc})
	}
	for _, acc := range []float64{.75, .7, .65, .6, .55, .7} {
		ann = append(ann, SimAnnotator{Confuser, acc})
	}
	for range 3 {
		ann = append(ann, SimAnnotator{Spammer, 0})
	}
	for range 3 {
		ann = append(ann, SimAnnotator{Adversary, .7})
	}
	return ann
}

// oracle is the accuracy of the posterior under the true matrices and the
// uniform class prior: the best any estimate of the matrices can do.
func oracle(cr *Crowd, C int) float64 {
	correct := 0
	post := make([]float64, C)
	for i := 0; i < cr.Items.Len(); i++ {
		for c := range post {
			post[c] = 1
		}
		ann, lab := cr.Items.Item(i)
		for k, a := range ann {
			for c := range post {
				post[c] *= cr.Matrix[a][c*C+int(lab[k])]
			}
		}
		if argmax(post) == int(cr.Truth[i]) {
			correct++
		}
	}
	return float64(correct) / float64(len(cr.Truth))
}

func argmax(x []float64) int {
	best := 0
	for c, v := range x {
		if v > x[best] {
			best = c
		}
	}
	return best
}

func accuracy(post []float64, truth []int32, C int) float64 {
	correct := 0
	for i, t := range truth {
		if argmax(post[i*C:(i+1)*C]) == int(t) {
			correct++
		}
	}
	return float64(correct) / float64(len(truth))
}

// TestRecover fits a simulated crowd of 20000 items, 5 labels each from 20
// annotators with known matrices (so about 1000 labels per annotator and
// true class). Tolerances: every cell of every estimated matrix within 0.06
// of the truth (a cell's standard error is at most 0.016, so 4 standard
// errors, with room for the prior's pull toward the pooled matrix); accuracy
// within 0.005 of the oracle that knows the matrices; spammers and
// adversaries, and only they, flagged.
func TestRecover(t *testing.T) {
	const n, C = 20000, 5
	ann := testCrowd()
	cr := Simulate(n, C, 5, ann, 1)
	res, err := Fit(&cr.Items, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := accuracy(res.Posterior, cr.Truth, C), oracle(cr, C); got < want-0.005 {
		t.Errorf("accuracy %.4f, oracle %.4f", got, want)
	}
	sum := res.Model.Summarise(DefaultParams(C))
	if len(sum) != len(ann) {
		t.Fatalf("%d annotators summarised, want %d", len(sum), len(ann))
	}
	for a, s := range sum {
		if s.Key != int64(a) {
			t.Fatalf("summary %d is of annotator %d", a, s.Key)
		}
		est := res.Model.Matrix(int64(a))
		for k := range est {
			if d := math.Abs(est[k] - cr.Matrix[a][k]); d > 0.06 {
				t.Errorf("annotator %d (%v %.2f): cell (%d,%d) = %.3f, true %.3f", a, ann[a].Kind, ann[a].Acc, k/C, k%C, est[k], cr.Matrix[a][k])
			}
		}
		if want := ann[a].Kind == Spammer; s.Spammer != want {
			t.Errorf("annotator %d (%v): spammer = %v (lift %.3f)", a, ann[a].Kind, s.Spammer, s.Lift)
		}
		if want := ann[a].Kind == Adversary; s.Adversary != want {
			t.Errorf("annotator %d (%v): adversary = %v (lift %.3f, misdirected %.3f)", a, ann[a].Kind, s.Adversary, s.Lift, s.Misdirected)
		}
		var trueAcc float64
		for c := 0; c < C; c++ {
			trueAcc += cr.Matrix[a][c*C+c] / C
			if d := math.Abs(s.Diagonal[c] - cr.Matrix[a][c*C+c]); d > 0.06 {
				t.Errorf("annotator %d: diagonal %d = %.3f, true %.3f", a, c, s.Diagonal[c], cr.Matrix[a][c*C+c])
			}
		}
		if d := math.Abs(s.Accuracy - trueAcc); d > 0.03 {
			t.Errorf("annotator %d: accuracy %.3f, true %.3f", a, s.Accuracy, trueAcc)
		}
	}
}

// TestShrinkage: an annotator with a handful of labels gets (nearly) the
// pooled matrix, one with many keeps its own.
func TestShrinkage(t *testing.T) {
	const C = 4
	ann := []SimAnnotator{{Expert, .9}, {Expert, .9}, {Expert, .9}, {Expert, .9}, {Adversary, .9}}
	cr := Simulate(4000, C, 3, ann, 2)
	// Annotator 99 labels three items, always class 0.
	it := Items{Off: []int32{0}}
	for i := 0; i < cr.Items.Len(); i++ {
		a, l := cr.Items.Item(i)
		it.Annotator = append(it.Annotator, a...)
		it.Label = append(it.Label, l...)
		if i < 3 {
			it.Annotator = append(it.Annotator, 99)
			it.Label = append(it.Label, 0)
		}
		it.Off = append(it.Off, int32(len(it.Label)))
	}
	it.Sort()
	res, err := Fit(&it, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model
	// Its matrix is within 3/(3+s) of its prior mean, whose skill is within
	// 3/(3+t) of the pool's.
	few := m.Matrix(99)
	mu := make([]float64, C)
	var gap float64
	for l := 0; l < C; l++ {
		m.Mean(mu, 99, int32(l))
		for c := 0; c < C; c++ {
			gap = max(gap, math.Abs(few[c*C+l]-mu[c]))
		}
	}
	if s := m.Strength; gap > 3/(3+s)+1e-9 {
		t.Errorf("annotator of 3 labels: max distance to its prior mean %.3f, want <= 3/(3+%.2f)", gap, s)
	}
	if d, tt := math.Abs(m.Annotator(99).Skill-m.Accuracy), m.SkillStrength; d > 3/(3+tt)+1e-9 {
		t.Errorf("annotator of 3 labels: skill %.3f, pool's %.3f: %.3f apart, want <= 3/(3+%.2f)", m.Annotator(99).Skill, m.Accuracy, d, tt)
	}
	adv := m.Matrix(4)
	if adv[0*C+1] < 0.8 {
		t.Errorf("adversary of %d labels: pi(0,1) = %.3f, want its own 0.9, not the pooled", m.Annotator(4).Given, adv[1])
	}
	sum := m.Summarise(DefaultParams(C))
	if !sum[4].Adversary || sum[len(sum)-1].Spammer || sum[len(sum)-1].Adversary {
		t.Errorf("flags: adversary %+v, few-label %+v", sum[4], sum[len(sum)-1])
	}
}

// TestOrderFree: the statistics are integers, so bundling and merge order
// do not matter, and an item's posterior depends on its annotations only:
// fitting the items in another order gives bit-identical posteriors.
func TestOrderFree(t *testing.T) {
	const C = 4
	cr := Simulate(3000, C, 4, testCrowd(), 3)
	res, err := Fit(&cr.Items, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	n := cr.Items.Len()
	perm := rand.New(rand.NewPCG(7, 7)).Perm(n)
	var it Items
	it.Off = []int32{0}
	for _, i := range perm {
		a, l := cr.Items.Item(i)
		// Annotations within an item in reverse: Sort restores the order.
		a, l = slices.Clone(a), slices.Clone(l)
		slices.Reverse(a)
		slices.Reverse(l)
		it.Annotator = append(it.Annotator, a...)
		it.Label = append(it.Label, l...)
		it.Off = append(it.Off, int32(len(it.Label)))
	}
	it.Sort()
	res2, err := Fit(&it, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	for k, i := range perm {
		if !slices.Equal(res.Posterior[i*C:(i+1)*C], res2.Posterior[k*C:(k+1)*C]) {
			t.Fatalf("item %d: posterior %v, permuted %v", i, res.Posterior[i*C:(i+1)*C], res2.Posterior[k*C:(k+1)*C])
		}
	}
	// Statistics merged in shuffled bundles give the same model.
	whole := stats(&cr.Items, res.Posterior, C)
	parts := make([]*Stats, 7)
	for b := range parts {
		parts[b] = NewStats(C)
	}
	for k, i := range perm {
		a, l := cr.Items.Item(i)
		parts[k%7].Add(res.Posterior[i*C:(i+1)*C], a, l)
	}
	merged := NewStats(C)
	for _, b := range []int{3, 6, 0, 5, 1, 4, 2} {
		merged.Merge(parts[b])
	}
	m1, m2 := Estimate(whole, DefaultParams(C)), Estimate(merged, DefaultParams(C))
	if m1.Strength != m2.Strength || !slices.Equal(m1.Prior, m2.Prior) || !slices.Equal(m1.Pooled, m2.Pooled) {
		t.Fatalf("merged statistics give another model")
	}
	for a := range m1.Annotators {
		if !slices.Equal(m1.Matrix(int64(a)), m2.Matrix(int64(a))) {
			t.Fatalf("annotator %d: merged statistics give another matrix", a)
		}
	}
}

// TestNeighbourPrior: items whose neighbours share their class are labelled
// better with the neighbour prior than from their annotations alone.
func TestNeighbourPrior(t *testing.T) {
	const n, C, K = 6000, 6, 8
	ann := []SimAnnotator{{Expert, .7}, {Expert, .6}, {Confuser, .6}, {Spammer, 0}, {Adversary, .7}, {Expert, .65}}
	cr := Simulate(n, C, 2, ann, 4)
	rng := rand.New(rand.NewPCG(5, 5))
	byClass := make([][]int32, C)
	for i, c := range cr.Truth {
		byClass[c] = append(byClass[c], int32(i))
	}
	nb := &Neighbours{K: K, Index: make([]int32, n*K), Weight: make([]float64, n*K)}
	for i, c := range cr.Truth {
		for k := 0; k < K; k++ {
			j := byClass[c][rng.IntN(len(byClass[c]))]
			if rng.Float64() < 0.15 { // a neighbour of another class
				j = int32(rng.IntN(n))
			}
			nb.Index[i*K+k], nb.Weight[i*K+k] = j, 1.0/K
		}
		nb.Index[i*K+K-1] = -1 // a missing neighbour is skipped
	}
	alone, err := Fit(&cr.Items, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	with, err := Fit(&cr.Items, nb, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	a, w := accuracy(alone.Posterior, cr.Truth, C), accuracy(with.Posterior, cr.Truth, C)
	if w < a+0.1 || w < 0.9 {
		t.Errorf("accuracy with neighbours %.4f, alone %.4f: want >= 0.9 and 0.1 better", w, a)
	}
	sum := with.Model.Summarise(DefaultParams(C))
	if !sum[3].Spammer || !sum[4].Adversary {
		t.Errorf("spammer %+v, adversary %+v not flagged", sum[3], sum[4])
	}
}

func TestPosteriorUnknownAnnotator(t *testing.T) {
	const C = 3
	cr := Simulate(500, C, 2, []SimAnnotator{{Expert, .8}, {Expert, .8}, {Expert, .8}}, 6)
	res, err := Fit(&cr.Items, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model
	col := make([]float64, C)
	m.Column(col, 12345, 1)
	for c := range col {
		if col[c] != m.Pooled[c*C+1] {
			t.Fatalf("unknown annotator's column %v, want the pooled %v", col, m.Pooled[1])
		}
	}
	post := make([]float64, C)
	var w Scratch
	m.Posterior(post, nil, []int64{12345}, []int32{2}, &w)
	if argmax(post) != 2 {
		t.Errorf("posterior %v of a label 2 from an unknown annotator", post)
	}
}

func TestParamsValidate(t *testing.T) {
	with := func(f func(*Params)) Params {
		p := DefaultParams(3)
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name string
		p    Params
		ok   bool
	}{
		{"defaults", DefaultParams(2), true},
		{"zeros where zero means zero", with(func(p *Params) {
			p.NeighbourWeight, p.ClassBalance, p.FlagLabels, p.Iterations, p.SpammerLift = 0, 0, 0, 0, 0
		}), true},
		{"zero value", Params{C: 3}, false},
		{"C=1", DefaultParams(1), false},
		{"negative strength", with(func(p *Params) { p.Strength = -1 }), false},
		{"NaN strength", with(func(p *Params) { p.Strength = math.NaN() }), false},
		{"lambda 1", with(func(p *Params) { p.NeighbourWeight = 1 }), false},
		{"negative lambda", with(func(p *Params) { p.NeighbourWeight = -1 }), false},
		{"class balance 2", with(func(p *Params) { p.ClassBalance = 2 }), false},
		{"negative class balance", with(func(p *Params) { p.ClassBalance = -1 }), false},
		{"spammer lift 2", with(func(p *Params) { p.SpammerLift = 2 }), false},
		{"iterations -1", with(func(p *Params) { p.Iterations = -1 }), false},
		{"flag labels -1", with(func(p *Params) { p.FlagLabels = -1 }), false},
		{"smooth 0", with(func(p *Params) { p.Smooth = 0 }), false},
	} {
		err := tc.p.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok = %v", tc.name, err, tc.ok)
		}
	}
}

func TestItemsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		it   Items
	}{
		{"no offsets", Items{}},
		{"short", Items{Off: []int32{0, 2}, Annotator: []int64{1}, Label: []int32{0}}},
		{"label out of range", Items{Off: []int32{0, 1}, Annotator: []int64{1}, Label: []int32{3}}},
		{"negative label", Items{Off: []int32{0, 1}, Annotator: []int64{1}, Label: []int32{-1}}},
	} {
		if _, err := Fit(&tc.it, nil, DefaultParams(3)); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestEncode(t *testing.T) {
	const C = 4
	cr := Simulate(500, C, 3, testCrowd(), 8)
	res, err := Fit(&cr.Items, nil, DefaultParams(C))
	if err != nil {
		t.Fatal(err)
	}
	st := stats(&cr.Items, res.Posterior, C)
	b, _ := st.MarshalBinary()
	var st2 Stats
	if err := st2.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	b2, _ := st2.MarshalBinary()
	if !slices.Equal(b, b2) || st2.Items != st.Items || st2.NumCells() != st.NumCells() {
		t.Fatalf("statistics do not round-trip")
	}
	mb, _ := res.Model.MarshalBinary()
	var m2 Model
	if err := m2.UnmarshalBinary(mb); err != nil {
		t.Fatal(err)
	}
	if m2.Accuracy != res.Model.Accuracy || m2.SkillStrength != res.Model.SkillStrength {
		t.Fatalf("pool's accuracy %g and skill strength %g decoded as %g and %g", res.Model.Accuracy, res.Model.SkillStrength, m2.Accuracy, m2.SkillStrength)
	}
	for a := range int64(len(testCrowd())) {
		if !slices.Equal(res.Model.Matrix(a), m2.Matrix(a)) {
			t.Fatalf("annotator %d: matrix does not round-trip", a)
		}
	}
	if err := m2.UnmarshalBinary(mb[:len(mb)/2]); err == nil {
		t.Errorf("truncated model decoded")
	}
}

// TestDefaultParams: DefaultParams is complete (it validates) and holds
// the documented constants; a zero the caller sets stays zero.
func TestDefaultParams(t *testing.T) {
	q := DefaultParams(3)
	if err := q.Validate(); err != nil {
		t.Error(err)
	}
	want := Params{C: 3, Iterations: DefaultIterations, Smooth: DefaultSmooth, ClassPrior: DefaultClassPrior, NeighbourWeight: DefaultNeighbourWeight,
		SpammerLift: DefaultSpammerLift, FlagLabels: DefaultFlagLabels, ClassBalance: DefaultClassBalance}
	if q != want || q.Iterations != 30 || q.ClassBalance != 0.1 || q.NeighbourWeight != 0.8 || q.FlagLabels != 10 {
		t.Errorf("defaults %+v, want %+v", q, want)
	}
	// The estimated class prior alone, with balance 0.
	s := NewStats(3)
	s.Add([]float64{1, 0, 0}, []int64{1}, []int32{0})
	s.Add([]float64{1, 0, 0}, []int64{1}, []int32{0})
	m := Estimate(s, Params{C: 3, ClassBalance: 0, ClassPrior: 1})
	if want := 3.0 / 5; math.Abs(m.Prior[0]-want) > 1e-12 {
		t.Errorf("prior %v, want %g for class 0", m.Prior, want)
	}
}
