package mixture

import "math"

// DefaultTemperature is the fixed temperature relabel used before the
// temperature was fitted per run (AutoTemperature); `--temperature 0.25`
// reproduces it. pi is a mixture proportion: the share of an item's
// neighbourhood label distribution that each clean class explains (section
// 3 of the paper), not the probability that the class is the item's clean
// label; it is systematically flat (mean top mass .55 on digits where the
// top class is right 97.5% of the time: expected calibration error .36-.43
// on every dev-grid cell). Raising pi to 1/T and renormalising keeps its
// order (the clean label, the ranking of suspects) and fixes its scale.
const DefaultTemperature = 0.25

// CalibrationStats are the label-free statistics of a run's final states
// that AutoTemperature reads: how many labelled items have a state, how
// many of them change label, and the pi those changed items keep on their
// given label. The sums are integers (the mass in fixed point, massScale
// units) so that adding them up in any order, on any runner and worker
// count, gives the same temperature bit for bit.
type CalibrationStats struct {
	Labelled  int64
	Changed   int64
	GivenMass int64
	// Multi counts the labelled items with several annotations.
	Multi int64
	// LikItems counts the items AddLabelLikelihood added (0: the run did
	// not start from the pooled posterior, and AutoTemperature uses its
	// formula).
	LikItems int64
	// LogLik[j] is the sum over those items of the log-likelihood of the
	// item's given label at temperature LikTemperature(j), in massScale
	// fixed point (nil when LikItems is 0).
	LogLik []int64
}

// massScale is the fixed-point unit of GivenMass: 2^-24, float32's
// resolution at 1; 2^39 items fit before an int64 overflows.
const massScale = 1 << 24

// Add counts one item: its state's classes and pi (most probable first),
// its given label (negative: unlabelled, not counted) and how many
// annotations gave it.
func (s *CalibrationStats) Add(class []int32, pi []float32, given int32, annotations int) {
	if given < 0 || len(class) == 0 {
		return
	}
	s.Labelled++
	if annotations > 1 {
		s.Multi++
	}
	if class[0] == given {
		return
	}
	s.Changed++
	for e, c := range class {
		if c == given {
			s.GivenMass += int64(math.Round(float64(pi[e]) * massScale))
			break
		}
	}
}

// Merge returns s + o (a new LogLik: neither operand's is written to). An
// operand without likelihood sums (LogLik nil, or empty as a coder may
// decode it) adds none.
func (s CalibrationStats) Merge(o CalibrationStats) CalibrationStats {
	var ll []int64
	if len(s.LogLik) == likGrid || len(o.LogLik) == likGrid {
		ll = make([]int64, likGrid)
		for j := range ll {
			if len(s.LogLik) == likGrid {
				ll[j] += s.LogLik[j]
			}
			if len(o.LogLik) == likGrid {
				ll[j] += o.LogLik[j]
			}
		}
	}
	return CalibrationStats{s.Labelled + o.Labelled, s.Changed + o.Changed, s.GivenMass + o.GivenMass, s.Multi + o.Multi,
		s.LikItems + o.LikItems, ll}
}

// The temperatures the label likelihood is summed at: minAutoT, minAutoT +
// .01, ..., maxAutoT. A grid, not a search, so that the sums are
// one pass over the items in any order; the step is below what the ECE
// resolves (on the dev grid's pair cells a step of .005 instead moves the
// maximum by at most .005 and the ECE by at most .0014).
const (
	likFirst = 10 // minAutoT in hundredths
	likGrid  = 91 // (maxAutoT - minAutoT) / .01 + 1
	// likFloor bounds an item's label likelihood from below, so that one
	// item whose kept classes all give its label probability 0 (no
	// pseudo-count in the transition) cannot decide the sum.
	likFloor = 1e-12
)

// LikTemperature is the temperature of LogLik[j], counted in hundredths so
// that it is the float nearest the decimal (.31, not .31000000000000005, in
// the output's recorded temperature).
func LikTemperature(j int) float64 { return float64(likFirst+j) / 100 }

// AddLabelLikelihood adds one item's likelihood of its given label to
// LogLik at every temperature of the grid: with q the item's pi tempered
// (Temper) and tOwn the transition of the given labels that the run's
// pooled fit estimated (row-major c x c, tOwn[k*c+l] = p(given label l |
// clean class k): Pooled.TOwn), the likelihood is sum over the kept
// classes k of q(k) tOwn(k, given). Call it, beside Add, for every item
// of a run that started from the pooled posterior (the pooled gate open);
// an unlabelled item or an empty state adds nothing. It panics if tOwn is
// not c x c or a class is outside [0, c) (a programmer error).
func (s *CalibrationStats) AddLabelLikelihood(tOwn []float64, c int, class []int32, pi []float32, given int32) {
	if len(tOwn) != c*c {
		panic("mixture: label likelihood: transition is not c x c")
	}
	if given < 0 || len(class) == 0 || pi[0] <= 0 {
		return
	}
	if len(s.LogLik) != likGrid {
		s.LogLik = make([]int64, likGrid)
	}
	s.LikItems++
	// Tempered in log space relative to the top class (pi[0], the
	// largest): q(k) = exp((log pi(k) - log pi(0)) / T) / z.
	var rel [16]float64
	d := rel[:0]
	if len(pi) > len(rel) {
		d = make([]float64, 0, len(pi))
	}
	l0 := math.Log(float64(pi[0]))
	for _, p := range pi {
		if p > 0 {
			d = append(d, math.Log(float64(p))-l0)
		} else {
			d = append(d, math.Inf(-1))
		}
	}
	for j := range s.LogLik {
		inv := 1 / LikTemperature(j)
		var z, lik float64
		for e, v := range d {
			w := math.Exp(v * inv)
			z += w
			lik += w * tOwn[int(class[e])*c+int(given)]
		}
		s.LogLik[j] += int64(math.Round(math.Log(max(lik/z, likFloor)) * massScale))
	}
}

