package stages

import (
	"fmt"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

// Backends resolves --device (cpu, cuda or auto) to the kNN and LLC kernels and
// a description for summary.json. auto takes CUDA when this binary was built
// with the cuda tag and a device answers, else the CPU; cuda insists.
func Backends(device string) (knn.Searcher, llc.Coder, string, error) {
	switch device {
	case "", "auto":
		if gpu.Available() {
			return gpu.Searcher{}, gpu.Coder{}, "cuda " + gpu.Device(), nil
		}
		return knn.CPU{}, llc.CPU{}, "cpu (" + knn.BLASImplementation() + ")", nil
	case "cpu":
		return knn.CPU{}, llc.CPU{}, "cpu (" + knn.BLASImplementation() + ")", nil
	case "cuda":
		if !gpu.Available() {
			return nil, nil, "", fmt.Errorf("stages: --device cuda: %w", gpu.Err())
		}
		return gpu.Searcher{}, gpu.Coder{}, "cuda " + gpu.Device(), nil
	}
	return nil, nil, "", fmt.Errorf("stages: --device %q: want cpu, cuda or auto", device)
}
