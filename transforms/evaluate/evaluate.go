package evaluate

import "fmt"

// Inputs are the labels and scores of one dataset to evaluate; index i is
// the same item in every slice. Only C, Truth and one of Given or
// GivenMulti are required; a metric whose inputs are absent is reported NA.
type Inputs struct {
	// C is the number of classes. Required, >= 1.
	C int
	// Truth holds the true labels. Required.
	Truth []int32
	// Given holds the one given (noisy) label of each item. Required unless
	// GivenMulti is set.
	Given []int32
	// GivenMulti and GivenOffsets hold several given labels per item (an
	// annotators file): item i's are GivenMulti[GivenOffsets[i]:GivenOffsets[i+1]].
	// Their majority vote (MajorityVote) is then the item's given label.
	// Optional, instead of Given; every item needs at least one label.
	GivenMulti   []int32
	GivenOffsets []int32
	// Clean holds the cleaned labels. Optional.
	Clean []int32
	// CleanProb is the cleaner's probability of its Clean label, in [0,1].
	// Optional, with Clean; scored by ECE.
	CleanProb []float32
	// GivenProb is the cleaner's probability of the given label, in [0,1];
	// 1 - GivenProb is scored by AUC as a detector of wrong given labels.
	// Optional.
	GivenProb []float32
	// Changed flags the items the cleaner considers mislabelled. Optional,
	// default Clean[i] != given label (when Clean is set).
	Changed []bool
	// Baselines are other cleaned labelings (e.g. KNNVote) whose accuracy is
	// reported beside the cleaner's. Optional.
	Baselines []Baseline
}

// Baseline is a named labeling to compare with, one label per item.
type Baseline struct {
	Name   string
	Labels []int32
}

// Report is what Evaluate measures. Accuracies are fractions of items whose
// label equals the truth; detection treats "given label != truth" as the
// positive class and Changed as the prediction.
type Report struct {
	Items       int `json:"items"`
	Classes     int `json:"classes"`
	Annotations int `json:"annotations"` // given labels read: Items, or len(GivenMulti)
	// AnnotationAccuracy is the fraction of individual given labels that are
	// right: the mean single-annotator accuracy with GivenMulti.
	AnnotationAccuracy Metric `json:"annotation_accuracy"`
	// GivenWrong counts items whose given (majority) label is wrong.
	GivenWrong int `json:"given_wrong"`
	// NoisyAccuracy is the accuracy of the given (majority) labels: the
	// no-cleaning baseline.
	NoisyAccuracy Metric `json:"noisy_accuracy"`
	// CleanedAccuracy is the accuracy of Clean.
	CleanedAccuracy Metric `json:"cleaned_accuracy"`
	// Fixed counts wrong given labels that Clean corrects, Broken right ones
	// that Clean makes wrong.
	Fixed  int `json:"fixed"`
	Broken int `json:"broken"`
	// Detection of wrong given labels by Changed.
	Flagged        int    `json:"flagged"`
	TruePositives  int    `json:"true_positives"`
	FalsePositives int    `json:"false_positives"`
	FalseNegatives int    `json:"false_negatives"`
	Precision      Metric `json:"precision"`
	Recall         Metric `json:"recall"`
	F1             Metric `json:"f1"`
	// AUC ranks items by 1 - GivenProb as a detector of wrong given labels.
	AUC Metric `json:"auc"`
	// ByConfidence scores conservative relabelling at each of
	// ConfidenceThresholds: labels changed only where CleanProb >= T.
	ByConfidence []ConfidencePR `json:"by_confidence,omitempty"`
	// ECE is the expected calibration error of CleanProb for Clean (15 bins).
	ECE     Metric `json:"ece"`
	ECEBins []Bin  `json:"ece_bins,omitempty"`
	// Baselines reports the accuracy of each Inputs.Baselines labeling.
	Baselines []BaselineAccuracy `json:"baselines,omitempty"`
}

// BaselineAccuracy is the accuracy of one baseline labeling.
type BaselineAccuracy struct {
	Name     string `json:"name"`
	Accuracy Metric `json:"accuracy"`
}

