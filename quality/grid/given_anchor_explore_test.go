package grid

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// anchorA estimates the transition from anchor points: for each class c,
// the items whose (sharpened) evidence puts c on top with e(c) in the top
// q of those items; A(c, g) is the share of given label g among them.
func anchorA(ev []mixture.Evidence, given []int32, c int, power, q float64) []float64 {
	A := make([]float64, c*c)
	byClass := make([][]float64, c)
	top := make([]int32, len(ev))
	val := make([]float64, len(ev))
	var sh mixture.Evidence
	for i := range ev {
		top[i] = -1
		mixture.Sharpen(&sh, &ev[i], power)
		if len(sh.P) == 0 {
			continue
		}
		b := 0
		for k := range sh.P {
			if sh.P[k] > sh.P[b] {
				b = k
			}
		}
		top[i], val[i] = sh.Class[b], sh.P[b]
		byClass[top[i]] = append(byClass[top[i]], val[i])
	}
	thr := make([]float64, c)
	for k := range c {
		v := byClass[k]
		if len(v) == 0 {
			thr[k] = math.Inf(1)
			continue
		}
		slices.Sort(v)
		x := int(math.Floor(float64(len(v)) * (1 - q)))
		x = min(max(x, 0), len(v)-1)
		thr[k] = v[x]
	}
	for i := range ev {
		if top[i] < 0 || given[i] < 0 {
			continue
		}
		if val[i] >= thr[top[i]] {
			A[int(top[i])*c+int(given[i])]++
		}
	}
	for k := range c {
		row := A[k*c : (k+1)*c]
		s := 0.0
		for l := range row {
			s += row[l]
			row[l] += 1 / float64(c)
		}
		for l := range row {
			row[l] /= s + 1
		}
		if s == 0 {
			for l := range row {
				row[l] = 0.2 / float64(c-1)
			}
			row[k] = 0.8
		}
	}
	return A
}

// givenLL is the given labels' log-likelihood under evidence at power and A.
func givenLL(ev []mixture.Evidence, given []int32, c int, power float64, A []float64) float64 {
	var sh mixture.Evidence
	ll := 0.0
	for i := range ev {
		g := given[i]
		if g < 0 {
			continue
		}
		mixture.Sharpen(&sh, &ev[i], power)
		s := 0.0
		for x := range c {
			m := sh.Mass(int32(x))*(1-1e-6) + 1e-6/float64(c)
			s += m * A[x*c+int(g)]
		}
		ll += math.Log(s)
	}
	return ll
}

func anchorRule(q float64, choosePower bool) func(r *harmRun) ([]int32, []float32) {
	return func(r *harmRun) ([]int32, []float32) {
		b := harmBatch(r)
		f, err := engine.FitGivenBatch(b, r.C, 1, 2)
		if err != nil {
			panic(err)
		}
		ev, given := engine.GivenEvidence(b, f.T, 2)
		if choosePower {
			best := math.Inf(-1)
			for _, p := range mixture.GivenPowers {
				A := anchorA(ev, given, r.C, p, q)
				if ll := givenLL(ev, given, r.C, p, A); ll > best {
					best, f.Power, f.A = ll, p, A
				}
			}
		} else {
			f.A = anchorA(ev, given, r.C, f.EvidencePower(), q)
		}
		lastT = f.Power
		return harmTops(engine.GivenStates(b, f, 5, 2))
	}
}

func TestHarmAnchor(t *testing.T) {
	if *harm == "" {
		t.Skip("-harm")
	}
	rules := []rule{
		{"engine", engineRule(func(f *mixture.GivenFit) { lastT = f.Power })},
		{"a02", anchorRule(0.02, false)}, {"a10", anchorRule(0.1, false)}, {"a30", anchorRule(0.3, false)},
		{"a10p", anchorRule(0.1, true)}, {"a30p", anchorRule(0.3, true)},
	}
	for _, set := range strings.Split(*harmSets, ",") {
		for _, nz := range strings.Split(*harmNoise, ",") {
			cell := harmCell(t, set, nz)
			r := harmLoad(t, cell)
			line := fmt.Sprintf("%-10.10s %-10s given %.4f vote %.4f |", set, nz, agreeFrac(r.Truth, r.Given), agreeFrac(r.Truth, r.Vote))
			for _, ru := range rules {
				cl, pr := ru.f(r)
				a, ch, e := score(r, cl, pr)
				line += fmt.Sprintf(" %s %.4f ch %.3f ece %.3f p%g |", ru.name, a, ch, e, lastT)
			}
			t.Log(line)
		}
	}
}
