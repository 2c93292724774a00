package grid

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The "do no harm" targets: most datasets people have are mostly right, and
// there cleaning must not lose to doing nothing or to the simple peers; where
// noise is partly structured it must win clearly.
const (
	// TargetCleanChanged is the largest share of labels relabel may change
	// on a clean cell (given labels all right).
	TargetCleanChanged = 0.005
	// TargetLowNoise is how far, in points, a low-noise cell may be below
	// the best of the given labels, the kNN vote and cleanlab kNN.
	TargetLowNoise = -0.2
	// TargetStructured is how far, in points, a partly structured cell must
	// be above the best peer.
	TargetStructured = 5.0
	// TargetMeanFloor is the least idn/sym-0.4 mean that counts as no
	// regression: the grid's figure when these targets were set.
	TargetMeanFloor = 0.9399
	// TargetAnnotators is the accuracy every annotators-5 cell must exceed.
	TargetAnnotators = 0.99
)

// generated reports whether the cell is one of GeneratedNoises, whose best
// peer counts doing nothing and the measured cleanlab too.
func generated(c Cell) bool {
	return slices.ContainsFunc(GeneratedNoises, func(g GeneratedNoise) bool { return g.Name == c.Noise })
}

// fullBest is the best of every peer the harness knows for the cell: the
// given labels, the measured kNN vote and cleanlab kNN, and the README's
// figures where listed.
func fullBest(r Result) float64 {
	b := bestPeer(r)
	for _, v := range []float64{r.Given(), r.Cleanlab()} {
		if !math.IsNaN(v) && (math.IsNaN(b) || v > b) {
			b = v
		}
	}
	return b
}

// rowBest is the best peer of the grid table's Δ best: fullBest for the
// generated cells, the measured kNN vote and the README's peers for the
// others (as their targets were set).
func rowBest(r Result) float64 {
	if generated(r.Cell) {
		return fullBest(r)
	}
	return bestPeer(r)
}

// measuredBest is the best of the given labels, the kNN vote and cleanlab
// kNN, all measured on the cell's labels.
func measuredBest(r Result) float64 {
	b := r.Given()
	for _, v := range []float64{r.KNN(), r.Cleanlab()} {
		if !math.IsNaN(v) && v > b {
			b = v
		}
	}
	return b
}

// cellCheck is one target over a set of cells: each cell's figure, whether
// it passes, and how it reads in a line.
type cellCheck struct {
	name  string
	value func(Result) float64
	pass  func(float64) bool
	show  func(Result, float64) string
}

// line states c over the cells of rs that sel picks: the number of cells,
// the worst one, every failing one, and met / not met. It is empty when sel
// picks no cell.
func (c cellCheck) line(rs []Result, sel func(Result) bool, worstIsMax bool) string {
	var cells []Result
	for _, r := range rs {
		if sel(r) {
			cells = append(cells, r)
		}
	}
	if len(cells) == 0 {
		return ""
	}
	worst, wv := -1, 0.0
	var fails []string
	for i, r := range cells {
		v := c.value(r)
		if worst < 0 || (worstIsMax && v > wv) || (!worstIsMax && v < wv) {
			worst, wv = i, v
		}
		if !c.pass(v) {
			fails = append(fails, r.Cell.Name()+" "+c.show(r, v))
		}
	}
	s := fmt.Sprintf("%s (%d cells): worst %s %s", c.name, len(cells), cells[worst].Cell.Name(), c.show(cells[worst], wv))
	if len(fails) > 0 {
		s += fmt.Sprintf("; %d not within target: %s", len(fails), strings.Join(fails, ", "))
	}
	return s + fmt.Sprintf(": **%s**.", met(len(fails) == 0))
}

