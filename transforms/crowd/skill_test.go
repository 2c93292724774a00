package crowd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// lightCrowd is n items of C classes, each labelled by 2 of A annotators
// drawn uniformly (about 2n/A labels each): a share spam of them spammers,
// the rest one-coin annotators of accuracy uniform in [lo, hi], errors
// uniform. Keys are the annotators' indices; kinds[a] is true for spammers.
func lightCrowd(n, C, A int, spam, lo, hi float64, seed uint64) (*Items, []int32, []bool, []float64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	isSpam := make([]bool, A)
	acc := make([]float64, A)
	for a := range isSpam {
		isSpam[a] = rng.Float64() < spam
		acc[a] = lo + (hi-lo)*rng.Float64()
	}
	it := &Items{Off: []int32{0}}
	truth := make([]int32, n)
	for i := range truth {
		c := rng.IntN(C)
		truth[i] = int32(c)
		a1 := rng.IntN(A)
		a2 := (a1 + 1 + rng.IntN(A-1)) % A
		for _, a := range []int{a1, a2} {
			l := c
			switch {
			case isSpam[a]:
				l = rng.IntN(C)
			case rng.Float64() >= acc[a]:
				l = (c + 1 + rng.IntN(C-1)) % C
			}
			it.Annotator = append(it.Annotator, int64(a))
			it.Label = append(it.Label, int32(l))
		}
		it.Off = append(it.Off, int32(len(it.Label)))
	}
	it.Sort()
	return it, truth, isSpam, acc
}

func pointAccuracy(post []float64, truth []int32, C int) float64 { return accuracy(post, truth, C) }

// TestSkillLayer is the model choice on the crowd that defeats
// the other two: 400 one-coin annotators of very different skill (a fifth
// spammers) with about 30 labels each over 20 classes. A per-annotator
// matrix (Dawid-Skene: skill strength and row strength near 0) has 20 x 20
// cells to learn from 30 labels; the pooled matrix (both strengths at their
// maximum) cannot tell a spammer from an expert. The skill layer learns one
// number per annotator: it must beat the pooled model by 3 points here, and
// its estimated skills must separate the spammers from the rest (their mean
// skill at least .3 below the others'). FitSkill must find that the
// annotators differ (a skill strength well below their 30 labels).
func TestSkillLayer(t *testing.T) {
	const n, C, A = 6000, 20, 400
	it, truth, isSpam, _ := lightCrowd(n, C, A, .2, .5, .95, 21)
	fit := func(set func(*Params)) (*Result, float64) {
		p := DefaultParams(C)
		set(&p)
		res, err := Fit(it, nil, p)
		if err != nil {
			t.Fatal(err)
		}
		return res, pointAccuracy(res.Posterior, truth, C)
	}
	res, got := fit(func(*Params) {})
	_, pooled := fit(func(p *Params) { p.SkillStrength, p.Strength = MaxStrength*1e6, MaxStrength })
	_, ds := fit(func(p *Params) { p.SkillStrength, p.Strength = MinStrength, MinStrength })
	t.Logf("accuracy: skill layer %.3f (skill strength %.3g, row strength %.3g), pooled %.3f, per-annotator %.3f", got, res.Model.SkillStrength, res.Model.Strength, pooled, ds)
	if got < pooled+0.03 || got < ds {
		t.Errorf("accuracy %.3f: want >= pooled %.3f + 0.03 and >= per-annotator %.3f", got, pooled, ds)
	}
	if tt := res.Model.SkillStrength; tt > 15 {
		t.Errorf("skill strength %.3g: the annotators differ widely, want well below their 30 labels", tt)
	}
	var sSpam, sRest float64
	var nSpam, nRest int
	for a := range A {
		an := res.Model.Annotator(int64(a))
		if an == nil {
			continue
		}
		if isSpam[a] {
			sSpam, nSpam = sSpam+an.Skill, nSpam+1
		} else {
			sRest, nRest = sRest+an.Skill, nRest+1
		}
	}
	if ms, mr := sSpam/float64(nSpam), sRest/float64(nRest); mr-ms < 0.3 {
		t.Errorf("mean skill: spammers %.3f, others %.3f; want them .3 apart", ms, mr)
	}
}

