//go:build !unix

package knn_test

import "time"

// cpuTime is unavailable here; the CPU-time metrics are then not reported.
func cpuTime() time.Duration { return 0 }
