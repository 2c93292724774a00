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
//
// The spread is measured around the pooled rows, not around each
// annotator's skill-adjusted mean (Model), although the rows are shrunk
// toward the latter: that mean is fitted to the annotator's own labels, so
// its rows look closer to it than they are, and the strength fitted around
// it came out two to six times larger on the dense real crowds, shrinking
// away their annotators' class-specific biases (snow_rte: .921 against .929
// with the pooled centre; docs/QUALITY_CROWD.md).
func FitStrength(m *Model, lo, hi float64) float64 {
	C := m.C
	mu := make([]float64, C)
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
				m.mean(mu, nil, l)
				for e := an.Off[k]; e < an.Off[k+1]; e++ {
					sp := s * mu[an.Class[e]]
					a, _ := math.Lgamma(an.Count[e] + sp)
					b, _ := math.Lgamma(sp)
					ll += a - b
				}
			}
		}
		return ll
	}
	return goldenMax(f, math.Log(lo), math.Log(hi))
}

// FitSkill is the empirical-Bayes weight t of the Beta prior on the
// annotators' accuracies, centred on the pool's (m.Accuracy = Q): the t
// that maximises the beta-binomial marginal likelihood of every annotator's
// expected right (R_a) and wrong (W_a) labels,
//
//	sum_a [ lnG(t) - lnG(R_a + W_a + t) + lnG(R_a + t Q) - lnG(t Q) + lnG(W_a + t (1-Q)) - lnG(t (1-Q)) ],
//
// over log t in [lo, hi]. Annotators who differ in skill get a weak prior
// (each one's own accuracy counts after a few labels), alike ones a strong
// one.
func FitSkill(m *Model, lo, hi float64) float64 {
	q := m.Accuracy
	var right, n []float64
	m.skillCounts(func(r, k float64) {
		if k > 0 {
			right = append(right, r)
			n = append(n, k)
		}
	})
	f := func(lt float64) float64 {
		t := math.Exp(lt)
		lgt, _ := math.Lgamma(t)
		lq, _ := math.Lgamma(t * q)
		lw, _ := math.Lgamma(t * (1 - q))
		var ll float64
		for i, r := range right {
			a, _ := math.Lgamma(n[i] + t)
			b, _ := math.Lgamma(r + t*q)
			c, _ := math.Lgamma(max(0, n[i]-r) + t*(1-q))
			ll += lgt - a + b - lq + c - lw
		}
		return ll
	}
	return goldenMax(f, math.Log(lo), math.Log(hi))
}

// goldenMax is exp of the argmax of f over [a, b] by golden-section search
// (f unimodal there), to within 0.05 in log.
func goldenMax(f func(float64) float64, a, b float64) float64 {
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
