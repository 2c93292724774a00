//go:build !cuda && !cudaemu

package gpu

import (
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// Built reports whether this binary carries a CUDA backend (build tag cuda,
// or cudaemu for the CPU emulator).
const Built = false

// Available reports whether the CUDA backend can run here: never, in a binary
// built without the cuda tag.
func Available() bool { return false }

// Err says why Available is false: ErrNotBuilt.
func Err() error { return ErrNotBuilt }

// Device describes the device in use; "" when none.
func Device() string { return "" }

// Index returns ErrNotBuilt.
func (Searcher) Index(knn.Matrix, []int64, knn.Metric) (knn.Index, error) { return nil, ErrNotBuilt }

// Code returns ErrNotBuilt.
func (Coder) Code([]float64, llc.Batch, llc.Params) error { return ErrNotBuilt }

// Round returns ErrNotBuilt.
func (Rounds) Round(engine.Batch, int, *mixture.Params) (mixture.States, int, error) {
	return mixture.States{}, 0, ErrNotBuilt
}
