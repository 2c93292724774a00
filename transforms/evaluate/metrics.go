package evaluate

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// Metric is a rate or score that may be undefined (NaN): precision when
// nothing was flagged, AUC when no label is wrong, any metric whose input was
// not supplied. It encodes as a JSON number, or null when undefined, since
// encoding/json rejects NaN.
type Metric float64

// NA is the undefined Metric.
var NA = Metric(math.NaN())

// Valid reports whether m is defined.
func (m Metric) Valid() bool { return !math.IsNaN(float64(m)) }

// MarshalJSON writes m as a number, or null when undefined.
func (m Metric) MarshalJSON() ([]byte, error) {
	if !m.Valid() || math.IsInf(float64(m), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(m))
}

// UnmarshalJSON reads a number, or null as NA.
func (m *Metric) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = NA
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("evaluate: metric %s: %w", b, err)
	}
	*m = Metric(f)
	return nil
}

// ratio returns a/b, NA when b is 0.
func ratio(a, b int) Metric {
	if b == 0 {
		return NA
	}
	return Metric(float64(a) / float64(b))
}

// AUC returns the area under the ROC curve of score as a detector of
// positive: the probability that a random positive scores above a random
// negative, ties counted half (the Mann-Whitney U statistic over P*N, equal
// to the trapezoidal area that scikit-learn's roc_auc_score computes). It is
// NA without positives or without negatives. O(n log n); score must hold no
// NaN.
func AUC(score []float64, positive []bool) Metric {
	if len(score) != len(positive) {
		panic(fmt.Sprintf("evaluate: AUC: %d scores for %d outcomes", len(score), len(positive)))
	}
	order := make([]int32, len(score))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if score[a] < score[b] {
			return -1
		}
		if score[a] > score[b] {
			return 1
		}
		return 0
	})
	// Walk groups of equal score from the lowest up: each positive beats
	// every negative in lower groups and ties with those in its own.
	var pos, neg int
	var u float64 // twice the U statistic, kept integral
	for g := 0; g < len(order); {
		e := g
		var gp, gn int
		for ; e < len(order) && score[order[e]] == score[order[g]]; e++ {
			if positive[order[e]] {
				gp++
			} else {
				gn++
			}
		}
		u += float64(gp) * (2*float64(neg) + float64(gn))
		pos, neg = pos+gp, neg+gn
		g = e
	}
	if pos == 0 || neg == 0 {
		return NA
	}
	return Metric(u / 2 / (float64(pos) * float64(neg)))
}

// Bin is one confidence bin of a reliability diagram: the items whose
// confidence lies in (Lo, Hi] (the first bin also takes 0), their number,
// their accuracy and their mean confidence.
type Bin struct {
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Count      int     `json:"count"`
	Accuracy   Metric  `json:"accuracy"`
	Confidence Metric  `json:"confidence"`
}

// ECEBins is the number of equal-width bins of the expected calibration
// error, the standard 15 of Guo et al. 2017.
const ECEBins = 15

// ECE returns the expected calibration error of confidences conf (each in
// [0,1]) for predictions whose correctness is correct, over nbins equal-width
// bins (lo, hi] (Guo et al. 2017, eq. 3): sum over bins b of
// |B_b|/n * |acc(B_b) - conf(B_b)|, together with the bins. NA when there are
// no items.
func ECE(conf []float32, correct []bool, nbins int) (Metric, []Bin) {
	if len(conf) != len(correct) {
		panic(fmt.Sprintf("evaluate: ECE: %d confidences for %d outcomes", len(conf), len(correct)))
	}
	if nbins < 1 {
		panic(fmt.Sprintf("evaluate: ECE: %d bins", nbins))
	}
	count := make([]int, nbins)
	hits := make([]int, nbins)
	sum := make([]float64, nbins)
	for i, p := range conf {
		// Bin b holds (b/nbins, (b+1)/nbins]: ceil(p*nbins)-1, clamped so that
		// 0 falls in the first bin.
		b := int(math.Ceil(float64(p)*float64(nbins))) - 1
		b = max(0, min(nbins-1, b))
		count[b]++
		sum[b] += float64(p)
		if correct[i] {
			hits[b]++
		}
	}
	bins := make([]Bin, nbins)
	var ece float64
	for b := range bins {
		bins[b] = Bin{Lo: float64(b) / float64(nbins), Hi: float64(b+1) / float64(nbins), Count: count[b], Accuracy: NA, Confidence: NA}
		if count[b] == 0 {
			continue
		}
		acc := float64(hits[b]) / float64(count[b])
		mc := sum[b] / float64(count[b])
		bins[b].Accuracy, bins[b].Confidence = Metric(acc), Metric(mc)
		ece += float64(count[b]) / float64(len(conf)) * math.Abs(acc-mc)
	}
	if len(conf) == 0 {
		return NA, bins
	}
	return Metric(ece), bins
}
