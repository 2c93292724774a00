package gpu

import (
	"fmt"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

// Kernels is what a device (--device) resolves to: the kNN search, the LLC
// coder and the rounds (sample + MAP-EM) to run, and a description for
// summary.json.
type Kernels struct {
	Searcher knn.Searcher
	Coder    llc.Coder
	// Rounder runs the rounds: Rounds on CUDA, else engine.CPU{} (whose
	// caller sets its Workers and Scratch).
	Rounder engine.Rounder
	About   string
}

// Resolve resolves a device (--device: cpu, cuda or auto) to its kernels.
// auto takes CUDA when this binary was built with the cuda tag and a device
// answers, else the CPU; cuda insists. It lives beside the kernels, not in
// the stages that use them: which kernel runs is the kernels' concern, and
// every caller (the stages' Setup, the lake's search, the plan) resolves a
// device alike.
func Resolve(device string) (Kernels, error) {
	cpu := Kernels{knn.CPU{}, llc.CPU{}, engine.CPU{}, "cpu (" + knn.BLASImplementation() + ")"}
	switch device {
	case "", "auto":
		if Available() {
			return Kernels{Searcher{}, Coder{}, Rounds{}, "cuda " + Device()}, nil
		}
		return cpu, nil
	case "cpu":
		return cpu, nil
	case "cuda":
		if !Available() {
			return Kernels{}, fmt.Errorf("gpu: --device cuda: %w", Err())
		}
		return Kernels{Searcher{}, Coder{}, Rounds{}, "cuda " + Device()}, nil
	}
	return Kernels{}, fmt.Errorf("gpu: --device %q: want cpu, cuda or auto", device)
}

// Backends is Resolve's kNN and LLC kernels and description.
func Backends(device string) (knn.Searcher, llc.Coder, string, error) {
	k, err := Resolve(device)
	return k.Searcher, k.Coder, k.About, err
}

// RoundsOn is Resolve(device)'s Rounder as a stage runs it: the device's
// own, or the CPU's on the stage's workers goroutines with its scratch
// (engine.WithWorkers).
func RoundsOn(device string, workers int, scratch *pool.Scratch[engine.RoundScratch]) (engine.Rounder, error) {
	k, err := Resolve(device)
	if err != nil {
		return nil, err
	}
	return engine.WithWorkers(k.Rounder, workers, scratch), nil
}
