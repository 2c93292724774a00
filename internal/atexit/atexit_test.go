package atexit

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestRunAll: RunAll runs what is registered and not yet run, latest first,
// each once; a clean-up run (or dropped) before is not run again.
func TestRunAll(t *testing.T) {
	var mu sync.Mutex
	var got []string
	rec := func(s string) func() {
		return func() { mu.Lock(); got = append(got, s); mu.Unlock() }
	}
	a := Push(rec("output dir"))
	b := Push(rec("tmp"))
	c := Push(rec("spill"))
	d := Push(rec("dropped"))
	c.Run()
	d.Drop()
	if !RunAll(time.Second) {
		t.Fatal("RunAll did not finish")
	}
	b.Run() // the deferred normal path, after RunAll: nothing more
	a.Run()
	if want := []string{"spill", "tmp", "output dir"}; !slices.Equal(got, want) {
		t.Errorf("ran %q, want %q", got, want)
	}
	if RunAll(time.Second); len(got) != 3 {
		t.Errorf("a second RunAll ran %q", got[3:])
	}
}

// TestRunAllBounded: a clean-up that hangs does not hold RunAll past its wait.
func TestRunAllBounded(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	h := Push(func() { <-block })
	defer h.Drop()
	if RunAll(50 * time.Millisecond) {
		t.Error("RunAll reported a hanging clean-up finished")
	}
}
