package crowdset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Gen describes a generated crowd with the properties that real crowds
// have and the shared sets lack: many classes, long-tailed annotator
// activity, few labels per item, skewed class priors, annotators of every
// kind. transforms/crowd's Simulate (uniform activity, a fixed number of
// labels per item, uniform classes) is too regular for that; this one is
// written for the quality harness only.
type Gen struct {
	Name string
	// N items of C classes; class c has prior weight 1/(c+1)^ClassSkew
	// (0: uniform).
	N, C      int
	ClassSkew float64
	// Annotators, with activity weight 1/rank^Activity (Zipf; 0: uniform).
	Annotators int
	Activity   float64
	// Each item gets between MinLabels and MaxLabels distinct annotators,
	// uniformly.
	MinLabels, MaxLabels int
	// Shares of the annotator kinds (they need not sum to 1; the rest are
	// one-coin): Spam (uniform labels), Adversary (c -> c+1 with
	// probability Acc), Confuser (errors to two fixed classes of its own per
	// true class) and Shared (errors to c-1 or c+1, the same for every
	// annotator: an ordinal scale). One-coin annotators' errors are uniform.
	Spam, Adversary, Confuser, Shared float64
	// Accuracy of the informative annotators, uniform in [AccLo, AccHi].
	AccLo, AccHi float64
	Seed         uint64
}

// Gens are the generated sets of the quality harness: each takes a few
// seconds, and each stresses one way in which a crowd can defeat a
// per-annotator model (or a pooled one, or a vote).
var Gens = []Gen{
	// Many classes, Zipf activity, 1-3 labels per item, skewed classes.
	{Name: "g_many_classes", N: 4000, C: 60, ClassSkew: 0.8, Annotators: 400, Activity: 1.1, MinLabels: 1, MaxLabels: 3,
		Spam: .15, Adversary: .05, Confuser: .2, AccLo: .45, AccHi: .9, Seed: 1},
	// A long tail: thousands of annotators, most with one or two labels.
	{Name: "g_long_tail", N: 8000, C: 10, ClassSkew: 1, Annotators: 5000, Activity: 1.3, MinLabels: 1, MaxLabels: 3,
		Spam: .2, Confuser: .1, AccLo: .5, AccHi: .9, Seed: 2},
	// Heavily skewed classes, a moderate crowd.
	{Name: "g_skewed", N: 5000, C: 6, ClassSkew: 2.5, Annotators: 100, Activity: 1, MinLabels: 2, MaxLabels: 3,
		Spam: .15, Adversary: .05, Confuser: .3, AccLo: .5, AccHi: .85, Seed: 3},
	// One-coin annotators of very different skill, few labels each.
	{Name: "g_one_coin", N: 4000, C: 30, ClassSkew: 0.5, Annotators: 300, Activity: 0.8, MinLabels: 1, MaxLabels: 3,
		Spam: .2, AccLo: .3, AccHi: .9, Seed: 4},
	// An ordinal scale: everyone confuses neighbouring grades alike.
	{Name: "g_shared_confusion", N: 4000, C: 8, ClassSkew: 0.7, Annotators: 400, Activity: 1, MinLabels: 2, MaxLabels: 3,
		Shared: 1, AccLo: .45, AccHi: .8, Seed: 5},
	// Few, busy annotators with confusion matrices of their own: the crowd
	// Dawid-Skene was made for.
	{Name: "g_few_busy", N: 3000, C: 5, Annotators: 20, MinLabels: 3, MaxLabels: 5,
		Spam: .2, Adversary: .15, Confuser: .4, AccLo: .55, AccHi: .9, Seed: 6},
	// Many labels per item from hundreds of like annotators with a handful
	// of labels each: the majority vote is nearly right, and a confusion
	// matrix per annotator, fitted to six labels, overfits.
	{Name: "g_light_annotators", N: 600, C: 4, Annotators: 800, MinLabels: 7, MaxLabels: 11,
		Spam: .05, AccLo: .55, AccHi: .75, Seed: 8},
	// Half the items with one label, Zipf activity over thousands.
	{Name: "g_single_label", N: 6000, C: 20, ClassSkew: 1, Annotators: 3000, Activity: 1.2, MinLabels: 1, MaxLabels: 2,
		Spam: .15, Adversary: .03, Confuser: .15, AccLo: .5, AccHi: .9, Seed: 7},
}

