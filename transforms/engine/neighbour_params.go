package engine

import (
	"errors"
	"fmt"

	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// NeighbourParams configures a neighbour search and its weights: the
// pipeline's neighbour stages (exact, and ivf's inside its blocks) take it.
// Every field is required unless said otherwise; nothing is defaulted here
// (the run's resolution fills it in).
type NeighbourParams struct {
	// K is the number of neighbours per item, >= 1.
	K int
	// Metric ranks neighbours.
	Metric knn.Metric
	// Standardise z-scores features with the global moments before the
	// search.
	Standardise bool
	// Weighting and LLC: how neighbours are weighted (WeightBuffer);
	// LLC is used by the LLC and Blend weightings.
	Weighting Weighting
	LLC       llc.Params
	// Mixture gives the initial states (C, C0, Smooth, and whether rounds
	// need them kept: UsesInit).
	Mixture mixture.Params
	// Device selects the kernels: cpu, cuda or auto (gpu.Backends).
	Device string
}

// Validate checks p.
func (p NeighbourParams) Validate() error {
	var errs []error
	if p.K < 1 {
		errs = append(errs, fmt.Errorf("engine: neighbours: K = %d, want >= 1", p.K))
	}
	if p.Weighting != Uniform {
		if err := p.LLC.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("engine: neighbours: %w", err))
		}
	}
	if err := p.Mixture.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("engine: neighbours: %w", err))
	}
	return errors.Join(errs...)
}
