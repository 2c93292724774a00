// Package knntest is the conformance suite every knn.Searcher runs (the CPU
// kernel, the OpenBLAS build, the CUDA backend), in the manner of gonum's
// blas/testblas: Run checks an implementation against a float64 brute-force
// oracle at awkward sizes, and Bench times it at named shapes.
package knntest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/relabel/relabel/transforms/knn"
)

// RelTol is the distance tolerance of the suite, relative to the scale of the
// distances of one query: ||q||^2 + max ||p||^2 for L2, 2 for Cosine. A
// float32 SGEMM of length d = 512 is accurate to about 1e-6 of that scale;
// 1e-4 leaves room for reduced-precision accumulation on accelerators.
const RelTol = 1e-4

// values says how a case's coordinates are drawn.
type values int

const (
	// gauss draws N(0,1) coordinates.
	gauss values = iota
	// ints draws integers in [-2, 2]. Every float32 product and partial sum is
	// then exact, so a correct backend reproduces the oracle bit for bit,
	// including the lower-index tie-break among the many equal distances.
	ints
)

// queries says where a case's queries come from and which ids they carry.
type queries int

const (
	// self: the first B candidates, with their own ids (the relabelling
	// use: every item queries the set it belongs to and must not find itself).
	self queries = iota
	// fresh: new vectors with ids no candidate has.
	fresh
	// noIDs: new vectors and a nil qIDs, which excludes nothing.
	noIDs
)

// testCase is one named configuration of Run.
type testCase struct {
	name     string
	s, b, d  int
	k        int
	metric   knn.Metric
	values   values
	queries  queries
	dups     int  // candidates overwritten with copies of earlier ones
	zeros    int  // candidates (and fresh queries) set to the zero vector
	sharedID bool // ids repeat in threes, so a query excludes up to 3 candidates
}

var cases = []testCase{
	{name: "d=1/ints/ties", s: 200, b: 50, d: 1, k: 7, values: ints},
	{name: "d=1/K>=S", s: 5, b: 5, d: 1, k: 8, values: ints},
	{name: "d=1/cosine", s: 64, b: 16, d: 1, k: 9, metric: knn.Cosine, queries: fresh, zeros: 3},
	{name: "d=31/dups+zeros", s: 500, b: 100, d: 31, k: 10, dups: 60, zeros: 20},
	{name: "d=31/sharedIDs", s: 90, b: 30, d: 31, k: 6, sharedID: true, dups: 10},
	{name: "d=31/K=100", s: 1000, b: 20, d: 31, k: 100, queries: fresh},
	{name: "d=33/cosine/zeros", s: 500, b: 70, d: 33, k: 12, metric: knn.Cosine, queries: fresh, zeros: 25, dups: 30},
	{name: "d=33/nilIDs", s: 100, b: 10, d: 33, k: 5, queries: noIDs, dups: 5},
	{name: "d=33/ints/K>=S", s: 40, b: 40, d: 33, k: 45, values: ints, dups: 8, zeros: 2},
	{name: "d=129/blocks", s: 2100, b: 600, d: 129, k: 10, dups: 50},
	{name: "d=129/cosine", s: 300, b: 50, d: 129, k: 16, metric: knn.Cosine, dups: 20, zeros: 5},
	{name: "d=512/ints", s: 400, b: 60, d: 512, k: 20, values: ints, dups: 40, zeros: 3},
	{name: "d=512/cosine", s: 300, b: 40, d: 512, k: 5, metric: knn.Cosine, dups: 10},
	{name: "d=512/K>S", s: 50, b: 20, d: 512, k: 64, queries: fresh},
	{name: "K=0", s: 30, b: 5, d: 31, k: 0},
	{name: "no queries", s: 30, b: 0, d: 31, k: 3},
	{name: "no candidates", s: 0, b: 4, d: 33, k: 3, queries: fresh},
}

