package grid

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// TestResolve: the harness fits the temperature as relabel run's writer
// will: a fixed one is kept; without the pooled fit's transition the
// formula's; with it, the given labels' likelihood, which on states whose
// calibrating temperature is known (pi = p^.3 for a known posterior p, the
// labels drawn from p through the transition) finds it.
func TestResolve(t *testing.T) {
	const n, c, t0 = 6000, 3, 0.3
	tOwn := []float64{.6, .35, .05, .05, .6, .35, .35, .05, .6} // pair flips
	r := rand.New(rand.NewPCG(3, 4))
	draw := func(p []float64) int32 {
		u := r.Float64()
		for k, v := range p {
			if u -= v; u < 0 {
				return int32(k)
			}
		}
		return int32(len(p) - 1)
	}
	var st mixture.States
	st.ItemOff = []int32{0}
	var labels, off []int32
	off = append(off, 0)
	for range n {
		top := r.IntN(c)
		a := 0.5 + 0.45*r.Float64()
		p := make([]float64, c)
		order := []int{top, (top + 1) % c, (top + 2) % c}
		p[order[0]], p[order[1]], p[order[2]] = a, 0.8*(1-a), 0.2*(1-a)
		y := draw(p)
		labels = append(labels, draw(tOwn[int(y)*c:(int(y)+1)*c]))
		off = append(off, int32(len(labels)))
		var z float64
		for _, k := range order {
			z += math.Pow(p[k], t0)
		}
		for _, k := range order {
			st.Class = append(st.Class, int32(k))
			st.Pi = append(st.Pi, float32(math.Pow(p[k], t0)/z))
		}
		st.ItemOff = append(st.ItemOff, int32(len(st.Class)))
	}
	auto := resultio.Calibration{Auto: true, MinConfidence: 0.2}
	var stats mixture.CalibrationStats
	resultio.StatsOf(&stats, &st, func(i int) []int32 { return labels[off[i]:off[i+1]] }, nil, 0)

	if got := resolve(resultio.Calibration{Temperature: 0.4}, &st, labels, off, tOwn, c); got.Temperature != 0.4 || got.Auto {
		t.Errorf("fixed: %+v, want T .4", got)
	}
	formula := resolve(auto, &st, labels, off, nil, c)
	if formula.Auto || formula.Temperature != mixture.AutoTemperature(stats) || formula.MinConfidence != 0.2 {
		t.Errorf("no transition: %+v, want the formula's T %v", formula, mixture.AutoTemperature(stats))
	}
	lik := resolve(auto, &st, labels, off, tOwn, c)
	t.Logf("T: likelihood %.2f, formula %.3f, calibrating %.2f", lik.Temperature, formula.Temperature, t0)
	if math.Abs(lik.Temperature-t0) > 0.03 || lik.MinConfidence != 0.2 {
		t.Errorf("with the transition: %+v, want T %.2f +- .03 (formula %.3f)", lik, t0, formula.Temperature)
	}
}

// TestPooledCalibration: a pooled-start run in the harness calls the
// caller's OnPooled as well as the harness's own, and gives the same
// report twice.
func TestPooledCalibration(t *testing.T) {
	dir := t.TempDir()
	writeSynthetic(t, filepath.Join(dir, "blobs"), 600, 4, 3)
	cells, err := DevGrid(dir)
	if err != nil {
		t.Fatal(err)
	}
	cell := Only(cells, "pair-0.45")[0]
	calls := 0
	tweak := func(o *engine.Options) {
		o.Mixture.PooledIters, o.Mixture.PooledWeight, o.Mixture.PooledSplit = 10, 0.3, true
		o.OnPooled = func(*mixture.Pooled) { calls++ }
	}
	o := options.Defaults()
	o.L = 50
	opts := job.NewConfig(o)
	a, _, err := RunCellEngine(cell, opts, tweak)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := RunCellEngine(cell, opts, tweak)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("the caller's OnPooled ran %d times in two runs", calls)
	}
	if a.ECE != b.ECE || a.CleanedAccuracy != b.CleanedAccuracy || !a.ECE.Valid() {
		t.Errorf("two runs: ECE %v / %v, accuracy %v / %v", a.ECE, b.ECE, a.CleanedAccuracy, b.CleanedAccuracy)
	}
}
