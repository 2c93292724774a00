//go:build unix

package mixture

import (
	"syscall"
	"time"
)

// cpuTime is the process's user + system CPU time: on a shared machine a
// benchmark's wall time counts other processes' turns, its CPU time does not.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
