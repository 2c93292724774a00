package crowdset

import (
	"slices"
	"testing"

	"github.com/relabel/relabel/transforms/crowd"
)

// TestGeneratedFloor is issue 33's target on the generated crowds, with
// transforms/crowd's defaults: label-only accuracy at least max(majority
// vote, Dawid-Skene) - 0.5 point on each. Before the skill layer and the
// smaller class balance the model fell 2 to 19 points below on five of
// them. It needs no shared data. It runs the sets of at most 10 classes
// (a few seconds: the long tail, skewed classes, shared confusion, few busy
// annotators); internal/crowdquality TestQualityCrowd checks every set.
func TestGeneratedFloor(t *testing.T) {
	for _, g := range Gens {
		if g.C > 10 {
			continue
		}
		t.Run(g.Name, func(t *testing.T) {
			s := g.Generate()
			mv := s.Accuracy(s.MajorityVoteRandom(1))
			ds := s.Accuracy(Argmax(s.DawidSkene(50), s.C))
			res, err := crowd.Fit(&s.Items, nil, crowd.DefaultParams(s.C))
			if err != nil {
				t.Fatal(err)
			}
			got := s.Accuracy(Argmax(res.Posterior, s.C))
			t.Logf("MV %.3f DS %.3f crowd %.3f (skill strength %.3g, row strength %.3g)", mv, ds, got, res.Model.SkillStrength, res.Model.Strength)
			if floor := max(mv, ds) - 0.005; got < floor {
				t.Errorf("label-only accuracy %.3f, below max(MV %.3f, DS %.3f) - 0.5 point", got, mv, ds)
			}
		})
	}
}

// TestGenerate: a generated set is a function of its seed, and has the
// properties it is named for.
func TestGenerate(t *testing.T) {
	for _, g := range Gens {
		a, b := g.Generate(), g.Generate()
		if !slices.Equal(a.Items.Label, b.Items.Label) || !slices.Equal(a.Items.Annotator, b.Items.Annotator) || !slices.Equal(a.Truth, b.Truth) {
			t.Fatalf("%s: two generations differ", g.Name)
		}
		if err := a.Items.Validate(a.C); err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		per := map[int64]int{}
		for i := 0; i < a.Len(); i++ {
			ann, _ := a.Items.Item(i)
			if len(ann) < g.MinLabels || len(ann) > g.MaxLabels {
				t.Fatalf("%s: item %d has %d labels, want %d..%d", g.Name, i, len(ann), g.MinLabels, g.MaxLabels)
			}
			for k := 1; k < len(ann); k++ {
				if ann[k] == ann[k-1] {
					t.Fatalf("%s: item %d labelled twice by annotator %d", g.Name, i, ann[k])
				}
			}
			for _, x := range ann {
				per[x]++
			}
		}
		if g.Name == "g_long_tail" {
			light := 0
			for _, n := range per {
				if n <= 2 {
					light++
				}
			}
			if light*2 < len(per) {
				t.Errorf("%s: %d of %d annotators with at most 2 labels, want most (a long tail)", g.Name, light, len(per))
			}
		}
		if g.Name == "g_skewed" {
			count := make([]int, a.C)
			for _, c := range a.Truth {
				count[c]++
			}
			if top := slices.Max(count); top*2 < a.Len() {
				t.Errorf("%s: largest class %d of %d items, want over half", g.Name, top, a.Len())
			}
		}
	}
}

// TestDawidSkene: on a crowd of few busy annotators with matrices of
// their own, the reference finds what the majority misses.
func TestDawidSkene(t *testing.T) {
	g := Gens[slices.IndexFunc(Gens, func(g Gen) bool { return g.Name == "g_few_busy" })]
	s := g.Generate()
	mv := s.Accuracy(s.MajorityVoteRandom(1))
	ds := s.Accuracy(Argmax(s.DawidSkene(50), s.C))
	if ds < mv+0.05 {
		t.Errorf("Dawid-Skene %.3f, majority vote %.3f: want 5 points above", ds, mv)
	}
}

// TestLightAnnotators: on g_light_annotators the majority vote beats
// Dawid-Skene (its per-annotator matrices overfit six labels each) by more
// than 2 points, so the set tests what it is named for, and the crowd
// model, choosing its model from held-out labels, is not below the vote.
func TestLightAnnotators(t *testing.T) {
	i := slices.IndexFunc(Gens, func(g Gen) bool { return g.Name == "g_light_annotators" })
	if i < 0 {
		t.Fatal("no g_light_annotators")
	}
	s := Gens[i].Generate()
	mv := s.Accuracy(s.MajorityVoteRandom(1))
	ds := s.Accuracy(Argmax(s.DawidSkene(50), s.C))
	if mv < ds+0.02 {
		t.Errorf("MV %.3f, DS %.3f: want DS 2 points below the vote", mv, ds)
	}
	res, err := crowd.Fit(&s.Items, nil, crowd.DefaultParams(s.C))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Accuracy(Argmax(res.Posterior, s.C)); got < mv-0.005 {
		t.Errorf("crowd %.3f (%v), below MV %.3f - 0.5 point", got, res.Choice, mv)
	}
}