// DoNoHarmLines states the do-no-harm targets that the results cover: the
// clean cells' changed share, the low-noise cells against the best of doing
// nothing, the kNN vote and cleanlab kNN, the partly structured cells
// against the best peer, ECE on every cell, and the no-regression checks on
// the older cells (idn/sym-0.4 mean, pair-0.45 against idn-0.4, sym-0.6
// against the best peer, annotators-5).
func DoNoHarmLines(rs []Result) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	add(cellCheck{
		name:  fmt.Sprintf("Clean labels, share relabel changed, target ≤ %s on every dataset", share(TargetCleanChanged)),
		value: Result.Changed,
		pass:  func(v float64) bool { return v <= TargetCleanChanged },
		show:  func(r Result, v float64) string { return fmt.Sprintf("%s (relabel %s)", share(v), acc(r.Cleaned())) },
	}.line(rs, func(r Result) bool { return r.Cell.Clean() }, true))
	add(cellCheck{
		name:  fmt.Sprintf("Low noise (sym, pair, idn 0.05 to 0.2), relabel minus max(given, kNN vote, cleanlab kNN), target ≥ %+.1f point on every cell", TargetLowNoise),
		value: func(r Result) float64 { return 100 * (r.Cleaned() - measuredBest(r)) },
		pass:  func(v float64) bool { return v >= TargetLowNoise-1e-9 },
		show: func(r Result, v float64) string {
			return fmt.Sprintf("%s (%s against %s)", points(v), acc(r.Cleaned()), acc(measuredBest(r)))
		},
	}.line(rs, func(r Result) bool { return r.Cell.LowNoise() }, false))
	add(cellCheck{
		name:  fmt.Sprintf("Partly structured noise (perm, multi, mixed), relabel minus the best peer, target ≥ %+.1f points on every cell", TargetStructured),
		value: func(r Result) float64 { return 100 * (r.Cleaned() - fullBest(r)) },
		pass:  func(v float64) bool { return v >= TargetStructured-1e-9 },
		show: func(r Result, v float64) string {
			return fmt.Sprintf("%s (%s against %s)", points(v), acc(r.Cleaned()), acc(fullBest(r)))
		},
	}.line(rs, func(r Result) bool { return r.Cell.Structured() }, false))
	add(cellCheck{
		name:  fmt.Sprintf("ECE of `clean_prob`, target ≤ %.2f on every cell", TargetECE),
		value: func(r Result) float64 { return float64(r.Report.ECE) },
		pass:  func(v float64) bool { return v <= TargetECE },
		show:  func(r Result, v float64) string { return acc(v) },
	}.line(rs, func(Result) bool { return true }, true))

	if s := Summarise(rs); s.TargetCells > 0 {
		out = append(out, fmt.Sprintf("No regression: idn/sym-0.4 mean %s over %d cells, target ≥ %s: **%s**.",
			acc(s.TargetRelabel), s.TargetCells, acc(TargetMeanFloor), met(s.TargetRelabel >= TargetMeanFloor-1e-9)))
	}
	idn := map[string]float64{}
	for _, r := range rs {
		if r.Cell.Noise == "idn-0.4" {
			idn[r.Cell.Dataset] = r.Cleaned()
		}
	}
	add(cellCheck{
		name: fmt.Sprintf("No regression: pair-0.45 minus its dataset's idn-0.4 result, target ≥ %+.1f points", -TargetPairGap),
		value: func(r Result) float64 {
			ref, ok := idn[r.Cell.Dataset]
			if !ok {
				return nan
			}
			return 100 * (r.Cleaned() - ref)
		},
		pass: func(v float64) bool { return v >= -TargetPairGap-1e-9 },
		show: func(r Result, v float64) string { return fmt.Sprintf("%s (%s)", points(v), acc(r.Cleaned())) },
	}.line(rs, func(r Result) bool {
		_, ok := idn[r.Cell.Dataset]
		return r.Cell.Noise == "pair-0.45" && ok
	}, false))
	add(cellCheck{
		name:  "No regression: sym-0.6 minus the best peer, target above it",
		value: func(r Result) float64 { return 100 * (r.Cleaned() - bestPeer(r)) },
		pass:  func(v float64) bool { return v > 0 },
		show: func(r Result, v float64) string {
			return fmt.Sprintf("%s (%s against %s)", points(v), acc(r.Cleaned()), acc(bestPeer(r)))
		},
	}.line(rs, func(r Result) bool { return r.Cell.Noise == "sym-0.6" }, false))
	add(cellCheck{
		name:  fmt.Sprintf("No regression: annotators-5, target above %s", acc(TargetAnnotators)),
		value: Result.Cleaned,
		pass:  func(v float64) bool { return v > TargetAnnotators },
		show:  func(r Result, v float64) string { return acc(v) },
	}.line(rs, func(r Result) bool { return r.Cell.Annotators() }, false))
	return out
}