// LikelihoodTemperature is the grid temperature at which the given labels
// are most likely (the smallest of equal ones; 0 without LogLik).
func (s CalibrationStats) LikelihoodTemperature() float64 {
	if s.LikItems == 0 || len(s.LogLik) != likGrid {
		return 0
	}
	best := 0
	for j, v := range s.LogLik {
		if v > s.LogLik[best] {
			best = j
		}
	}
	return LikTemperature(best)
}

// ChangedShare is the share of labelled items whose label changes (0
// without any).
func (s CalibrationStats) ChangedShare() float64 {
	if s.Labelled == 0 {
		return 0
	}
	return float64(s.Changed) / float64(s.Labelled)
}

// GivenShare is the mean pi a changed item keeps on its given label (0
// without any).
func (s CalibrationStats) GivenShare() float64 {
	if s.Changed == 0 {
		return 0
	}
	return float64(s.GivenMass) / massScale / float64(s.Changed)
}

// Coefficients of AutoTemperature, and the range it is clamped to.
const (
	autoT0, autoTChanged, autoTGiven = 0.68, -0.35, -1.15
	minAutoT, maxAutoT               = 0.1, 1.0
)

// AutoTemperature is the temperature that calibrates a run's pi, from the
// run's own label-free statistics:
//
//	T = 0.68 - 0.35 s - 1.15 g   (clamped to [0.1, 1])
//
// with s the share of labelled items whose label changes (the model's own
// estimate of the noise rate) and g the mean pi a changed item keeps on its
// given label (the noise's structure: pair-flip noise leaves the wrong
// label a large share of the neighbourhood, .28-.36 on the dev grid,
// symmetric noise .13-.20). One fixed temperature cannot serve every
// dataset: low symmetric noise wants a flatter map (a changed label is
// less often right when few labels are wrong; best T .30-.52 on the
// sym-0.2 cells), pair-flip noise a sharper one (.09-.29). The three
// coefficients were fitted on the dev grid to the worst cell's expected
// calibration error, with relabel's defaults (refitted when C0 became 5 and
// L 100: sharper states want a higher T); refitted with each dataset left
// out in turn, the held-out cells' worst ECE is .053 against .073 for the
// best fixed temperature (docs/QUALITY.md, the calibration section). No trusted
// label is used at run time.
//
// A run that started from the pooled posterior (the pooled gate open:
// structured noise such as pair flips) and added its items'
// AddLabelLikelihood takes instead the temperature at which its given
// labels are most likely through the transition its pooled fit estimated
// (LikelihoodTemperature): the model's own estimate of how often, and into
// which class, a label is wrong, asked how sharp the posteriors must be to
// explain the labels it was given. No coefficient is fitted. The formula
// above was fitted on runs that start from the given labels and sharpens
// those runs too far where the neighbours are weak (satellite pair-0.45
// ECE .068, fashion .082: the mass a changed item keeps on its given label
// measures the noise's structure, not the cleaned labels' accuracy). The
// likelihood does not serve unstructured noise: a symmetric transition at
// rate r gives a changed item's given label r/(C-1), so flattening every
// row to buy those labels back wins (T .35-.81, ECE .075-.29 on the dev
// grid's 22 cells whose gate stays shut, .007-.046 with the formula);
// those runs keep the formula. docs/QUALITY.md, the calibration section,
// has the figures.
//
// The fit holds for one label per item. Where most labelled items carry
// several annotations, the given label is their majority, rarely wrong and
// rarely changed, so the share no longer measures the labels' noise (it
// would ask for T ~ .5 where the dev grid's annotators-5 cells want
// .15-.25): those runs keep DefaultTemperature (ECE .008 there).
func AutoTemperature(s CalibrationStats) float64 {
	if 2*s.Multi > s.Labelled {
		return DefaultTemperature
	}
	if s.LikItems > 0 {
		return s.LikelihoodTemperature()
	}
	t := autoT0 + autoTChanged*s.ChangedShare() + autoTGiven*s.GivenShare()
	return min(max(t, minAutoT), maxAutoT)
}

// Temper writes p (an item's posterior entries, summing to at most 1) raised
// to 1/t and renormalised into dst, and returns it; t = 1 copies p.
func Temper(dst, p []float32, t float64) []float32 {
	dst = append(dst[:0], p...)
	if t == 1 || len(p) == 0 {
		return dst
	}
	var z float64
	// A posterior holds a few classes: room on the stack for them, as
	// Temper runs once per neighbour state and temperature.
	var buf [16]float64
	tmp := buf[:0]
	if len(p) > len(buf) {
		tmp = make([]float64, len(p))
	}
	tmp = tmp[:len(p)]
	for k, v := range p {
		if v > 0 {
			tmp[k] = math.Pow(float64(v), 1/t)
			z += tmp[k]
		}
	}
	if z == 0 || math.IsInf(z, 0) || math.IsNaN(z) {
		return dst
	}
	for k := range dst {
		dst[k] = float32(tmp[k] / z)
	}
	return dst
}
