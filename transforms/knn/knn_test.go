package knn_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/knn/knntest"
)

func TestCPU(t *testing.T) {
	t.Logf("BLAS: %s", knn.BLASImplementation())
	knntest.Run(t, knn.CPU{})
}

// TestCPUSmallBlocks runs the suite with tiles far smaller than the cases, so
// every case crosses many query and candidate block boundaries (including
// partial last blocks) with more workers than cores.
func TestCPUSmallBlocks(t *testing.T) {
	knntest.Run(t, knn.CPU{Workers: 3, QueryBlock: 7, CandidateBlock: 13})
}

// TestCPUKernels runs the suite with each SGEMM a CPU binary can pick at run
// time (every micro-kernel this machine runs, and gonum's blas32, the
// fallback elsewhere), at the default tiles and at tiles that split every
// case at odd offsets, so each kernel's edge handling is exercised.
func TestCPUKernels(t *testing.T) {
	t.Logf("this CPU's micro-kernels: %q", knn.KernelNames())
	for _, name := range append(knn.KernelNames(), "gonum") {
		t.Run(name, func(t *testing.T) {
			knntest.Run(t, knn.WithKernel(knn.CPU{}, name))
			t.Run("small", func(t *testing.T) {
				knntest.Run(t, knn.WithKernel(knn.CPU{Workers: 3, QueryBlock: 7, CandidateBlock: 13}, name))
			})
		})
	}
}

// TestCPUKernelsTileIndependent checks that a micro-kernel's output does not
// depend on the tile shape: each distance is the same FMA chain whatever the
// blocking (gemm.go's kernel), unlike blas32's.
func TestCPUKernelsTileIndependent(t *testing.T) {
	if len(knn.KernelNames()) == 0 {
		t.Skip("no micro-kernel on this CPU")
	}
	cand := knntest.Gaussian(700, 300, 7, 0)
	ids := make([]int64, cand.Rows)
	for i := range ids {
		ids[i] = int64(i)
	}
	q := knn.Matrix{Rows: 100, Cols: 300, Data: cand.Data[:100*300]}
	var want knn.Result
	for i, s := range []knn.CPU{{}, {QueryBlock: 5, CandidateBlock: 31}, {QueryBlock: 64, CandidateBlock: 33}} {
		for _, name := range knn.KernelNames() {
			x, err := knn.WithKernel(s, name).Index(cand, ids, knn.L2)
			if err != nil {
				t.Fatal(err)
			}
			var got knn.Result
			if err := x.Search(&got, q, ids[:q.Rows], 9); err != nil {
				t.Fatal(err)
			}
			if want.K == 0 {
				want = got
				continue
			}
			if !slices.Equal(got.Index, want.Index) || !slices.Equal(got.Dist, want.Dist) {
				t.Errorf("tiles %d (%+v), kernel %s: result differs from the first", i, s, name)
			}
		}
	}
}

func TestCPUUnknownKernel(t *testing.T) {
	_, err := knn.WithKernel(knn.CPU{}, "MMX 1x1").Index(knntest.Gaussian(3, 2, 1, 0), make([]int64, 3), knn.L2)
	if err == nil || !strings.Contains(err.Error(), `no kernel "MMX 1x1"`) {
		t.Errorf("error %v, want one naming the kernel", err)
	}
}

// TestCPUWorkersDeterministic checks that the output is bit-identical for any
// number of goroutines, as the pipeline's retries require.
func TestCPUWorkersDeterministic(t *testing.T) {
	cand := knntest.Gaussian(700, 37, 7, 0)
	ids := make([]int64, cand.Rows)
	for i := range ids {
		ids[i] = int64(i)
	}
	q := knn.Matrix{Rows: 300, Cols: 37, Data: cand.Data[:300*37]}
	var want knn.Result
	for _, m := range []knn.Metric{knn.L2, knn.Cosine} {
		for w, workers := range []int{1, 2, 3, 8} {
			x, err := knn.CPU{Workers: workers, QueryBlock: 32, CandidateBlock: 100}.Index(cand, ids, m)
			if err != nil {
				t.Fatalf("%v workers=%d: Index: %v", m, workers, err)
			}
			var got knn.Result
			if err := x.Search(&got, q, ids[:q.Rows], 9); err != nil {
				t.Fatalf("%v workers=%d: Search: %v", m, workers, err)
			}
			if w == 0 {
				want = got
				continue
			}
			if !slices.Equal(got.Index, want.Index) || !slices.Equal(got.Dist, want.Dist) {
				t.Errorf("%v: workers=%d differs from workers=1", m, workers)
			}
		}
	}
}

