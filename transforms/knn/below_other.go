//go:build !amd64 || noasm

package knn

//go:noinline
func below(g, bias []float32, qterm, thr float32, from int) int {
	return belowGeneric(g, bias, qterm, thr, from)
}
