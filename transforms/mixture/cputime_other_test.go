//go:build !unix

package mixture

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
