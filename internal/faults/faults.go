// Package faults holds relabel's deterministic kill points: named places in
// a run where a test can have the process die abruptly (SIGKILL, as a crash
// or an OOM kill would), to check what a crash leaves behind. A point fires
// only when the environment variable RELABEL_FAULT names it, so a normal run
// pays one string comparison per point.
package faults

import (
	"os"
	"sync"
	"syscall"
)

// Env is the environment variable naming the point to die at.
const Env = "RELABEL_FAULT"

var (
	once  sync.Once
	point string
)

// Point kills the process with SIGKILL if RELABEL_FAULT is name.
func Point(name string) {
	once.Do(func() { point = os.Getenv(Env) })
	if point != "" && point == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
