package knn

import "math"

// scanTile merges one query's row of an SGEMM tile into its top-K list
// (dist, idx, of which the first n entries are filled, sorted by distance
// and then index) and returns the new fill count.
//
// The distance of tile column j is (qterm + bias[j]) + g[j], where g is
// alpha q.p from the SGEMM. The filter, below, does only that and one compare
// against the current K-th distance, 8 candidates at a time; it rejects
// almost every candidate once the list is full, so the cost of the selection
// is one vectorised pass over the tile, not a sort. The rare survivors pay for the id check (self exclusion) and the
// insertion. Candidates arrive in increasing index order, so a strict
// comparison keeps the earlier (lower-index) candidate on equal distances.
func scanTile(dist []float32, idx []int32, n int, g, bias []float32, qterm float32, base int32, ids []int64, self bool, qid int64) int {
	k := len(dist)
	thr := float32(math.Inf(1))
	if n == k {
		thr = dist[k-1]
	}
	bias = bias[:len(g)] // below's assembly relies on this bound
	ids = ids[:len(g)]
	for j := below(g, bias, qterm, thr, 0); j < len(g); j = below(g, bias, qterm, thr, j+1) {
		if self && ids[j] == qid {
			continue
		}
		// Cancellation in ||q||^2 + ||p||^2 - 2 q.p can leave a
		// near-duplicate slightly below zero; a distance is not negative.
		d := max(qterm+bias[j]+g[j], 0)
		n = insert(dist, idx, n, d, base+int32(j))
		if n == k {
			thr = dist[k-1]
		}
	}
	return n
}

// insert places (d, i) into the sorted list dist/idx holding n entries, after
// any equal distances (i is the highest index seen so far), dropping the last
// entry when the list is full. It returns the new fill count.
func insert(dist []float32, idx []int32, n int, d float32, i int32) int {
	// First position whose distance exceeds d.
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if dist[m] <= d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	k := len(dist)
	if lo == k {
		return n // only when clamping to 0 made d equal a full list's K-th
	}
	if n < k {
		n++
	}
	copy(dist[lo+1:n], dist[lo:n-1])
	copy(idx[lo+1:n], idx[lo:n-1])
	dist[lo] = d
	idx[lo] = i
	return n
}
