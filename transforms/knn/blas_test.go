package knn_test

import (
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/knn"
)

// TestBLASImplementation checks that the build got the BLAS its tags ask for
// (blasWant is set per build in blaswant_*_test.go).
func TestBLASImplementation(t *testing.T) {
	if got := knn.BLASImplementation(); !strings.HasPrefix(got, blasWant) {
		t.Errorf("BLASImplementation() = %q, want it to start with %q", got, blasWant)
	}
}