// Run checks s on every case of the suite: results nearest first, self
// excluded by id, padded with (-1, +Inf) beyond the eligible candidates,
// distances within RelTol of the float64 oracle both at each rank and for
// the index returned, no candidate clearly nearer than the K-th missing, and
// exact agreement (indices, distances, tie order) on integer data. It also
// checks that a repeated search reproduces its result and that non-finite
// input is reported as an error.
func Run(t *testing.T, s knn.Searcher) {
	t.Helper()
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(0x6b6e6e, uint64(ci)))
			cand, ids, q, qIDs := tc.generate(rng)
			idx, err := s.Index(cand, ids, tc.metric)
			if err != nil {
				t.Fatalf("Index: %v", err)
			}
			defer idx.Close()
			var got knn.Result
			if err := idx.Search(&got, q, qIDs, tc.k); err != nil {
				t.Fatalf("Search: %v", err)
			}
			check(t, tc, cand, ids, q, qIDs, &got)

			// A second search into the same (now sized) Result must agree
			// exactly: backends are deterministic.
			var again knn.Result
			again.Reset(q.Rows, tc.k+1) // stale, larger storage to be reused
			for i := range again.Index {
				again.Index[i], again.Dist[i] = 12345, -1
			}
			if err := idx.Search(&again, q, qIDs, tc.k); err != nil {
				t.Fatalf("second Search: %v", err)
			}
			if again.K != got.K || !slices.Equal(again.Index, got.Index) || !slices.Equal(again.Dist, got.Dist) {
				t.Errorf("second Search differs from the first")
			}
		})
	}
	t.Run("errors", func(t *testing.T) { runErrors(t, s) })
}

// generate draws the case's candidates, their ids, the queries and their ids.
func (tc testCase) generate(rng *rand.Rand) (cand knn.Matrix, ids []int64, q knn.Matrix, qIDs []int64) {
	draw := func(rows int) knn.Matrix {
		m := knn.Matrix{Rows: rows, Cols: tc.d, Data: make([]float32, rows*tc.d)}
		for i := range m.Data {
			if tc.values == ints {
				m.Data[i] = float32(rng.IntN(5) - 2)
			} else {
				m.Data[i] = float32(rng.NormFloat64())
			}
		}
		return m
	}
	cand = draw(tc.s)
	for range min(tc.dups, tc.s-1) {
		dst := 1 + rng.IntN(tc.s-1)
		copy(cand.Row(dst), cand.Row(rng.IntN(dst)))
	}
	for range min(tc.zeros, tc.s) {
		clear(cand.Row(rng.IntN(tc.s)))
	}
	ids = make([]int64, tc.s)
	for i := range ids {
		// Ids deliberately differ from row numbers, so a backend that
		// confuses the two fails the self-exclusion checks.
		ids[i] = 1000 + 7*int64(i)
		if tc.sharedID {
			ids[i] = 1000 + 7*int64(i/3)
		}
	}
	switch tc.queries {
	case self:
		q = knn.Matrix{Rows: tc.b, Cols: tc.d, Data: cand.Data[:tc.b*tc.d]}
		qIDs = ids[:tc.b]
	case fresh, noIDs:
		q = draw(tc.b)
		for i := range min(tc.zeros, tc.b) {
			clear(q.Row(i * 3 % tc.b))
		}
		if tc.queries == fresh {
			qIDs = make([]int64, tc.b)
			for i := range qIDs {
				qIDs[i] = -1 - int64(i)
			}
		}
	}
	return cand, ids, q, qIDs
}

// neighbour is one oracle candidate.
type neighbour struct {
	d float64
	i int
}

