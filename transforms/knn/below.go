package knn

// belowGeneric returns the first j >= from whose distance
// (qterm + bias[j]) + g[j] is below thr, or len(g). It is the hot loop of the
// search: a leaf (no calls, nothing live across one) so that the compiler
// holds everything in registers. On amd64 below is the SSE version, which
// tests 8 candidates per iteration and must agree with this one exactly.
func belowGeneric(g, bias []float32, qterm, thr float32, from int) int {
	bias = bias[:len(g)]
	for j := from; j < len(g); j++ {
		if qterm+bias[j]+g[j] < thr {
			return j
		}
	}
	return len(g)
}
