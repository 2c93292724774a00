package knn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestInsert(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		name     string
		dist     []float32
		idx      []int32
		n        int
		d        float32
		i        int32
		wantDist []float32
		wantIdx  []int32
		wantN    int
	}{
		{name: "into empty", dist: []float32{inf, inf}, idx: []int32{-1, -1}, n: 0, d: 3, i: 5,
			wantDist: []float32{3, inf}, wantIdx: []int32{5, -1}, wantN: 1},
		{name: "front", dist: []float32{2, 4, 0}, idx: []int32{1, 2, 0}, n: 2, d: 1, i: 9,
			wantDist: []float32{1, 2, 4}, wantIdx: []int32{9, 1, 2}, wantN: 3},
		{name: "after equals", dist: []float32{2, 2, 4}, idx: []int32{1, 3, 4}, n: 3, d: 2, i: 7,
			wantDist: []float32{2, 2, 2}, wantIdx: []int32{1, 3, 7}, wantN: 3},
		{name: "equal to full K-th is dropped", dist: []float32{0, 0}, idx: []int32{1, 2}, n: 2, d: 0, i: 3,
			wantDist: []float32{0, 0}, wantIdx: []int32{1, 2}, wantN: 2},
		{name: "drops last when full", dist: []float32{1, 2, 3}, idx: []int32{0, 1, 2}, n: 3, d: 1.5, i: 8,
			wantDist: []float32{1, 1.5, 2}, wantIdx: []int32{0, 8, 1}, wantN: 3},
	} {
		n := insert(tc.dist, tc.idx, tc.n, tc.d, tc.i)
		if n != tc.wantN || !slices.Equal(tc.dist, tc.wantDist) || !slices.Equal(tc.idx, tc.wantIdx) {
			t.Errorf("%s: got n=%d %v %v, want n=%d %v %v", tc.name, n, tc.dist, tc.idx, tc.wantN, tc.wantDist, tc.wantIdx)
		}
	}
}

// TestScanTileMatchesSort checks scanTile against a full sort of one row fed
// in several tiles, with self exclusion, ties and clamping of negatives.
func TestScanTileMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const s, k = 1000, 17
	g := make([]float32, s)
	bias := make([]float32, s)
	ids := make([]int64, s)
	for j := range g {
		g[j] = -2 * float32(rng.IntN(40)) // many exact ties
		bias[j] = float32(rng.IntN(5))
		ids[j] = int64(j % 250)
	}
	const qterm, qid = 70, 3
	type cand struct {
		d float32
		i int32
	}
	var all []cand
	for j := range g {
		if ids[j] != qid {
			all = append(all, cand{max(qterm+bias[j]+g[j], 0), int32(j)})
		}
	}
	slices.SortStableFunc(all, func(a, b cand) int {
		if a.d < b.d {
			return -1
		} else if a.d > b.d {
			return 1
		}
		return 0
	})
	dist, idx := make([]float32, k), make([]int32, k)
	n := 0
	for c0 := 0; c0 < s; c0 += 300 {
		c1 := min(c0+300, s)
		n = scanTile(dist, idx, n, g[c0:c1], bias[c0:c1], qterm, int32(c0), ids[c0:c1], true, qid)
	}
	if n != k {
		t.Fatalf("fill %d, want %d", n, k)
	}
	for j := range k {
		if dist[j] != all[j].d || idx[j] != all[j].i {
			t.Errorf("rank %d: got (%d, %v), want (%d, %v)", j, idx[j], dist[j], all[j].i, all[j].d)
		}
	}
}

// BenchmarkScanTile measures the top-K selection alone, in candidates per
// second, at K = 10: 256 queries each scanning 8 tiles of 2048 random
// distances (S = 16384, as in the speed target), so the insertions are as
// rare as in a real search. This is the cost the search adds to the SGEMM.
func BenchmarkScanTile(b *testing.B) {
	const rows, cols, tiles, k = 256, 2048, 8, 10
	rng := rand.New(rand.NewPCG(1, 2))
	g := make([]float32, rows*cols)
	bias := make([]float32, tiles*cols)
	ids := make([]int64, tiles*cols)
	for j := range g {
		g[j] = -2 * float32(rng.NormFloat64()*20)
	}
	for j := range bias {
		bias[j] = 512 + float32(rng.NormFloat64()*30)
		ids[j] = int64(j)
	}
	dist, idx := make([]float32, rows*k), make([]int32, rows*k)
	fill := make([]int, rows)
	for b.Loop() {
		clear(fill)
		for t := range tiles {
			c0 := t * cols
			for r := range rows {
				fill[r] = scanTile(dist[r*k:(r+1)*k], idx[r*k:(r+1)*k], fill[r], g[r*cols:(r+1)*cols],
					bias[c0:c0+cols], 512, int32(c0), ids[c0:c0+cols], true, int64(r))
			}
		}
	}
	b.ReportMetric(float64(rows*cols*tiles)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gcand/s")
}

// BenchmarkBelow measures the filter loop alone (nothing passes).
func BenchmarkBelow(b *testing.B) {
	const n = 256 * 2048
	g, bias := make([]float32, n), make([]float32, n)
	for b.Loop() {
		if below(g, bias, 1, -1, 0) != n {
			b.Fatal("something passed")
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gcand/s")
}

// TestBelowMatchesGeneric checks the assembly filter (where there is one)
// against the scalar loop: every start, every length around the 8-wide
// step, thresholds that pass nothing, everything, and exact ties (which must
// not pass).
func TestBelowMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 40; n++ {
		g, bias := make([]float32, n), make([]float32, n+3)
		for j := range g {
			g[j] = float32(rng.IntN(9) - 4)
			bias[j] = float32(rng.IntN(5)) * 0.25
		}
		for _, thr := range []float32{float32(math.Inf(-1)), -3, -1, 0, 0.5, 2, float32(math.Inf(1))} {
			for from := 0; from <= n; from++ {
				want := belowGeneric(g, bias, 0.75, thr, from)
				if got := below(g, bias, 0.75, thr, from); got != want {
					t.Fatalf("n=%d thr=%v from=%d: below %d, belowGeneric %d", n, thr, from, got, want)
				}
			}
		}
	}
}
