//go:build !linux

package netns

import (
	"errors"
	"runtime"
)

var errUnsupported = errors.New("netns: private network namespaces need Linux, this is " + runtime.GOOS)

// Reexec cannot isolate the network off Linux.
func Reexec() (int, error) { return 0, errUnsupported }

// LoopbackUp cannot isolate the network off Linux.
func LoopbackUp() error { return errUnsupported }

// OnlyLoopback reports false off Linux: the host's interfaces are shared.
func OnlyLoopback() (bool, error) { return false, errUnsupported }
