package knn_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/knn/knntest"
)

// BenchmarkKNN times, for each of the shapes below, the CPU search (SGEMM
// tiles + fused top-K) against two plain SGEMMs of the same B x S x d
// shape, alternately within every iteration so that all see the same load
// on a shared machine:
//
//   - sgemm: the build's own SGEMM (OpenBLAS single-threaded, or the pure-Go
//     build's micro-kernel; knn.Gemm) writing the whole B x S matrix,
//     GOMAXPROCS goroutines each multiplying a slab of rows, the way the
//     search runs. search/sgemm says what the top-K costs on top of it.
//   - gonum: gonum's own pure-Go Sgemm (gonum.Implementation, the same code
//     in every build whatever blas32 is routed to) on the first B/8 queries.
//     It is the yardstick common to both builds: search/gonum from the
//     OpenBLAS build and from the pure-Go build, each taken in one run,
//     compare the two builds without running them at the same moment.
//
// On a shared machine wall time mostly measures the neighbours' load, so
// every figure is also reported per CPU-second of this process, which
// hardly depends on it (no call here spin-waits: OpenBLAS is
// single-threaded and gonum parks its goroutines).
func BenchmarkKNN(b *testing.B) {
	b.Logf("BLAS: %s; GOMAXPROCS=%d", knn.BLASImplementation(), runtime.GOMAXPROCS(0))
	for _, sh := range knntest.BenchShapes {
		b.Run(sh.String(), func(b *testing.B) {
			p := knntest.Gaussian(sh.S, sh.D, 1, 0)
			ids := make([]int64, sh.S)
			for i := range ids {
				ids[i] = int64(i)
			}
			q := knn.Matrix{Rows: sh.B, Cols: sh.D, Data: p.Data[:sh.B*sh.D]}
			idx, err := knn.CPU{}.Index(p, ids, sh.Metric)
			if err != nil {
				b.Fatal(err)
			}
			var res knn.Result
			c := make([]float32, sh.B*sh.S)
			gb := sh.B / 8
			var search, slabs, ref, searchCPU, slabsCPU, refCPU time.Duration
			for b.Loop() {
				t0, c0 := time.Now(), cpuTime()
				if err := idx.Search(&res, q, ids[:sh.B], sh.K); err != nil {
					b.Fatal(err)
				}
				t1, c1 := time.Now(), cpuTime()
				sgemm(sh, q, p, c, runtime.GOMAXPROCS(0))
				t2, c2 := time.Now(), cpuTime()
				gonum.Implementation{}.Sgemm(blas.NoTrans, blas.Trans, gb, sh.S, sh.D,
					-2, q.Data, sh.D, p.Data, sh.D, 0, c, sh.S)
				search += t1.Sub(t0)
				slabs += t2.Sub(t1)
				ref += time.Since(t2)
				searchCPU += c1 - c0
				slabsCPU += c2 - c1
				refCPU += cpuTime() - c2
			}
			n := float64(b.N)
			refFlops := sh.Flops() * float64(gb) / float64(sh.B)
			b.ReportMetric(sh.Flops()*n/search.Seconds()/1e9, "search-GFLOP/s")
			b.ReportMetric(sh.Flops()*n/slabs.Seconds()/1e9, "sgemm-GFLOP/s")
			b.ReportMetric(refFlops*n/ref.Seconds()/1e9, "gonum-GFLOP/s")
			b.ReportMetric(100*(sh.Flops()/slabs.Seconds())/(sh.Flops()/search.Seconds()), "search/sgemm-%")
			if searchCPU > 0 && slabsCPU > 0 && refCPU > 0 {
				b.ReportMetric(sh.Flops()*n/searchCPU.Seconds()/1e9, "search-GFLOP/cpu-s")
				b.ReportMetric(sh.Flops()*n/slabsCPU.Seconds()/1e9, "sgemm-GFLOP/cpu-s")
				b.ReportMetric(refFlops*n/refCPU.Seconds()/1e9, "gonum-GFLOP/cpu-s")
				b.ReportMetric(100*slabsCPU.Seconds()/searchCPU.Seconds(), "search/sgemm-cpu-%")
				b.ReportMetric((sh.Flops()/searchCPU.Seconds())/(refFlops/refCPU.Seconds()), "search/gonum-cpu-x")
			}
		})
	}
}

