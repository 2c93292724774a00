package gpu

import (
	"fmt"

	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

// Backends resolves a device (--device: cpu, cuda or auto) to the kNN and
// LLC kernels and a description for summary.json. auto takes CUDA when this
// binary was built with the cuda tag and a device answers, else the CPU;
// cuda insists. It lives beside the kernels, not in the stages that use
// them: which kernel runs is the kernels' concern, and every caller (the
// stages' Setup, the lake's search, the plan) resolves a device alike.
func Backends(device string) (knn.Searcher, llc.Coder, string, error) {
	switch device {
	case "", "auto":
		if Available() {
			return Searcher{}, Coder{}, "cuda " + Device(), nil
		}
		return knn.CPU{}, llc.CPU{}, "cpu (" + knn.BLASImplementation() + ")", nil
	case "cpu":
		return knn.CPU{}, llc.CPU{}, "cpu (" + knn.BLASImplementation() + ")", nil
	case "cuda":
		if !Available() {
			return nil, nil, "", fmt.Errorf("gpu: --device cuda: %w", Err())
		}
		return Searcher{}, Coder{}, "cuda " + Device(), nil
	}
	return nil, nil, "", fmt.Errorf("gpu: --device %q: want cpu, cuda or auto", device)
}