// oracle returns every candidate eligible for query row r (id differs from
// its query id) with its float64 distance, nearest first, ties by index.
func oracle(m knn.Metric, cand knn.Matrix, ids []int64, q []float32, qid int64, exclude bool) []neighbour {
	var out []neighbour
	for i := 0; i < cand.Rows; i++ {
		if exclude && ids[i] == qid {
			continue
		}
		out = append(out, neighbour{d: Distance(m, q, cand.Row(i)), i: i})
	}
	slices.SortFunc(out, func(a, b neighbour) int {
		if a.d != b.d {
			if a.d < b.d {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	return out
}

// Distance is the float64 reference distance of the suite: ||q-p||^2 for L2,
// 1 - cos(q, p) for Cosine with zero vectors at distance 1 from everything.
func Distance(m knn.Metric, q, p []float32) float64 {
	if m == knn.Cosine {
		var qq, pp, qp float64
		for j := range q {
			qq += float64(q[j]) * float64(q[j])
			pp += float64(p[j]) * float64(p[j])
			qp += float64(q[j]) * float64(p[j])
		}
		if qq == 0 || pp == 0 {
			return 1
		}
		return 1 - qp/math.Sqrt(qq*pp)
	}
	var s float64
	for j := range q {
		e := float64(q[j]) - float64(p[j])
		s += e * e
	}
	return s
}

// check compares got with the oracle, query by query.
func check(t *testing.T, tc testCase, cand knn.Matrix, ids []int64, q knn.Matrix, qIDs []int64, got *knn.Result) {
	t.Helper()
	k := tc.k
	if got.K != k || len(got.Index) != q.Rows*k || len(got.Dist) != q.Rows*k {
		t.Fatalf("Result has K=%d, %d indices, %d distances; want K=%d and %d of each", got.K, len(got.Index), len(got.Dist), k, q.Rows*k)
	}
	var maxNorm float64
	for i := 0; i < cand.Rows; i++ {
		maxNorm = max(maxNorm, sqNorm(cand.Row(i)))
	}
	errs := 0
	fail := func(format string, args ...any) {
		errs++
		if errs <= 10 {
			t.Errorf(format, args...)
		}
	}
	for r := 0; r < q.Rows && errs < 10; r++ {
		var qid int64
		if qIDs != nil {
			qid = qIDs[r]
		}
		want := oracle(tc.metric, cand, ids, q.Row(r), qid, qIDs != nil)
		gi, gd := got.Index[r*k:(r+1)*k], got.Dist[r*k:(r+1)*k]
		scale := 2.0
		if tc.metric == knn.L2 {
			scale = sqNorm(q.Row(r)) + maxNorm
		}
		tol := RelTol * max(scale, 1e-3)
		filled := min(k, len(want))
		seen := make(map[int32]bool, filled)
		for j := 0; j < k; j++ {
			if j >= filled {
				if gi[j] != -1 || !math.IsInf(float64(gd[j]), 1) {
					fail("query %d rank %d: got (%d, %v), want padding (-1, +Inf): only %d eligible candidates", r, j, gi[j], gd[j], len(want))
				}
				continue
			}
			i, d := gi[j], float64(gd[j])
			if i < 0 || int(i) >= cand.Rows {
				fail("query %d rank %d: index %d outside [0,%d)", r, j, i, cand.Rows)
				continue
			}
			if qIDs != nil && ids[i] == qid {
				fail("query %d rank %d: candidate %d has the query's own id %d", r, j, i, qid)
			}
			if seen[i] {
				fail("query %d rank %d: candidate %d returned twice", r, j, i)
			}
			seen[i] = true
			if !(d >= 0) || math.IsInf(d, 0) {
				fail("query %d rank %d: distance %v not finite and non-negative", r, j, d)
			}
			if j > 0 && gd[j] < gd[j-1] {
				fail("query %d rank %d: distance %v after %v: not nearest first", r, j, gd[j], gd[j-1])
			}
			if j > 0 && gd[j] == gd[j-1] && gi[j] < gi[j-1] {
				fail("query %d rank %d: equal distance %v with index %d after %d: ties go to the lower index", r, j, gd[j], gi[j], gi[j-1])
			}
			if diff := math.Abs(d - want[j].d); diff > tol {
				fail("query %d rank %d: distance %v, oracle's rank-%d distance %v (|diff| %.3g > tol %.3g)", r, j, d, j, want[j].d, diff, tol)
			}
			if real := Distance(tc.metric, q.Row(r), cand.Row(int(i))); math.Abs(d-real) > tol {
				fail("query %d rank %d: distance %v, but candidate %d is at %v", r, j, d, i, real)
			}
			if tc.values == ints && tc.metric == knn.L2 && (int(i) != want[j].i || d != want[j].d) {
				fail("query %d rank %d: got (%d, %v), want exactly (%d, %v) on integer data", r, j, i, d, want[j].i, want[j].d)
			}
		}
		// Nothing clearly nearer than the last returned neighbour may be
		// missing; near-ties within tolerance may be swapped.
		if filled > 0 && filled < len(want) {
			last := float64(gd[filled-1])
			for _, w := range want {
				if w.d >= last-2*tol {
					break
				}
				if !seen[int32(w.i)] {
					fail("query %d: candidate %d at %v missing, but the K-th returned is at %v", r, w.i, w.d, last)
				}
			}
		}
	}
}

// runErrors checks that non-finite data is a returned error, not a panic or
// a silent wrong answer.
func runErrors(t *testing.T, s knn.Searcher) {
	good := knn.Matrix{Rows: 3, Cols: 2, Data: []float32{0, 1, 2, 3, 4, 5}}
	ids := []int64{1, 2, 3}
	for _, m := range []knn.Metric{knn.L2, knn.Cosine} {
		for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			bad := knn.Matrix{Rows: 3, Cols: 2, Data: []float32{0, 1, 2, v, 4, 5}}
			if idx, err := s.Index(bad, ids, m); err == nil {
				idx.Close()
				t.Errorf("%v: Index with %v in candidate row 1: no error", m, v)
			}
			idx, err := s.Index(good, ids, m)
			if err != nil {
				t.Fatalf("%v: Index: %v", m, err)
			}
			var res knn.Result
			if err := idx.Search(&res, bad, nil, 2); err == nil {
				t.Errorf("%v: Search with %v in query row 1: no error", m, v)
			}
			idx.Close()
		}
	}
	if idx, err := s.Index(good, ids[:2], knn.L2); err == nil {
		idx.Close()
		t.Errorf("Index with 2 ids for 3 candidates: no error")
	}
}

func sqNorm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return s
}

// Shape is one benchmark configuration: B queries against S candidates of
// dimension D, K neighbours each.
type Shape struct {
	B, S, D, K int
	Metric     knn.Metric
}

func (s Shape) String() string {
	return fmt.Sprintf("B=%d,S=%d,d=%d,K=%d,%v", s.B, s.S, s.D, s.K, s.Metric)
}

// Flops is the arithmetic of the distance SGEMM, 2*B*S*d: the figure both a
// search and a plain SGEMM of the same shape are measured against.
func (s Shape) Flops() float64 { return 2 * float64(s.B) * float64(s.S) * float64(s.D) }

// BenchShapes are the shapes the kNN's speed is judged at: the relabelling's
// batch against a 16k candidate set at three embedding widths.
var BenchShapes = []Shape{
	{B: 4096, S: 16384, D: 512, K: 10},
	{B: 4096, S: 16384, D: 128, K: 10},
	{B: 4096, S: 16384, D: 50, K: 10},
}

// Gaussian returns a rows x cols matrix of N(0,1) values drawn from
// PCG(seed, stream).
func Gaussian(rows, cols int, seed, stream uint64) knn.Matrix {
	rng := rand.New(rand.NewPCG(seed, stream))
	m := knn.Matrix{Rows: rows, Cols: cols, Data: make([]float32, rows*cols)}
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
	return m
}

// Bench indexes S Gaussian candidates (untimed) and times searches of B
// Gaussian queries that are also candidates (so self exclusion is on the
// path), reporting GFLOP/s of 2*B*S*d.
func Bench(b *testing.B, s knn.Searcher, sh Shape) {
	cand := Gaussian(sh.S, sh.D, 1, 0)
	ids := make([]int64, sh.S)
	for i := range ids {
		ids[i] = int64(i)
	}
	q := knn.Matrix{Rows: sh.B, Cols: sh.D, Data: cand.Data[:sh.B*sh.D]}
	idx, err := s.Index(cand, ids, sh.Metric)
	if err != nil {
		b.Fatalf("%v: Index: %v", sh, err)
	}
	defer idx.Close()
	var res knn.Result
	b.ResetTimer()
	for b.Loop() {
		if err := idx.Search(&res, q, ids[:sh.B], sh.K); err != nil {
			b.Fatalf("%v: Search: %v", sh, err)
		}
	}
	b.ReportMetric(sh.Flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
