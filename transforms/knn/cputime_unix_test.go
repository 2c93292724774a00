//go:build unix

package knn_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used: on a
// machine shared with other work, GFLOP per CPU-second measures a kernel's
// efficiency where wall time mostly measures the neighbours' load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
