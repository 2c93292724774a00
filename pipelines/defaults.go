package pipelines

import (
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// DefaultEngine returns the method's default options, chosen by measurement on
// the dev grid (docs/QUALITY.md): the CLI's flag defaults and the quality
// harness both start here, so what is measured is what users get.
func DefaultEngine() engine.Options {
	return engine.Options{
		K:           10,
		Standardise: true,
		Weighting:   engine.Blend,
		Rounds:      10,
		Mixture: mixture.Params{
			L:       250,
			Mu:      0.5,
			Gamma:   0.5,
			Alpha:   1.1,
			Beta:    1.1,
			EMIters: 10,
			Variant: mixture.Paper,
			Smooth:  0.1,
			// Several annotations per item keep a say every round (docs/QUALITY.md).
			AnnotationWeight: 0.05,
			Seed:             1,
		},
	}
}
