//go:build !linux

package budget

// FreeDisk is unknown (0) off Linux: nothing is refused for disk space.
func FreeDisk(string) int64 { return 0 }
