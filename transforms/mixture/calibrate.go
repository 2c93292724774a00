package mixture

import "math"

// DefaultTemperature is the temperature that calibrates pi's probabilities
// with the default options. pi is a mixture proportion: the share of an
// item's neighbourhood label distribution that each clean class explains
// (section 3 of the paper), not the probability that the class is the
// item's clean label; it is systematically flat (mean top mass .55 on digits
// where the top class is right 97.5% of the time: expected calibration error
// .36-.43 on every dev-grid cell). Raising pi to 1/T and renormalising keeps
// its order (the clean label, the ranking of suspects) and fixes its scale.
// T = 0.25 was fitted on the dev grid (docs/QUALITY.md, the calibration
// section); no trusted label is used at run time. Per-run fits without
// labels (matching the model's implied agreement with the given labels) were
// measured first and miss by more: see docs/QUALITY.md.
const DefaultTemperature = 0.25

// Temper writes p (an item's posterior entries, summing to at most 1) raised
// to 1/t and renormalised into dst, and returns it; t = 1 copies p.
func Temper(dst, p []float32, t float64) []float32 {
	dst = append(dst[:0], p...)
	if t == 1 || len(p) == 0 {
		return dst
	}
	var z float64
	tmp := make([]float64, len(p))
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
