//go:build cuda || cudaemu

package gpu

import (
	"testing"

	"github.com/relabel/relabel/transforms/engine/roundstest"
)

// TestRounds runs the rounds' conformance suite on the kernels (and, for
// the settings they leave to the CPU, on that fallback): the CPU's draws
// vector for vector, the states within roundstest.Tol, the same bytes for
// any split. Block 7 makes every batch several launches.
func TestRounds(t *testing.T) {
	needDevice(t)
	roundstest.Run(t, Rounds{})
	t.Run("small-blocks", func(t *testing.T) { roundstest.Run(t, Rounds{Block: 7}) })
}
