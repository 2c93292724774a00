//go:build cudaemu

package stages

import (
	"testing"

	"github.com/relabel/relabel/gpu"
)

// TestRoundsSetupDevice: with a device (here the emulated one) Setup
// resolves its Rounder for --device cuda and auto.
func TestRoundsSetupDevice(t *testing.T) {
	for _, device := range []string{"cuda", "auto", ""} {
		f := &roundsFn{Workers: 2, Device: device}
		if err := f.Setup(); err != nil {
			t.Fatalf("--device %q: %v", device, err)
		}
		if _, ok := f.rounder.(gpu.Rounds); !ok {
			t.Errorf("--device %q: Setup resolved %#v, want gpu.Rounds", device, f.rounder)
		}
	}
}