// Generate builds the set g describes, from g.Seed alone.
func (g Gen) Generate() *Set {
	if g.C < 3 || g.MinLabels < 1 || g.MaxLabels < g.MinLabels || g.MaxLabels > g.Annotators {
		panic(fmt.Sprintf("crowdset: Generate %s: C = %d, labels %d..%d of %d annotators", g.Name, g.C, g.MinLabels, g.MaxLabels, g.Annotators))
	}
	rng := rand.New(rand.NewPCG(g.Seed, 0x67656e))
	C := g.C
	cum := func(w []float64) []float64 {
		out := make([]float64, len(w))
		var s float64
		for i, v := range w {
			s += v
			out[i] = s
		}
		for i := range out {
			out[i] /= s
		}
		return out
	}
	draw := func(cdf []float64) int {
		k, _ := slices.BinarySearch(cdf, rng.Float64())
		return min(k, len(cdf)-1)
	}
	cw := make([]float64, C)
	for c := range cw {
		cw[c] = math.Pow(float64(c+1), -g.ClassSkew)
	}
	// Classes in a random order, so that the frequent ones are not always
	// the low ones (ties in votes go to the lowest class).
	perm := rng.Perm(C)
	classCDF := cum(cw)
	aw := make([]float64, g.Annotators)
	for a := range aw {
		aw[a] = math.Pow(float64(a+1), -g.Activity)
	}
	// Each annotator's confusion rows, drawn lazily: sample(a, c) is its
	// label for an item of class c.
	type kindT int
	const (
		oneCoin kindT = iota
		spam
		adversary
		confuser
		shared
	)
	kind := make([]kindT, g.Annotators)
	acc := make([]float64, g.Annotators)
	conf := make([][]int32, g.Annotators) // confuser: 2 targets per class
	for a := range kind {
		u := rng.Float64()
		switch {
		case u < g.Spam:
			kind[a] = spam
		case u < g.Spam+g.Adversary:
			kind[a] = adversary
		case u < g.Spam+g.Adversary+g.Confuser:
			kind[a] = confuser
			conf[a] = make([]int32, 2*C)
			for c := 0; c < C; c++ {
				conf[a][2*c] = int32((c + 1 + rng.IntN(C-1)) % C)
				conf[a][2*c+1] = int32((c + 1 + rng.IntN(C-1)) % C)
			}
		case u < g.Spam+g.Adversary+g.Confuser+g.Shared:
			kind[a] = shared
		}
		acc[a] = g.AccLo + (g.AccHi-g.AccLo)*rng.Float64()
	}
	// Activity ranks in a random order of annotator keys.
	actCDF := cum(aw)
	keyOf := rng.Perm(g.Annotators)
	sample := func(a, c int) int32 {
		switch kind[a] {
		case spam:
			return int32(rng.IntN(C))
		case adversary:
			if rng.Float64() < acc[a] {
				return int32((c + 1) % C)
			}
			return int32(c)
		}
		if rng.Float64() < acc[a] {
			return int32(c)
		}
		switch kind[a] {
		case confuser:
			return conf[a][2*c+rng.IntN(2)]
		case shared:
			switch {
			case c == 0:
				return 1
			case c == C-1:
				return int32(C - 2)
			case rng.IntN(2) == 0:
				return int32(c - 1)
			}
			return int32(c + 1)
		}
		return int32((c + 1 + rng.IntN(C-1)) % C)
	}
	s := &Set{Name: g.Name, C: C, IDs: make([]int64, g.N), Truth: make([]int32, g.N)}
	s.Items.Off = append(s.Items.Off, 0)
	var picked []int
	for i := 0; i < g.N; i++ {
		s.IDs[i] = int64(i)
		c := perm[draw(classCDF)]
		s.Truth[i] = int32(c)
		k := g.MinLabels + rng.IntN(g.MaxLabels-g.MinLabels+1)
		picked = picked[:0]
		for len(picked) < k { // distinct annotators by activity (rejection)
			a := draw(actCDF)
			if !slices.Contains(picked, a) {
				picked = append(picked, a)
			}
		}
		for _, a := range picked {
			s.Items.Annotator = append(s.Items.Annotator, int64(keyOf[a]))
			s.Items.Label = append(s.Items.Label, sample(a, c))
		}
		s.Items.Off = append(s.Items.Off, int32(len(s.Items.Label)))
	}
	s.Items.Sort()
	return s
}