// Validate reports the first inconsistency in in: mismatched lengths,
// labels outside [0,C), probabilities outside [0,1], malformed offsets.
func (in Inputs) Validate() error {
	n := len(in.Truth)
	if in.C < 1 {
		return fmt.Errorf("evaluate: %d classes", in.C)
	}
	if err := labelsIn("truth", in.Truth, in.C); err != nil {
		return err
	}
	switch {
	case in.Given != nil && in.GivenMulti != nil:
		return fmt.Errorf("evaluate: both single and multiple given labels")
	case in.Given != nil:
		if len(in.Given) != n {
			return fmt.Errorf("evaluate: %d given labels for %d items", len(in.Given), n)
		}
		if err := labelsIn("given", in.Given, in.C); err != nil {
			return err
		}
	case in.GivenMulti != nil:
		off := in.GivenOffsets
		if len(off) != n+1 {
			return fmt.Errorf("evaluate: %d given-label offsets for %d items, want %d", len(off), n, n+1)
		}
		if off[0] != 0 || int(off[n]) != len(in.GivenMulti) {
			return fmt.Errorf("evaluate: given-label offsets span [%d,%d), want [0,%d)", off[0], off[n], len(in.GivenMulti))
		}
		for i := range n {
			if off[i+1] <= off[i] {
				return fmt.Errorf("evaluate: item %d: no given labels (offsets %d, %d)", i, off[i], off[i+1])
			}
		}
		if err := labelsIn("given", in.GivenMulti, in.C); err != nil {
			return err
		}
	default:
		return fmt.Errorf("evaluate: no given labels")
	}
	if in.Clean != nil {
		if len(in.Clean) != n {
			return fmt.Errorf("evaluate: %d clean labels for %d items", len(in.Clean), n)
		}
		if err := labelsIn("clean", in.Clean, in.C); err != nil {
			return err
		}
	}
	if in.CleanProb != nil && in.Clean == nil {
		return fmt.Errorf("evaluate: clean probabilities without clean labels")
	}
	if err := probsIn("clean", in.CleanProb, n); err != nil {
		return err
	}
	if err := probsIn("given", in.GivenProb, n); err != nil {
		return err
	}
	if in.Changed != nil && len(in.Changed) != n {
		return fmt.Errorf("evaluate: %d changed flags for %d items", len(in.Changed), n)
	}
	for _, b := range in.Baselines {
		if len(b.Labels) != n {
			return fmt.Errorf("evaluate: baseline %q: %d labels for %d items", b.Name, len(b.Labels), n)
		}
		if err := labelsIn("baseline "+b.Name, b.Labels, in.C); err != nil {
			return err
		}
	}
	return nil
}

func labelsIn(what string, l []int32, c int) error {
	for i, y := range l {
		if y < 0 || int(y) >= c {
			return fmt.Errorf("evaluate: %s label %d: %d outside [0,%d)", what, i, y, c)
		}
	}
	return nil
}

func probsIn(what string, p []float32, n int) error {
	if p == nil {
		return nil
	}
	if len(p) != n {
		return fmt.Errorf("evaluate: %d %s probabilities for %d items", len(p), what, n)
	}
	for i, v := range p {
		if !(v >= 0 && v <= 1) { // also NaN
			return fmt.Errorf("evaluate: %s probability %d: %v outside [0,1]", what, i, v)
		}
	}
	return nil
}

// ConfidenceThresholds are the --min-confidence values Report.ByConfidence
// scores.
var ConfidenceThresholds = []float64{0, 0.5, 0.7, 0.9, 0.95, 0.99}

// ConfidencePR is relabelling with a minimum confidence T: Changed labels
// (where the clean label differs and clean_prob >= T), the share of them
// that fix a wrong given label (Precision), the share of wrong given labels
// they fix or at least change (Recall), and the accuracy of the result.
type ConfidencePR struct {
	Threshold                   float64 `json:"threshold"`
	Changed                     int     `json:"changed"`
	Precision, Recall, Accuracy Metric  `json:"-"`
}