// TestFitSkill: annotators of one skill get a strong prior (their own
// accuracies are the pool's plus noise), annotators of very different skill
// a weak one; the pool's accuracy is the share of right labels.
func TestFitSkill(t *testing.T) {
	const C = 5
	build := func(acc func(a int) float64) *Model {
		s := NewStats(C)
		post := make([]float64, C)
		rng := rand.New(rand.NewPCG(3, 3))
		for a := range 200 {
			for range 50 {
				c := rng.IntN(C)
				clear(post)
				post[c] = 1
				l := c
				if rng.Float64() >= acc(a) {
					l = (c + 1 + rng.IntN(C-1)) % C
				}
				s.Add(post, []int64{int64(a)}, []int32{int32(l)})
			}
		}
		return Estimate(s, DefaultParams(C))
	}
	same := build(func(int) float64 { return .7 })
	varied := build(func(a int) float64 { return .2 + .75*float64(a%2) })
	t.Logf("skill strength: alike %.3g, varied %.3g; pool accuracy %.3f, %.3f", same.SkillStrength, varied.SkillStrength, same.Accuracy, varied.Accuracy)
	if same.SkillStrength < 200 || varied.SkillStrength > 5 {
		t.Errorf("skill strength: alike %.3g (want >= 200), varied %.3g (want <= 5)", same.SkillStrength, varied.SkillStrength)
	}
	if math.Abs(same.Accuracy-.7) > .02 || math.Abs(varied.Accuracy-.575) > .02 {
		t.Errorf("pool accuracy %.3f and %.3f, want .7 and .575 within .02", same.Accuracy, varied.Accuracy)
	}
	// An annotator of skill equal to the pool's has the pooled prior mean.
	mu := make([]float64, C)
	same.Mean(mu, -1, 2)
	for c := range mu {
		if mu[c] != same.Pooled[c*C+2] {
			t.Fatalf("unknown annotator's prior mean %v, want the pooled column", mu)
		}
	}
}

// TestTooFew: a long tail of 100,000 annotators with one label each, beside
// a few busy ones of whom two are spammers. None of the tail is judged (they
// are TooFew, neither spammer nor adversary, though their matrices are the
// prior's); the busy spammers still are flagged, and the busy experts not.
func TestTooFew(t *testing.T) {
	const n, C, tail = 50000, 5, 100000
	rng := rand.New(rand.NewPCG(9, 9))
	busy := []SimAnnotator{{Expert, .9}, {Expert, .8}, {Expert, .85}, {Spammer, 0}, {Spammer, 0}, {Adversary, .8}}
	it := &Items{Off: []int32{0}}
	next := int64(1000)
	for i := range n {
		c := rng.IntN(C)
		for k, sa := range busy {
			if (i+k)%2 != 0 {
				continue
			}
			l := c
			switch {
			case sa.Kind == Spammer:
				l = rng.IntN(C)
			case sa.Kind == Adversary && rng.Float64() < sa.Acc:
				l = (c + 1) % C
			case sa.Kind == Expert && rng.Float64() >= sa.Acc:
				l = (c + 1 + rng.IntN(C-1)) % C
			}
			it.Annotator = append(it.Annotator, int64(k))
			it.Label = append(it.Label, int32(l))
		}
		for range 2 { // two of the tail, each labelling once, .75 right
			l := c
			if rng.Float64() >= .75 {
				l = (c + 1 + rng.IntN(C-1)) % C
			}
			it.Annotator = append(it.Annotator, next)
			it.Label = append(it.Label, int32(l))
			next++
		}
		it.Off = append(it.Off, int32(len(it.Label)))
	}
	it.Sort()
	p := DefaultParams(C)
	p.Iterations = 3
	res, err := Fit(it, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	var tooFew, flaggedTail int
	for _, s := range res.Model.Summarise(DefaultParams(C)) {
		if s.Key >= 1000 {
			if s.TooFew {
				tooFew++
			}
			if s.Spammer || s.Adversary {
				flaggedTail++
			}
			continue
		}
		kind := busy[s.Key].Kind
		if s.TooFew || s.Spammer != (kind == Spammer) || s.Adversary != (kind == Adversary) {
			t.Errorf("busy annotator %d (%v, %d labels): too few %v, spammer %v, adversary %v", s.Key, kind, s.Given, s.TooFew, s.Spammer, s.Adversary)
		}
	}
	if tooFew != tail || flaggedTail != 0 {
		t.Errorf("tail of %d one-label annotators: %d not enough labels, %d flagged; want %d and 0", tail, tooFew, flaggedTail, tail)
	}
	// Judged as before (FlagLabels 0: everyone), the tail would be
	// flagged en masse: the test would catch a threshold that stopped
	// applying.
	var judged int
	everyone := DefaultParams(C)
	everyone.FlagLabels = 0
	for _, s := range res.Model.Summarise(everyone) {
		if s.Key >= 1000 && (s.Spammer || s.Adversary) {
			judged++
		}
	}
	t.Logf("one-label annotators flagged when everyone is judged: %d of %d", judged, tail)
	if judged < tail/2 {
		t.Errorf("judged without the threshold, %d of %d one-label annotators flagged: the test no longer shows what the threshold prevents", judged, tail)
	}
}
