package grid

import (
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/evaluate"
)

// TestDoNoHarmLines checks the do-no-harm target lines on made-up results:
// the clean cells' changed share, the low-noise cells against the best of
// the given labels, the kNN vote and cleanlab, the structured cells against
// the best peer, ECE, and the no-regression checks.
func TestDoNoHarmLines(t *testing.T) {
	mk := func(ds, nz string, relabel, given, knn, cl float64, changed int, ece float64) Result {
		return Result{
			Cell: Cell{Dataset: ds, Noise: nz, Peers: Peers{KNN: nan, Cleanlab: nan, Logreg: nan}},
			Report: evaluate.Report{Items: 1000, CleanedAccuracy: evaluate.Metric(relabel), NoisyAccuracy: evaluate.Metric(given),
				Flagged: changed, ECE: evaluate.Metric(ece),
				Baselines: []evaluate.BaselineAccuracy{{Name: "knn", Accuracy: evaluate.Metric(knn)}, {Name: "cleanlab", Accuracy: evaluate.Metric(cl)}}},
		}
	}
	rs := []Result{
		mk("a", "clean", 0.996, 1, 0.97, 0.995, 4, 0.01),         // 0.40% changed: within
		mk("b", "clean", 0.98, 1, 0.96, 0.99, 20, 0.02),          // 2.00%: not
		mk("a", "sym-0.1", 0.95, 0.9, 0.94, 0.951, 80, 0.03),     // -0.10 against cleanlab: within
		mk("b", "pair-0.2", 0.90, 0.8, 0.85, 0.93, 90, 0.07),     // -3.00 against cleanlab: not; ECE .07 not
		mk("a", "sym-0.2", 0.91, 0.8, 0.92, 0.90, 90, 0.03),      // -1.00 against the vote: not
		mk("a", "perm-0.45", 0.80, 0.55, 0.70, 0.74, 300, 0.04),  // +6 over cleanlab: within
		mk("b", "mixed-0.45", 0.72, 0.55, 0.70, 0.68, 300, 0.04), // +2 over the vote: not
		mk("a", "idn-0.4", 0.95, 0.6, 0.93, 0.94, 380, 0.02),
		mk("a", "pair-0.45", 0.89, 0.55, 0.68, 0.62, 400, 0.04), // -6 from idn-0.4: not
		mk("a", "annotators-5", 0.995, 0.9, 0.95, 0.96, 100, 0.01),
	}
	rs[7].Cell.Peers.Cleanlab = 0.93 // a target cell
	lines := strings.Join(DoNoHarmLines(rs), "\n")
	for _, want := range []string{
		"Clean labels, share relabel changed, target ≤ 0.50% on every dataset (2 cells): worst b/clean 2.00% (relabel .9800); 1 not within target: b/clean 2.00% (relabel .9800): **not met**.",
		"(3 cells): worst b/pair-0.2 -3.00 (.9000 against .9300); 2 not within target: b/pair-0.2 -3.00 (.9000 against .9300), a/sym-0.2 -1.00 (.9100 against .9200): **not met**.",
		"target ≥ +5.0 points on every cell (2 cells): worst b/mixed-0.45 +2.00 (.7200 against .7000); 1 not within target: b/mixed-0.45",
		"ECE of `clean_prob`, target ≤ 0.05 on every cell (10 cells): worst b/pair-0.2 .0700; 1 not within target",
		"No regression: idn/sym-0.4 mean .9500 over 1 cells, target ≥ .9399: **met**.",
		"pair-0.45 minus its dataset's idn-0.4 result, target ≥ -5.0 points (1 cells): worst a/pair-0.45 -6.00 (.8900)",
		"annotators-5, target above .9900 (1 cells): worst a/annotators-5 .9950: **met**.",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("lines lack %q:\n%s", want, lines)
		}
	}
	// Generated cells count doing nothing and cleanlab in Δ best; older
	// cells keep the kNN vote and the README's peers.
	if got := rowBest(rs[0]); got != 1 {
		t.Errorf("clean cell's best peer %v, want the given labels' 1", got)
	}
	if got := rowBest(rs[7]); got != 0.93 {
		t.Errorf("idn-0.4 cell's best peer %v, want .93 (vote and README, not measured cleanlab)", got)
	}
	// A subset without any of these cells states nothing.
	if got := DoNoHarmLines(nil); len(got) != 0 {
		t.Errorf("no results: %v", got)
	}
}
