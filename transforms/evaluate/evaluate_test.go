package evaluate

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	nan := math.NaN()
	// Items 1, 3 and 4 have wrong given labels. The cleaner flags 1, 2, 4:
	// tp {1, 4}, fp {2}, fn {3}; it fixes 1 and 4 and breaks 2.
	base := Inputs{
		C:       4,
		Truth:   []int32{0, 1, 2, 3, 0, 1},
		Given:   []int32{0, 2, 2, 0, 1, 1},
		Clean:   []int32{0, 1, 0, 0, 0, 1},
		Changed: []bool{false, true, true, false, true, false},
	}
	type want struct {
		noisy, cleaned, p, r, f1 float64
		wrong, fixed, broken     int
		tp, fp, fn               int
		annotations              int
		annotationAcc, auc, ece  float64
		baselines                []float64
	}
	mod := func(f func(*Inputs)) Inputs {
		in := base
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name string
		in   Inputs
		want want
	}{
		{"flags given", base, want{noisy: 0.5, cleaned: 4.0 / 6, p: 2.0 / 3, r: 2.0 / 3, f1: 2.0 / 3, wrong: 3, fixed: 2, broken: 1, tp: 2, fp: 1, fn: 1, annotations: 6, annotationAcc: 0.5, auc: nan, ece: nan}},
		// Clean differs from Given exactly where Changed is set.
		{"flags derived from clean", mod(func(in *Inputs) { in.Changed = nil }), want{noisy: 0.5, cleaned: 4.0 / 6, p: 2.0 / 3, r: 2.0 / 3, f1: 2.0 / 3, wrong: 3, fixed: 2, broken: 1, tp: 2, fp: 1, fn: 1, annotations: 6, annotationAcc: 0.5, auc: nan, ece: nan}},
		{"nothing flagged", mod(func(in *Inputs) { in.Changed = make([]bool, 6) }), want{noisy: 0.5, cleaned: 4.0 / 6, p: nan, r: 0, f1: 0, wrong: 3, fixed: 2, broken: 1, fn: 3, annotations: 6, annotationAcc: 0.5, auc: nan, ece: nan}},
		{"no cleaner output", mod(func(in *Inputs) { in.Clean, in.Changed = nil, nil }), want{noisy: 0.5, cleaned: nan, p: nan, r: nan, f1: nan, wrong: 3, annotations: 6, annotationAcc: 0.5, auc: nan, ece: nan}},
		{"nothing wrong, nothing flagged", Inputs{C: 2, Truth: []int32{0, 1}, Given: []int32{0, 1}, Clean: []int32{0, 1}}, want{noisy: 1, cleaned: 1, p: nan, r: nan, f1: nan, annotations: 2, annotationAcc: 1, auc: nan, ece: nan}},
		// given_prob ranks wrong items {1,3,4} by 1-p: scores .9, .6, .2 vs
		// right items .7, .8, .5 -> wins (.9: 3) + (.6: 1) + (.2: 0) = 4 of 9.
		// clean_prob: correct items 0,1,4,5 at .9,.9,.6,.6 and wrong 2,3 at
		// .9,.6: bin 13 (.9): acc 2/3 conf .9; bin 8 (.6): acc 2/3 conf .6 ->
		// 3/6*(.9-2/3) + 3/6*|.6-2/3| = .15
		{"scores", mod(func(in *Inputs) {
			in.GivenProb = []float32{0.3, 0.1, 0.2, 0.4, 0.8, 0.5}
			in.CleanProb = []float32{0.9, 0.9, 0.9, 0.6, 0.6, 0.6}
		}), want{noisy: 0.5, cleaned: 4.0 / 6, p: 2.0 / 3, r: 2.0 / 3, f1: 2.0 / 3, wrong: 3, fixed: 2, broken: 1, tp: 2, fp: 1, fn: 1, annotations: 6, annotationAcc: 0.5, auc: 4.0 / 9, ece: 0.15}},
		{"baselines", mod(func(in *Inputs) {
			in.Baselines = []Baseline{{"knn", []int32{0, 1, 2, 3, 0, 0}}, {"zero", make([]int32, 6)}}
		}), want{noisy: 0.5, cleaned: 4.0 / 6, p: 2.0 / 3, r: 2.0 / 3, f1: 2.0 / 3, wrong: 3, fixed: 2, broken: 1, tp: 2, fp: 1, fn: 1, annotations: 6, annotationAcc: 0.5, auc: nan, ece: nan, baselines: []float64{5.0 / 6, 2.0 / 6}}},
		// Majority votes: [2,1] -> 1 (tie to lowest), [0,0,1] -> 0, [3] -> 3;
		// truth 1, 1, 3: item 1 wrong. Annotations right: 1 + 1 + 1 of 6.
		{"annotators", Inputs{C: 4, Truth: []int32{1, 1, 3}, GivenMulti: []int32{2, 1, 0, 0, 1, 3}, GivenOffsets: []int32{0, 2, 5, 6}, Clean: []int32{1, 1, 3}},
			want{noisy: 2.0 / 3, cleaned: 1, p: 1, r: 1, f1: 1, wrong: 1, fixed: 1, tp: 1, annotations: 6, annotationAcc: 0.5, auc: nan, ece: nan}},
	} {
		r, err := Evaluate(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		w := tc.want
		for _, m := range []struct {
			name string
			got  Metric
			want float64
		}{
			{"noisy accuracy", r.NoisyAccuracy, w.noisy},
			{"cleaned accuracy", r.CleanedAccuracy, w.cleaned},
			{"precision", r.Precision, w.p},
			{"recall", r.Recall, w.r},
			{"F1", r.F1, w.f1},
			{"annotation accuracy", r.AnnotationAccuracy, w.annotationAcc},
			{"AUC", r.AUC, w.auc},
			{"ECE", r.ECE, w.ece},
		} {
			if !near(m.got, m.want, 1e-6) {
				t.Errorf("%s: %s = %v, want %v", tc.name, m.name, m.got, m.want)
			}
		}
		for _, c := range []struct {
			name      string
			got, want int
		}{
			{"items", r.Items, len(tc.in.Truth)},
			{"given wrong", r.GivenWrong, w.wrong},
			{"fixed", r.Fixed, w.fixed},
			{"broken", r.Broken, w.broken},
			{"true positives", r.TruePositives, w.tp},
			{"false positives", r.FalsePositives, w.fp},
			{"false negatives", r.FalseNegatives, w.fn},
			{"flagged", r.Flagged, w.tp + w.fp},
			{"annotations", r.Annotations, w.annotations},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s = %d, want %d", tc.name, c.name, c.got, c.want)
			}
		}
		if len(r.Baselines) != len(w.baselines) {
			t.Errorf("%s: %d baselines, want %d", tc.name, len(r.Baselines), len(w.baselines))
		}
		for i := range min(len(r.Baselines), len(w.baselines)) {
			if !near(r.Baselines[i].Accuracy, w.baselines[i], 1e-12) || r.Baselines[i].Name != tc.in.Baselines[i].Name {
				t.Errorf("%s: baseline %d = %+v, want %s %v", tc.name, i, r.Baselines[i], tc.in.Baselines[i].Name, w.baselines[i])
			}
		}
	}
}

