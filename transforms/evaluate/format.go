package evaluate

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Format renders r as a table for a terminal: labels and their accuracies
// first (the numbers a cleaner is judged by), then detection, ranking and
// calibration. Undefined metrics print as "-".
func Format(r Report) string {
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	row := func(name, value string) { fmt.Fprintf(w, "%s\t%s\n", name, value) }
	row("items", fmt.Sprint(r.Items))
	row("classes", fmt.Sprint(r.Classes))
	if r.Annotations != r.Items {
		row("annotations", fmt.Sprint(r.Annotations))
		row("annotation accuracy", num(r.AnnotationAccuracy))
		row("given (majority vote) accuracy", num(r.NoisyAccuracy))
	} else {
		row("given (noisy) accuracy", num(r.NoisyAccuracy))
	}
	row("wrong given labels", fmt.Sprint(r.GivenWrong))
	for _, b := range r.Baselines {
		row("baseline "+b.Name+" accuracy", num(b.Accuracy))
	}
	row("cleaned accuracy", num(r.CleanedAccuracy))
	if r.CleanedAccuracy.Valid() {
		row("fixed / broken", fmt.Sprintf("%d / %d", r.Fixed, r.Broken))
	}
	if r.Precision.Valid() || r.Recall.Valid() || r.Flagged > 0 {
		row("flagged (tp / fp / fn)", fmt.Sprintf("%d (%d / %d / %d)", r.Flagged, r.TruePositives, r.FalsePositives, r.FalseNegatives))
	}
	row("detection precision", num(r.Precision))
	row("detection recall", num(r.Recall))
	row("detection F1", num(r.F1))
	row("ROC AUC of 1-given_prob", num(r.AUC))
	row(fmt.Sprintf("ECE of clean_prob (%d bins)", ECEBins), num(r.ECE))
	w.Flush()
	return sb.String()
}

func num(m Metric) string {
	if !m.Valid() {
		return "-"
	}
	return fmt.Sprintf("%.4f", float64(m))
}
