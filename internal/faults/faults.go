// Package faults holds relabel's deterministic kill points: named places in
// a run where a test can have the process die abruptly (SIGKILL, as a crash
// or an OOM kill would), or be stopped (SIGTERM, as a scheduler or a
// timeout would), to check what a crash or a stop leaves behind. A point
// fires only when the environment variable RELABEL_FAULT names it, so a
// normal run pays one string comparison per point.
package faults

import (
	"os"
	"strings"
	"sync"
	"syscall"
)

// Env is the environment variable naming the point to die at
// (RELABEL_FAULT=locked), or to be sent SIGTERM at (RELABEL_FAULT=
// sigterm:locked), or a behaviour to have (Active).
const Env = "RELABEL_FAULT"

// TermPrefix before a point's name sends SIGTERM at it instead of SIGKILL.
const TermPrefix = "sigterm:"

var (
	once  sync.Once
	point string
)

func get() string {
	once.Do(func() { point = os.Getenv(Env) })
	return point
}

// Point kills the process with SIGKILL if RELABEL_FAULT is name, or sends
// it SIGTERM (and goes on: the run stops as a stopped run does) if
// RELABEL_FAULT is TermPrefix + name.
func Point(name string) {
	p := get()
	if p == "" {
		return
	}
	if p == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	if rest, ok := strings.CutPrefix(p, TermPrefix); ok && rest == name {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}

// Active reports whether RELABEL_FAULT names behaviour name, such as
// "slow-stop": the first SIGINT or SIGTERM does not stop the run, as if
// the pipeline were slow to stop, so that a test can send the second
// signal while the run's files are all there.
func Active(name string) bool { return get() == name }
