package resultio

import (
	"fmt"
	"math"

	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/mixture"
)

// Calibration maps an item's final state to the probabilities and label the
// output gives: what clean_label, clean_prob, given_label_prob, changed and
// posterior mean. The pipeline's writer stage, the lake's incremental
// writes and the quality harness all go through it, so that they agree.
type Calibration struct {
	// Temperature calibrates pi: the output's posterior is pi^(1/T)
	// renormalised (mixture.Temper; mixture.DefaultTemperature says why).
	// Required, > 0, unless Auto; 1 leaves pi as it is.
	Temperature float64
	// Auto fits the temperature to the run's final states
	// (mixture.AutoTemperature of their CalibrationStats, Resolve) instead.
	Auto bool
	// MinConfidence makes the relabelling conservative: a labelled row's
	// label is changed only where the calibrated clean_prob is at least
	// MinConfidence; elsewhere clean_label stays the given label (with its
	// probability) and changed is false. Optional, default 0: every row
	// takes its most probable class.
	MinConfidence float64
}

// MetaCalibratedTemperature is the output files' metadata key (after
// schemas.MetaOptionPrefix), and summary.json's option, of the temperature
// their probabilities were made with: with --temperature auto the option
// says "auto" and this the fitted value, which an incremental run keeps.
const MetaCalibratedTemperature = "calibrated-temperature"

// Validate checks c.
func (c Calibration) Validate() error {
	if !c.Auto && (!(c.Temperature > 0) || math.IsInf(c.Temperature, 0)) {
		return fmt.Errorf("resultio: calibration temperature %v, want > 0", c.Temperature)
	}
	if !(c.MinConfidence >= 0 && c.MinConfidence <= 1) {
		return fmt.Errorf("resultio: min confidence %v outside [0, 1]", c.MinConfidence)
	}
	return nil
}

// Resolve returns c with its temperature fitted to stats when c.Auto.
func (c Calibration) Resolve(stats mixture.CalibrationStats) Calibration {
	if c.Auto {
		c.Temperature, c.Auto = mixture.AutoTemperature(stats), false
	}
	return c
}

// StatsOf adds the items of st to stats; labels(i) is item i's
// annotations (one for a single label). tOwn, when not nil, is the c x c
// transition of the given labels that the run's pooled fit estimated
// (mixture.Pooled.TOwn) where the run started from the pooled posterior:
// each item's likelihood of its given label is then added too, from which
// AutoTemperature takes the temperature (mixture.AddLabelLikelihood says
// why). The writer and the quality harness both count through here, so
// that relabel run and the harness fit the same temperature.
func StatsOf(stats *mixture.CalibrationStats, st *mixture.States, labels func(i int) []int32, tOwn []float64, c int) {
	for i := 0; i < st.Len(); i++ {
		lo, hi := st.ItemOff[i], st.ItemOff[i+1]
		l := labels(i)
		given := schemas.GivenLabel(l)
		stats.Add(st.Class[lo:hi], st.Pi[lo:hi], given, len(l))
		if tOwn != nil {
			stats.AddLabelLikelihood(tOwn, c, st.Class[lo:hi], st.Pi[lo:hi], given)
		}
	}
}

// Clean is one item's output: its clean label (Unlabelled when its state is
// empty), that label's calibrated probability, the given label's (NaN when
// unlabelled), whether the label changed, and the calibrated posterior
// entries in post (the state's order: most probable first).
func (c Calibration) Clean(st *mixture.States, i int, given int32, post []float32) (clean int32, cleanProb, givenProb float32, changed bool, out []float32) {
	if c.Auto {
		panic("resultio: Calibration.Clean before Resolve") // a programmer error
	}
	lo, hi := st.ItemOff[i], st.ItemOff[i+1]
	out = mixture.Temper(post, st.Pi[lo:hi], c.Temperature)
	clean, cleanProb, givenProb = schemas.Unlabelled, 0, float32(math.NaN())
	if hi > lo {
		clean, cleanProb = st.Class[lo], out[0]
	}
	if given < 0 {
		return clean, cleanProb, givenProb, false, out
	}
	givenProb = 0
	for e := lo; e < hi; e++ {
		if st.Class[e] == given {
			givenProb = out[e-lo]
		}
	}
	if clean >= 0 && clean != given && cleanProb < float32(c.MinConfidence) {
		clean, cleanProb = given, givenProb // not sure enough to change it
	}
	return clean, cleanProb, givenProb, clean >= 0 && clean != given, out
}

// Fill sets the output columns of c (clean label and probabilities,
// changed, posterior) from its rows' final states st, one item per row of
// c, whose ids and labels are set.
func (cal Calibration) Fill(c *schemas.Cleaned, st *mixture.States) {
	n := c.Len()
	c.CleanLabel, c.CleanProb, c.GivenProb = make([]int32, n), make([]float32, n), make([]float32, n)
	c.Changed, c.PostOff = make([]bool, n), make([]int32, n+1)
	var post []float32
	for i := 0; i < n; i++ {
		given := schemas.GivenLabel(c.Labels[c.LabelOff[i]:c.LabelOff[i+1]])
		c.CleanLabel[i], c.CleanProb[i], c.GivenProb[i], c.Changed[i], post = cal.Clean(st, i, given, post)
		c.PostClass = append(c.PostClass, st.Class[st.ItemOff[i]:st.ItemOff[i+1]]...)
		c.PostProb = append(c.PostProb, post...)
		c.PostOff[i+1] = int32(len(c.PostClass))
	}
}
