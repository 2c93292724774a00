//go:build cuda || cudaemu

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/llc/llctest"
)

// TestCoder runs the LLC conformance suite with G in shared memory (every K
// it uses fits) and, through TestCoderAgreesWithCPU, K large enough for the
// global-memory workspace.
func TestCoder(t *testing.T) {
	needDevice(t)
	llctest.Run(t, Coder{})
	t.Run("small-blocks", func(t *testing.T) { llctest.Run(t, Coder{Block: 7}) })
}

// randomBatch draws B neighbourhoods of K Gaussian neighbours around a query
// near their centre.
func randomBatch(seed uint64, B, K, D int) llc.Batch {
	rng := rand.New(rand.NewPCG(seed, 0))
	b := llc.Batch{B: B, K: K, D: D, X: make([]float32, B*D), N: make([]float32, B*K*D), Dist: make([]float32, B*K)}
	for i := 0; i < B; i++ {
		centre := make([]float64, D)
		for c := range centre {
			centre[c] = rng.NormFloat64()
		}
		for c := 0; c < D; c++ {
			b.X[i*D+c] = float32(centre[c] + 0.5*rng.NormFloat64()/math.Sqrt(float64(D)))
		}
		for j := 0; j < K; j++ {
			var s float64
			for c := 0; c < D; c++ {
				v := float32(centre[c] + rng.NormFloat64()/math.Sqrt(float64(D)))
				b.N[(i*K+j)*D+c] = v
				e := float64(v) - float64(b.X[i*D+c])
				s += e * e
			}
			b.Dist[i*K+j] = float32(s)
		}
	}
	return b
}

// TestCoderAgreesWithCPU compares weights with llc.CPU, which runs the same
// active-set method: they agree to rounding. K = 60 and 100 exceed the shared
// memory for G, so the kernel's global workspace path runs too.
func TestCoderAgreesWithCPU(t *testing.T) {
	needDevice(t)
	for _, tc := range []struct{ b, k, d int }{{50, 10, 33}, {20, 40, 7}, {6, 60, 129}, {4, 100, 50}} {
		t.Run(fmt.Sprintf("B=%d,K=%d,d=%d", tc.b, tc.k, tc.d), func(t *testing.T) {
			bt := randomBatch(uint64(tc.k), tc.b, tc.k, tc.d)
			for _, p := range []llc.Params{llc.DefaultParams(), withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 1e-3, 2 })} {
				got := make([]float64, tc.b*tc.k)
				want := make([]float64, tc.b*tc.k)
				if err := (Coder{}).Code(got, bt, p); err != nil {
					t.Fatalf("%+v: gpu: %v", p, err)
				}
				if err := (llc.CPU{}).Code(want, bt, p); err != nil {
					t.Fatalf("%+v: cpu: %v", p, err)
				}
				if err := llctest.Check(got, bt, p); err != nil {
					t.Errorf("%+v: %v", p, err)
				}
				for i := range got {
					if math.Abs(got[i]-want[i]) > 1e-6 {
						t.Fatalf("%+v: dst[%d] = %.12g, CPU %.12g", p, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// BenchmarkCode times the CUDA and the CPU coder on batches of neighbourhoods
// (lambda = 0) at the paper's K = 10 and its ablation's K = 100, reporting
// neighbourhoods/s. It needs a GPU (under cudaemu it measures the emulator).
func BenchmarkCode(b *testing.B) {
	needDevice(b)
	const d = 128
	for _, sh := range []struct{ b, k int }{{16384, 10}, {4096, 100}} {
		bt := randomBatch(42, sh.b, sh.k, d)
		dst := make([]float64, sh.b*sh.k)
		for _, c := range []struct {
			name string
			c    llc.Coder
		}{{"cuda", Coder{}}, {"cpu", llc.CPU{}}} {
			b.Run(fmt.Sprintf("%s/B=%d,K=%d,d=%d", c.name, sh.b, sh.k, d), func(b *testing.B) {
				for b.Loop() {
					if err := c.c.Code(dst, bt, llc.DefaultParams()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(sh.b*b.N)/b.Elapsed().Seconds(), "neighbourhoods/s")
			})
		}
	}
}

// withParams is llc.DefaultParams() changed by edit: a case states what it
// departs from the defaults in.
func withParams(edit func(*llc.Params)) llc.Params {
	p := llc.DefaultParams()
	edit(&p)
	return p
}