// Evaluate measures in (see Report); it returns Validate's error first.
func Evaluate(in Inputs) (Report, error) {
	if err := in.Validate(); err != nil {
		return Report{}, err
	}
	n := len(in.Truth)
	r := Report{
		Items: n, Classes: in.C,
		AnnotationAccuracy: NA, NoisyAccuracy: NA, CleanedAccuracy: NA,
		Precision: NA, Recall: NA, F1: NA, AUC: NA, ECE: NA,
	}

	given := in.Given
	if in.GivenMulti != nil {
		given = MajorityVote(in.GivenMulti, in.GivenOffsets, in.C)
		right := 0
		for i, y := range in.Truth {
			for _, l := range in.GivenMulti[in.GivenOffsets[i]:in.GivenOffsets[i+1]] {
				if l == y {
					right++
				}
			}
		}
		r.Annotations = len(in.GivenMulti)
		r.AnnotationAccuracy = ratio(right, len(in.GivenMulti))
	} else {
		r.Annotations = n
	}
	wrong := make([]bool, n)
	for i, y := range in.Truth {
		wrong[i] = given[i] != y
		if wrong[i] {
			r.GivenWrong++
		}
	}
	r.NoisyAccuracy = ratio(n-r.GivenWrong, n)
	if in.GivenMulti == nil {
		r.AnnotationAccuracy = r.NoisyAccuracy
	}

	if in.Clean != nil {
		right := 0
		for i, y := range in.Truth {
			ok := in.Clean[i] == y
			if ok {
				right++
			}
			if ok && wrong[i] {
				r.Fixed++
			}
			if !ok && !wrong[i] {
				r.Broken++
			}
		}
		r.CleanedAccuracy = ratio(right, n)
	}

	changed := in.Changed
	if changed == nil && in.Clean != nil {
		changed = make([]bool, n)
		for i := range changed {
			changed[i] = in.Clean[i] != given[i]
		}
	}
	if changed != nil {
		for i, c := range changed {
			switch {
			case c && wrong[i]:
				r.TruePositives++
			case c:
				r.FalsePositives++
			case wrong[i]:
				r.FalseNegatives++
			}
		}
		r.Flagged = r.TruePositives + r.FalsePositives
		r.Precision = ratio(r.TruePositives, r.Flagged)
		r.Recall = ratio(r.TruePositives, r.GivenWrong)
		// 2PR/(P+R) without its 0/0 when P or R is 0 but the other defined.
		r.F1 = ratio(2*r.TruePositives, 2*r.TruePositives+r.FalsePositives+r.FalseNegatives)
	}

	if in.GivenProb != nil {
		// Ranking by -p is ranking by 1-p, without 1-p's rounding merging
		// small probabilities into ties.
		score := make([]float64, n)
		for i, p := range in.GivenProb {
			score[i] = -float64(p)
		}
		r.AUC = AUC(score, wrong)
	}

	if in.CleanProb != nil && in.Clean != nil {
		// Conservative relabelling (--min-confidence T): a label changes
		// only where clean_prob >= T.
		for _, t := range ConfidenceThresholds {
			c := ConfidencePR{Threshold: t}
			tp, right := 0, 0
			for i, y := range in.Truth {
				label := given[i]
				if in.Clean[i] != given[i] && float64(in.CleanProb[i]) >= t {
					label = in.Clean[i]
					c.Changed++
					if wrong[i] {
						tp++
					}
				}
				if label == y {
					right++
				}
			}
			c.Precision, c.Recall, c.Accuracy = ratio(tp, c.Changed), ratio(tp, r.GivenWrong), ratio(right, n)
			r.ByConfidence = append(r.ByConfidence, c)
		}
	}

	if in.CleanProb != nil {
		correct := make([]bool, n)
		for i, y := range in.Truth {
			correct[i] = in.Clean[i] == y
		}
		r.ECE, r.ECEBins = ECE(in.CleanProb, correct, ECEBins)
	}

	for _, b := range in.Baselines {
		right := 0
		for i, y := range in.Truth {
			if b.Labels[i] == y {
				right++
			}
		}
		r.Baselines = append(r.Baselines, BaselineAccuracy{Name: b.Name, Accuracy: ratio(right, n)})
	}
	return r, nil
}
