// Package faults holds relabel's deterministic kill points: named places in
// a run where a test can have the process die abruptly (SIGKILL, as a crash
// or an OOM kill would), or be stopped (SIGTERM, as a scheduler or a
// timeout would), to check what a crash or a stop leaves behind. A point
// fires only when the environment variable RELABEL_FAULT names it, so a
// normal run pays one string comparison per point.
package faults

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
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

// PointCtx is Point at a place the run stops at when ctx is done: with
// TermPrefix + name it waits, after sending SIGTERM, until the signal's
// handler has cancelled ctx (10 s at most), so that the stop is seen at
// this point. Without the wait the signal's delivery races the next steps:
// under load a run went on to commit before its handler ran, and exited 0
// where a stop at that point exits 143 (TestRunStoppedAt, pipeline-done).
func PointCtx(ctx context.Context, name string) {
	Point(name)
	if rest, ok := strings.CutPrefix(get(), TermPrefix); ok && rest == name {
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	}
}

// Active reports whether RELABEL_FAULT names behaviour name, such as
// "slow-stop": the first SIGINT or SIGTERM does not stop the run, as if
// the pipeline were slow to stop, so that a test can send the second
// signal while the run's files are all there.
func Active(name string) bool { return get() == name }