func TestCPUIndexErrors(t *testing.T) {
	good := knn.Matrix{Rows: 2, Cols: 2, Data: []float32{1, 2, 3, 4}}
	ids := []int64{1, 2}
	for _, tc := range []struct {
		name string
		s    knn.CPU
		c    knn.Matrix
		ids  []int64
		m    knn.Metric
		want string
	}{
		{name: "short data", c: knn.Matrix{Rows: 2, Cols: 2, Data: []float32{1, 2, 3}}, ids: ids, want: "2x2 with 3 values"},
		{name: "zero columns", c: knn.Matrix{Rows: 2, Cols: 0}, ids: ids, want: "2x0"},
		{name: "ids", c: good, ids: ids[:1], want: "1 ids for 2 candidates"},
		{name: "metric", c: good, ids: ids, m: knn.Metric(7), want: "Metric(7)"},
		{name: "option", s: knn.CPU{QueryBlock: -1}, c: good, ids: ids, want: "negative option"},
		{name: "huge norm", c: knn.Matrix{Rows: 2, Cols: 2, Data: []float32{1, 2, 3e38, 4}}, ids: ids, want: "candidate row 1: squared norm"},
		{name: "NaN", c: knn.Matrix{Rows: 2, Cols: 2, Data: []float32{1, 2, 3, float32(math.NaN())}}, ids: ids, m: knn.Cosine, want: "candidate row 1: column 1 is NaN"},
	} {
		_, err := tc.s.Index(tc.c, tc.ids, tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// Cosine normalises, so a large but finite norm is fine there.
	if _, err := (knn.CPU{}).Index(knn.Matrix{Rows: 2, Cols: 2, Data: []float32{1, 2, 3e38, 4}}, ids, knn.Cosine); err != nil {
		t.Errorf("cosine with a huge finite norm: %v", err)
	}
}

func TestCPUSearchReportsLowestBadRow(t *testing.T) {
	cand := knntest.Gaussian(50, 4, 3, 0)
	x, err := knn.CPU{Workers: 4, QueryBlock: 2}.Index(cand, make([]int64, 50), knn.L2)
	if err != nil {
		t.Fatal(err)
	}
	q := knntest.Gaussian(20, 4, 3, 1)
	q.Data[17*4+2] = float32(math.NaN())
	q.Data[9*4+1] = 3e38
	var res knn.Result
	err = x.Search(&res, q, nil, 3)
	if err == nil || !strings.Contains(err.Error(), "query row 9: squared norm") {
		t.Errorf("error %v, want one about query row 9's norm", err)
	}
}

func TestCPUSearchPanicsOnMisuse(t *testing.T) {
	cand := knntest.Gaussian(10, 4, 3, 0)
	x, err := knn.CPU{}.Index(cand, make([]int64, 10), knn.L2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    knn.Matrix
		qIDs []int64
		k    int
	}{
		{name: "dimension", q: knntest.Gaussian(2, 5, 1, 1), k: 1},
		{name: "short data", q: knn.Matrix{Rows: 2, Cols: 4, Data: make([]float32, 7)}, k: 1},
		{name: "qIDs", q: knntest.Gaussian(2, 4, 1, 1), qIDs: []int64{1}, k: 1},
		{name: "negative k", q: knntest.Gaussian(2, 4, 1, 1), k: -1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Search did not panic", tc.name)
				}
			}()
			var res knn.Result
			x.Search(&res, tc.q, tc.qIDs, tc.k)
		}()
	}
}

// TestCPUSearchAllocs checks that a warm index searches without allocating
// beyond the goroutines it starts.
func TestCPUSearchAllocs(t *testing.T) {
	cand := knntest.Gaussian(300, 16, 3, 0)
	q := knntest.Gaussian(64, 16, 3, 1)
	x, err := knn.CPU{Workers: 1, QueryBlock: 16, CandidateBlock: 64}.Index(cand, make([]int64, 300), knn.Cosine)
	if err != nil {
		t.Fatal(err)
	}
	var res knn.Result
	x.Search(&res, q, nil, 5)
	if a := testing.AllocsPerRun(20, func() { x.Search(&res, q, nil, 5) }); a > 0 {
		t.Errorf("Search allocates %v times per call with one worker, want 0", a)
	}
}
