package roundstest

import (
	"sync/atomic"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// Counter is a Rounder that counts the calls and the items of the Rounder
// it wraps, or with Err set fails every call with Err: what a caller's
// test injects to see that its rounds run through the Rounder it was
// given (a caller that ran engine.RunRound itself would count none) and
// that a device's failure fails it. Use it as a pointer; it is safe for
// concurrent calls.
type Counter struct {
	// Inner runs the rounds. Optional, nil: engine.CPU{}.
	Inner engine.Rounder
	// Err, when set, is every call's error.
	Err error

	calls, items atomic.Int64
}

// Round implements engine.Rounder.
func (c *Counter) Round(b engine.Batch, r int, p *mixture.Params) (mixture.States, int, error) {
	c.calls.Add(1)
	c.items.Add(int64(b.N))
	if c.Err != nil {
		return mixture.States{}, 0, c.Err
	}
	inner := c.Inner
	if inner == nil {
		inner = engine.CPU{}
	}
	return inner.Round(b, r, p)
}

// Calls is how many times Round was called; Items the items of those
// calls' batches, in all.
func (c *Counter) Calls() int64 { return c.calls.Load() }
func (c *Counter) Items() int64 { return c.items.Load() }

var _ engine.Rounder = (*Counter)(nil)
