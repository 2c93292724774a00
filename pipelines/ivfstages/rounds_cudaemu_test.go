//go:build cudaemu

package ivfstages

import (
	"testing"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/transforms/engine"
)

// TestRoundsSetupDevice: with a device (here the emulated one) the local
// and joined rounds' Setup resolves its Rounder for --device cuda and auto.
func TestRoundsSetupDevice(t *testing.T) {
	for _, device := range []string{"cuda", "auto", ""} {
		l := &localRoundsFn{RoundConf: RoundConf{Workers: 2, Device: device}}
		j := &lastRoundFn{joinRoundFn{RoundConf: RoundConf{Workers: 2, Device: device}}}
		for name, c := range map[string]struct {
			setup func() error
			got   *engine.Rounder
		}{"local": {l.Setup, &l.rounder}, "join": {j.Setup, &j.rounder}} {
			if err := c.setup(); err != nil {
				t.Fatalf("%s, --device %q: %v", name, device, err)
			}
			if _, ok := (*c.got).(gpu.Rounds); !ok {
				t.Errorf("%s, --device %q: Setup resolved %#v, want gpu.Rounds", name, device, *c.got)
			}
		}
	}
}
