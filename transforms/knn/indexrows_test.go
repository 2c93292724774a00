package knn_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/knn"
)

// IndexRows over rows of a matrix, in place, gives the bits Index gives over
// a copy of those rows, with every kernel, tile shape and worker count,
// self-exclusion by id included; a row it cannot search is refused, as
// Index refuses it.
func TestIndexRows(t *testing.T) {
	// d 300: more than one pass of the packed kernels' depth (256), which
	// the in-place kernel computes in one; 4 and 9 rows: fewer candidates
	// than one of its tiles' 6 rows, and than k; one query and a few.
	for _, c := range []struct{ n, d, qn int }{{700, 37, 45}, {700, 300, 45}, {4, 1, 1}, {9, 5, 7}} {
		indexRows(t, c.n, c.d, c.qn)
	}
}

func indexRows(t *testing.T, n, d, qn int) {
	const k = 7
	r := rand.New(rand.NewPCG(5, uint64(d)))
	x := knn.Matrix{Rows: n, Cols: d, Data: make([]float32, n*d)}
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	sq, ok := knn.RowNorms(x)
	if !ok {
		t.Fatal("RowNorms refused finite rows")
	}
	rows := make([]int32, 0, n)
	for i := n - 1; i >= 0; i -= 1 + r.IntN(3) { // unsorted, a subset
		rows = append(rows, int32(i))
	}
	rows = append(rows, 3, 3) // a row twice
	ids := make([]int64, len(rows))
	cm := knn.Matrix{Rows: len(rows), Cols: d}
	for i, row := range rows {
		ids[i] = int64(row)
		cm.Data = append(cm.Data, x.Row(int(row))...)
	}
	q := knn.Matrix{Rows: qn, Cols: d}
	qids := make([]int64, qn)
	for i := range qn {
		src := r.IntN(n)
		q.Data = append(q.Data, x.Row(src)...)
		qids[i] = int64(src)
	}
	for _, name := range append(knn.KernelNames(), "gonum") {
		// blas32's sums depend on where a block starts in memory: the
		// candidate blocks here start at 64-byte multiples of the copy, as
		// they do at the default block size.
		for _, s := range []knn.CPU{{}, {Workers: 3, QueryBlock: 16, CandidateBlock: 64}, {Workers: 1, QueryBlock: 40, CandidateBlock: 100}} {
			s := knn.WithKernel(s, name)
			want, err := s.Index(cm, ids, knn.L2)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.IndexRows(x, rows, sq, ids)
			if err != nil {
				t.Fatal(err)
			}
			for _, self := range [][]int64{nil, qids} {
				var a, b knn.Result
				if err := want.Search(&a, q, self, k); err != nil {
					t.Fatal(err)
				}
				if err := got.Search(&b, q, self, k); err != nil {
					t.Fatal(err)
				}
				for i := range a.Index {
					if a.Index[i] != b.Index[i] || math.Float32bits(a.Dist[i]) != math.Float32bits(b.Dist[i]) {
						t.Fatalf("%s %+v: entry %d: IndexRows %d at %v, Index %d at %v", name, s, i, b.Index[i], b.Dist[i], a.Index[i], a.Dist[i])
					}
				}
			}
		}
	}
	if n != 700 || d != 37 {
		return
	}
	x.Data[5*d+2] = float32(math.NaN())
	if _, ok := knn.RowNorms(x); ok {
		t.Error("RowNorms took a NaN row")
	}
	sq[5] = float32(math.NaN())
	if _, err := (knn.CPU{}).IndexRows(x, []int32{1, 5}, sq, []int64{1, 5}); err == nil || !strings.Contains(err.Error(), "candidate row 1") {
		t.Errorf("a NaN row: error %v", err)
	}
	if _, err := (knn.CPU{}).IndexRows(x, []int32{1, int32(n)}, sq, []int64{1, 2}); err == nil {
		t.Error("a row outside the matrix: no error")
	}
}
