package ivf

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/relabel/relabel/transforms/knn"
)

// The partitions searched in place (knn.CPU.IndexRows) give the copies'
// neighbours and distances bit for bit, short partitions (fillShort)
// included.
func TestIndexInPlace(t *testing.T) {
	const n, d, parts, np, k = 3000, 24, 40, 3, 9
	r := rand.New(rand.NewPCG(7, 8))
	x := knn.Matrix{Rows: n, Cols: d, Data: make([]float32, n*d)}
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64()) + float32(i/d%5)
	}
	keys := make([]int64, n)
	pt := &Partitioning{NProbe: np, Probe: make([]int32, n*np)}
	for i := range n {
		keys[i] = int64(1000 + i)
		perm := r.Perm(parts)
		if i < 5 {
			perm[0] = parts - 1 // a partition only these rows call home
		}
		for j := range np {
			pt.Probe[i*np+j] = int32(perm[j])
		}
	}
	rows := make([]int, 400)
	for a := range rows {
		rows[a] = r.IntN(n)
	}
	rows[0], rows[1] = 0, 4
	v := NewIndex(x, keys, pt, parts, knn.CPU{}, knn.L2, 2)
	if v.sq == nil {
		t.Fatal("the CPU searcher's L2 index does not search in place")
	}
	var got, want knn.Result
	if err := v.Search(&got, rows, k); err != nil {
		t.Fatal(err)
	}
	v.sq = nil // the copies
	if err := v.Search(&want, rows, k); err != nil {
		t.Fatal(err)
	}
	for i := range want.Index {
		if got.Index[i] != want.Index[i] || math.Float32bits(got.Dist[i]) != math.Float32bits(want.Dist[i]) {
			t.Fatalf("entry %d: in place %d at %v, copied %d at %v", i, got.Index[i], got.Dist[i], want.Index[i], want.Dist[i])
		}
	}
	if c := NewIndex(x, keys, pt, parts, knn.CPU{}, knn.Cosine, 2); c.sq != nil {
		t.Error("a cosine index searches in place")
	}
}