// sgemm computes c = -2 q p^T (B x S) with the build's SGEMM (knn.Gemm),
// slabs goroutines each multiplying B/slabs rows of q single-threaded.
func sgemm(sh knntest.Shape, q, p knn.Matrix, c []float32, slabs int) {
	var wg sync.WaitGroup
	for i := range slabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r0, r1 := i*sh.B/slabs, (i+1)*sh.B/slabs
			knn.Gemm(r1-r0, sh.S, sh.D, -2, q.Data[r0*sh.D:r1*sh.D], p.Data, c[r0*sh.S:r1*sh.S], sh.S)
		}()
	}
	wg.Wait()
}

// BenchmarkKNNSearch times the search alone through knntest.Bench, the
// helper other backends use.
func BenchmarkKNNSearch(b *testing.B) {
	for _, sh := range knntest.BenchShapes {
		b.Run(sh.String(), func(b *testing.B) { knntest.Bench(b, knn.CPU{}, sh) })
	}
}

// BenchmarkKNNTiles splits the search's cost: the same SGEMM tiles as the
// search, on the same goroutines, without the top-K scan.
func BenchmarkKNNTiles(b *testing.B) {
	for _, sh := range knntest.BenchShapes {
		b.Run(sh.String(), func(b *testing.B) { benchTiles(b, sh, knn.DefaultQueryBlock, knn.DefaultCandidateBlock) })
	}
}

// BenchmarkKNNBlocks sweeps the tile shape at each of the benchmark shapes,
// reporting GFLOP per CPU-second as well as per second (see BenchmarkKNN).
func BenchmarkKNNBlocks(b *testing.B) {
	for _, sh := range knntest.BenchShapes {
		for _, qb := range []int{128, 256, 512} {
			for _, cb := range []int{512, 1024, 2048, 4096} {
				b.Run(fmt.Sprintf("%v/qb=%d,cb=%d", sh, qb, cb), func(b *testing.B) {
					benchCPU(b, knn.CPU{QueryBlock: qb, CandidateBlock: cb}, sh)
				})
			}
		}
	}
}

// benchCPU is knntest.Bench plus the GFLOP per CPU-second of this process.
func benchCPU(b *testing.B, s knn.Searcher, sh knntest.Shape) {
	p := knntest.Gaussian(sh.S, sh.D, 1, 0)
	ids := make([]int64, sh.S)
	for i := range ids {
		ids[i] = int64(i)
	}
	q := knn.Matrix{Rows: sh.B, Cols: sh.D, Data: p.Data[:sh.B*sh.D]}
	idx, err := s.Index(p, ids, sh.Metric)
	if err != nil {
		b.Fatal(err)
	}
	var res knn.Result
	c0 := cpuTime()
	for b.Loop() {
		if err := idx.Search(&res, q, ids[:sh.B], sh.K); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(sh.Flops()*n/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := cpuTime() - c0; cpu > 0 {
		b.ReportMetric(sh.Flops()*n/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkKNNCosine checks that cosine costs the same as L2 (one extra
// normalisation pass per query block).
func BenchmarkKNNCosine(b *testing.B) {
	sh := knntest.BenchShapes[0]
	sh.Metric = knn.Cosine
	b.Run(sh.String(), func(b *testing.B) { benchCPU(b, knn.CPU{}, sh) })
	sh.Metric = knn.L2
	b.Run(sh.String(), func(b *testing.B) { benchCPU(b, knn.CPU{}, sh) })
}

func benchTiles(b *testing.B, sh knntest.Shape, qb, cb int) {
	q := knntest.Gaussian(sh.B, sh.D, 1, 1)
	p := knntest.Gaussian(sh.S, sh.D, 1, 0)
	workers := runtime.GOMAXPROCS(0)
	tiles := make([][]float32, workers)
	for i := range tiles {
		tiles[i] = make([]float32, qb*cb)
	}
	blocks := (sh.B + qb - 1) / qb
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		var next atomic.Int64
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					blk := int(next.Add(1) - 1)
					if blk >= blocks {
						return
					}
					r0 := blk * qb
					rows := min(qb, sh.B-r0)
					a := blas32.General{Rows: rows, Cols: sh.D, Stride: sh.D, Data: q.Data[r0*sh.D : (r0+rows)*sh.D]}
					for c0 := 0; c0 < sh.S; c0 += cb {
						cols := min(cb, sh.S-c0)
						pm := blas32.General{Rows: cols, Cols: sh.D, Stride: sh.D, Data: p.Data[c0*sh.D : (c0+cols)*sh.D]}
						t := blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: tiles[w][:rows*cols]}
						blas32.Gemm(blas.NoTrans, blas.Trans, -2, a, pm, 0, t)
					}
				}
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(sh.Flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
