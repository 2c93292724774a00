package grid

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// harmBatchNM is harmBatch without the mutual neighbours: j is left out of
// item i's evidence when i is among j's neighbours, so that j's posterior
// did not read i's given label through its own neighbour list (the first
// order of the self-leak).
func harmBatchNM(r *harmRun) engine.GivenBatch {
	k := r.NbK
	mutual := make([]bool, len(r.NbIndex))
	for i := 0; i < len(r.Truth); i++ {
		for j := 0; j < k; j++ {
			x := r.NbIndex[i*k+j]
			if x < 0 {
				continue
			}
			for jj := 0; jj < k; jj++ {
				if r.NbIndex[int(x)*k+jj] == int32(i) {
					mutual[i*k+j] = true
				}
			}
		}
	}
	b := harmBatch(r)
	b.Neighbour = func(i, j int) (*mixture.States, int, float64) {
		if x := r.NbIndex[i*k+j]; x >= 0 && !mutual[i*k+j] {
			return &r.States, int(x), r.NbWeight[i*k+j]
		}
		return nil, 0, 0
	}
	return b
}

var lastNM string

// nmBayes chooses the temperature (and, with allPowers, the power) by the
// given labels' likelihood under the evidence of the non-mutual neighbours
// only; the output's posterior then reads every neighbour (final) or the
// non-mutual ones (!final).
func nmBayes(temps []float64, allPowers, final bool) func(r *harmRun) ([]int32, []float32) {
	return func(r *harmRun) ([]int32, []float32) {
		b, nm := harmBatch(r), harmBatchNM(r)
		best := math.Inf(-1)
		var bt, bp float64
		for _, t := range temps {
			ev, given := engine.GivenEvidence(nm, t, 2)
			var f *mixture.GivenFit
			var err error
			if allPowers {
				f, err = mixture.FitGiven(ev, given, r.C, t, 2)
			} else {
				f, err = mixture.FitGivenPrior(ev, given, r.C, t, 1, nil)
			}
			if err != nil {
				panic(err)
			}
			if f.LogLik > best {
				best, bt, bp = f.LogLik, t, f.Power
			}
		}
		src := b
		if !final {
			src = nm
		}
		ev, given := engine.GivenEvidence(src, bt, 2)
		f, err := mixture.FitGivenPrior(ev, given, r.C, bt, bp, nil)
		if err != nil {
			panic(err)
		}
		lastNM = fmt.Sprintf("T=%.2f p=%g", bt, bp)
		return harmTops(engine.GivenStates(src, f, 5, 2))
	}
}

// TestHarmNM: the given-label model with its sharpness chosen by the
// likelihood of the given labels under the non-mutual neighbours' evidence.
func TestHarmNM(t *testing.T) {
	if *harm == "" {
		t.Skip("-harm")
	}
	temps := append([]float64(nil), mixture.GivenTemperatures...)
	temps = append(temps, 1.5, 2, 3)
	rules := []rule{
		{"engine", engineRule(func(f *mixture.GivenFit) { lastNM = fmt.Sprintf("T=%.2f p=%g", f.T, f.Power) })},
		{"nmT", nmBayes(temps, false, true)},
		{"nmTP", nmBayes(temps, true, true)},
		{"nmTPo", nmBayes(temps, true, false)},
	}
	for _, set := range strings.Split(*harmSets, ",") {
		for _, nz := range strings.Split(*harmNoise, ",") {
			cell := harmCell(t, set, nz)
			r := harmLoad(t, cell)
			line := fmt.Sprintf("%-14s %-10s given %.4f |", set, nz, agreeFrac(r.Truth, r.Given))
			for _, ru := range rules {
				cl, pr := ru.f(r)
				a, ch, e := score(r, cl, pr)
				line += fmt.Sprintf(" %s %.4f ch %.3f ece %.3f %s |", ru.name, a, ch, e, lastNM)
			}
			t.Log(line)
		}
	}
}
