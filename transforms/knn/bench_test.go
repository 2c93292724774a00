package knn_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/knn/knntest"
)

// BenchmarkKNN times, for each of issue 2's shapes, the CPU search (SGEMM
// tiles + fused top-K) and then a plain SGEMM of the same B x S x d shape in
// the same run, both as GFLOP/s of 2*B*S*d, so the search's fraction of GEMM
// throughput can be read off one output. The plain SGEMM is one blas32.Gemm
// call writing the whole B x S matrix, with the BLAS's own threading
// (OpenBLAS set to GOMAXPROCS threads for that call; gonum parallelises
// itself).
func BenchmarkKNN(b *testing.B) {
	b.Logf("BLAS: %s; GOMAXPROCS=%d", knn.BLASImplementation(), runtime.GOMAXPROCS(0))
	for _, sh := range knntest.BenchShapes {
		b.Run(sh.String()+"/search", func(b *testing.B) { knntest.Bench(b, knn.CPU{}, sh) })
		b.Run(sh.String()+"/sgemm", func(b *testing.B) { benchSGEMM(b, sh) })
	}
}

// BenchmarkKNNTiles splits the search's cost: the same SGEMM tiles as the
// search, on the same goroutines, without the top-K scan.
func BenchmarkKNNTiles(b *testing.B) {
	for _, sh := range knntest.BenchShapes {
		b.Run(sh.String(), func(b *testing.B) { benchTiles(b, sh, knn.DefaultQueryBlock, knn.DefaultCandidateBlock) })
	}
}

// BenchmarkKNNBlocks sweeps the tile shape at d = 128, where the top-K scan
// weighs most against the SGEMM.
func BenchmarkKNNBlocks(b *testing.B) {
	sh := knntest.Shape{B: 4096, S: 16384, D: 128, K: 10}
	for _, qb := range []int{128, 256, 512} {
		for _, cb := range []int{512, 1024, 2048, 4096} {
			b.Run(fmt.Sprintf("qb=%d,cb=%d", qb, cb), func(b *testing.B) {
				knntest.Bench(b, knn.CPU{QueryBlock: qb, CandidateBlock: cb}, sh)
			})
		}
	}
}

// BenchmarkKNNCosine checks that cosine costs the same as L2 (one extra
// normalisation pass per query block).
func BenchmarkKNNCosine(b *testing.B) {
	sh := knntest.BenchShapes[0]
	sh.Metric = knn.Cosine
	b.Run(sh.String(), func(b *testing.B) { knntest.Bench(b, knn.CPU{}, sh) })
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

func benchSGEMM(b *testing.B, sh knntest.Shape) {
	q := knntest.Gaussian(sh.B, sh.D, 1, 1)
	p := knntest.Gaussian(sh.S, sh.D, 1, 0)
	c := make([]float32, sh.B*sh.S)
	knn.SetBLASThreads(runtime.GOMAXPROCS(0))
	defer knn.SetBLASThreads(1)
	qm := blas32.General{Rows: sh.B, Cols: sh.D, Stride: sh.D, Data: q.Data}
	pm := blas32.General{Rows: sh.S, Cols: sh.D, Stride: sh.D, Data: p.Data}
	cm := blas32.General{Rows: sh.B, Cols: sh.S, Stride: sh.S, Data: c}
	b.ResetTimer()
	for b.Loop() {
		blas32.Gemm(blas.NoTrans, blas.Trans, -2, qm, pm, 0, cm)
	}
	b.ReportMetric(sh.Flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
