//go:build !noasm

package knn

// below is belowGeneric in SSE assembly (below_amd64.s). SSE is part of the
// amd64 baseline, so it needs no CPU feature check; ADDPS rounds each lane
// exactly as the scalar float32 addition does.
//
//go:noescape
func below(g, bias []float32, qterm, thr float32, from int) int
