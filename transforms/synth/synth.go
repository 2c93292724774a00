package synth

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Params describes a synthetic dataset.
type Params struct {
	// Rows is the number of rows (ids 0..Rows-1). Required.
	Rows int64
	// D is the feature dimension. Required.
	D int
	// Classes is C. Required, >= 2.
	Classes int
	// Noise is the fraction of labels flipped to another class, in [0, 1).
	Noise float64
	// Rank is the number of directions a class spreads along, >= 1.
	// Default DefaultRank(D) = min(D, 8).
	Rank int
	// Separation is the standard deviation of the class means' coordinates.
	// Default DefaultSeparation, 0.25.
	Separation float64
	// Spread is the standard deviation of a class along its directions (per
	// coordinate, summed over the Rank directions). Default DefaultSpread, 1.
	Spread float64
	// Jitter is the isotropic noise's standard deviation. Default
	// DefaultJitter, 0.6. The defaults make a 10-NN vote of labels with 30% symmetric noise
	// about 93% right at d = 64, C = 20 on 4000 rows (TestLearnable): a task
	// as hard as the dev data's.
	Jitter float64
	// Seed seeds everything.
	Seed uint64
}

// The generator's defaults (see Params).
const (
	MaxDefaultRank    = 8
	DefaultSeparation = 0.25
	DefaultSpread     = 1.0
	DefaultJitter     = 0.6
)

// DefaultRank is Rank's default for dimension d: min(d, MaxDefaultRank).
func DefaultRank(d int) int { return min(d, MaxDefaultRank) }

// DefaultParams describes a dataset of rows rows of dimension d, classes
// classes, a noise share of labels flipped and seed seed (the fields a
// dataset needs), every other field its default: the one place synth's
// defaults are resolved. Callers change what they mean to.
func DefaultParams(rows int64, d, classes int, noise float64, seed uint64) Params {
	return Params{Rows: rows, D: d, Classes: classes, Noise: noise, Seed: seed,
		Rank: DefaultRank(d), Separation: DefaultSeparation, Spread: DefaultSpread, Jitter: DefaultJitter}
}

// Validate checks p.
func (p Params) Validate() error {
	var errs []error
	if p.Rows < 1 {
		errs = append(errs, fmt.Errorf("rows = %d, want >= 1", p.Rows))
	}
	if p.D < 1 {
		errs = append(errs, fmt.Errorf("d = %d, want >= 1", p.D))
	}
	if p.Classes < 2 {
		errs = append(errs, fmt.Errorf("classes = %d, want >= 2", p.Classes))
	}
	if p.Noise < 0 || p.Noise >= 1 || math.IsNaN(p.Noise) {
		errs = append(errs, fmt.Errorf("noise = %g, want in [0, 1)", p.Noise))
	}
	if p.Rank < 1 {
		errs = append(errs, fmt.Errorf("rank = %d, want >= 1", p.Rank))
	}
	if p.Separation < 0 || p.Spread < 0 || p.Jitter < 0 {
		errs = append(errs, fmt.Errorf("separation = %g, spread = %g, jitter = %g, want >= 0", p.Separation, p.Spread, p.Jitter))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// Generator produces rows of one dataset. It is safe for concurrent use.
type Generator struct {
	p Params
	// mean is C x D; basis is C x Rank x D (each class's spread directions
	// scaled by Spread/sqrt(Rank), so the spread's total variance per
	// coordinate is about Spread^2).
	mean, basis []float64
}

// New builds the class parameters.
func New(p Params) (*Generator, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{p: p, mean: make([]float64, p.Classes*p.D), basis: make([]float64, p.Classes*p.Rank*p.D)}
	scale := p.Spread / math.Sqrt(float64(p.Rank))
	for c := 0; c < p.Classes; c++ {
		rng := rand.New(rand.NewPCG(p.Seed, 1<<63|uint64(c)))
		for j := range p.D {
			g.mean[c*p.D+j] = rng.NormFloat64() * p.Separation
		}
		b := g.basis[c*p.Rank*p.D : (c+1)*p.Rank*p.D]
		for j := range b {
			b[j] = rng.NormFloat64() * scale
		}
	}
	return g, nil
}

// Params returns the parameters, defaults filled.
func (g *Generator) Params() Params { return g.p }

// Rows writes rows [lo, hi): ids, features ((hi-lo) x D into x), the true
// class and the given (possibly flipped) label of each. Slices must have room
// for hi-lo rows.
func (g *Generator) Rows(lo, hi int64, ids []int64, x []float32, truth, given []int32) {
	p := g.p
	d, r := p.D, p.Rank
	z := make([]float64, r)
	row := make([]float64, d)
	var src rand.PCG
	rng := rand.New(&src)
	for i := lo; i < hi; i++ {
		a := i - lo
		src.Seed(p.Seed, uint64(i))
		c := rng.IntN(p.Classes)
		ids[a] = i
		truth[a] = int32(c)
		given[a] = int32(c)
		if rng.Float64() < p.Noise {
			o := rng.IntN(p.Classes - 1)
			if o >= c {
				o++
			}
			given[a] = int32(o)
		}
		for k := range z {
			z[k] = rng.NormFloat64()
		}
		copy(row, g.mean[c*d:(c+1)*d])
		for k, zk := range z {
			b := g.basis[(c*r+k)*d : (c*r+k+1)*d]
			for j, v := range b {
				row[j] += zk * v
			}
		}
		out := x[a*int64(d) : (a+1)*int64(d)]
		for j := range out {
			out[j] = float32(row[j] + p.Jitter*rng.NormFloat64())
		}
	}
}
