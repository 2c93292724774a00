package crowd

import (
	"math"
)

// FitStrength is the empirical-Bayes choice of the prior's weight: the s
// that maximises the Dirichlet-multinomial marginal likelihood of every
// annotator's rows of expected counts given the pooled rows as the prior's
// mean,
//
//	sum_a sum_c [ lnG(s) - lnG(N_a(c) + s) + sum_l lnG(N_a(c,l) + s P(c,l)) - lnG(s P(c,l)) ],
//
// searched over log s in [lo, hi] by golden section. A crowd whose
// annotators behave alike gets a strong prior (their matrices are pooled);
// one of experts and spammers a weak one (each keeps its own).
func FitStrength(m *Model, lo, hi float64) float64 {
	C := m.C
	f := func(ls float64) float64 {
		s := math.Exp(ls)
		lgs, _ := math.Lgamma(s)
		var ll float64
		for i := range m.Annotators {
			an := &m.Annotators[i]
			for _, r := range an.Row {
				if r > 0 {
					v, _ := math.Lgamma(r + s)
					ll += lgs - v
				}
			}
			for k, l := range an.Labels {
				for e := an.Off[k]; e < an.Off[k+1]; e++ {
					sp := s * m.Pooled[int(an.Class[e])*C+int(l)]
					a, _ := math.Lgamma(an.Count[e] + sp)
					b, _ := math.Lgamma(sp)
					ll += a - b
				}
			}
		}
		return ll
	}
	// Golden-section search for the maximum over log s.
	a, b := math.Log(lo), math.Log(hi)
	const g = 0.6180339887498949
	x1, x2 := b-g*(b-a), a+g*(b-a)
	f1, f2 := f(x1), f(x2)
	for it := 0; it < 40 && b-a > 0.05; it++ {
		if f1 < f2 {
			a, x1, f1 = x1, x2, f2
			x2 = a + g*(b-a)
			f2 = f(x2)
		} else {
			b, x2, f2 = x2, x1, f1
			x1 = b - g*(b-a)
			f1 = f(x1)
		}
	}
	return math.Exp((a + b) / 2)
}
