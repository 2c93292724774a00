//go:build !openblas || !cgo

package knn

// BLASImplementation names the SGEMM this build uses: gonum's pure-Go blas32
// here, since the binary was built without -tags openblas or without cgo.
func BLASImplementation() string { return "gonum (pure Go)" }

// setBLASThreads is a no-op: gonum's pure-Go SGEMM schedules its own
// goroutines, which the Go runtime multiplexes with Search's.
func setBLASThreads(int) {}