func TestValidate(t *testing.T) {
	ok := func() Inputs {
		return Inputs{C: 3, Truth: []int32{0, 1, 2}, Given: []int32{0, 1, 1}, Clean: []int32{0, 1, 2},
			CleanProb: []float32{1, 0.5, 0.2}, GivenProb: []float32{1, 1, 0}, Changed: []bool{false, false, true}}
	}
	if err := ok().Validate(); err != nil {
		t.Fatalf("valid inputs: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Inputs)
		want string
	}{
		{"no classes", func(in *Inputs) { in.C = 0 }, "0 classes"},
		{"truth out of range", func(in *Inputs) { in.Truth[2] = 3 }, "truth label 2: 3"},
		{"given short", func(in *Inputs) { in.Given = in.Given[:2] }, "2 given labels"},
		{"given negative", func(in *Inputs) { in.Given[0] = -1 }, "given label 0: -1"},
		{"no given", func(in *Inputs) { in.Given = nil }, "no given"},
		{"both given", func(in *Inputs) { in.GivenMulti, in.GivenOffsets = []int32{0, 1, 2}, []int32{0, 1, 2, 3} }, "both"},
		{"multi empty item", func(in *Inputs) { in.Given, in.GivenMulti, in.GivenOffsets = nil, []int32{0, 1}, []int32{0, 1, 1, 2} }, "item 1: no given"},
		{"multi offsets short", func(in *Inputs) { in.Given, in.GivenMulti, in.GivenOffsets = nil, []int32{0, 1, 2}, []int32{0, 1, 3} }, "3 given-label offsets"},
		{"multi span", func(in *Inputs) {
			in.Given, in.GivenMulti, in.GivenOffsets = nil, []int32{0, 1, 2}, []int32{0, 1, 2, 4}
		}, "span"},
		{"clean out of range", func(in *Inputs) { in.Clean[1] = 5 }, "clean label 1: 5"},
		{"prob without clean", func(in *Inputs) { in.Clean = nil }, "without clean"},
		{"clean prob NaN", func(in *Inputs) { in.CleanProb[1] = float32(math.NaN()) }, "clean probability 1: NaN"},
		{"given prob > 1", func(in *Inputs) { in.GivenProb[0] = 1.5 }, "given probability 0: 1.5"},
		{"changed short", func(in *Inputs) { in.Changed = in.Changed[:1] }, "1 changed flags"},
		{"baseline short", func(in *Inputs) { in.Baselines = []Baseline{{"knn", []int32{0}}} }, `baseline "knn"`},
	} {
		in := ok()
		tc.mod(&in)
		_, err := Evaluate(in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestMajorityVote(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []int32
		off    []int32
		want   []int32
	}{
		{"clear majorities", []int32{1, 1, 0, 2, 2, 2}, []int32{0, 3, 6}, []int32{1, 2}},
		{"ties to lowest", []int32{2, 1, 3, 0, 3, 0}, []int32{0, 2, 6}, []int32{1, 0}},
		{"single labels", []int32{2, 0}, []int32{0, 1, 2}, []int32{2, 0}},
		{"empty item", []int32{1}, []int32{0, 0, 1}, []int32{-1, 1}},
		{"no items", nil, []int32{0}, []int32{}},
	} {
		if got := MajorityVote(tc.labels, tc.off, 4); !slices.Equal(got, tc.want) {
			t.Errorf("%s: MajorityVote = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFormatAndJSON(t *testing.T) {
	r, err := Evaluate(Inputs{C: 3, Truth: []int32{0, 1, 2, 2}, Given: []int32{0, 2, 2, 1}, Clean: []int32{0, 1, 2, 1},
		Baselines: []Baseline{{"knn-10", []int32{0, 1, 2, 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	s := Format(r)
	for _, want := range []string{
		"given (noisy) accuracy", "0.5000",
		"baseline knn-10 accuracy", "1.0000",
		"cleaned accuracy", "0.7500",
		"fixed / broken", "1 / 0",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("Format output lacks %q:\n%s", want, s)
		}
	}
	if !regexp.MustCompile(`(?m)^ROC AUC of 1-given_prob +-$`).MatchString(s) {
		t.Errorf("Format output should show AUC undefined without given_prob:\n%s", s)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, want := range []string{`"cleaned_accuracy":0.75`, `"auc":null`, `"baselines":[{"name":"knn-10","accuracy":1}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.CleanedAccuracy != r.CleanedAccuracy || back.AUC.Valid() || back.Fixed != r.Fixed {
		t.Errorf("JSON round trip: %+v, want %+v", back, r)
	}
}
