package llc_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/relabel/relabel/internal/devdata"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/llc/llctest"
)

func TestCPU(t *testing.T) { llctest.Run(t, llc.CPU{}) }

func TestCPUOneWorker(t *testing.T) { llctest.Run(t, llc.CPU{Workers: 1}) }

// randomBatch draws b neighbourhoods of k neighbours in d dimensions, each
// around its own centre.
func randomBatch(seed uint64, b, k, d int) llc.Batch {
	rng := rand.New(rand.NewPCG(seed, 0))
	bt := llc.Batch{B: b, K: k, D: d,
		X: make([]float32, b*d), N: make([]float32, b*k*d), Dist: make([]float32, b*k)}
	sd := 1 / math.Sqrt(float64(d))
	centre := make([]float64, d)
	for i := 0; i < b; i++ {
		for c := range centre {
			centre[c] = rng.NormFloat64()
		}
		x := bt.X[i*d : (i+1)*d]
		for c := range x {
			x[c] = float32(centre[c] + 0.5*sd*rng.NormFloat64())
		}
		for j := 0; j < k; j++ {
			nb := bt.N[(i*k+j)*d : (i*k+j+1)*d]
			var s float64
			for c := range nb {
				nb[c] = float32(centre[c] + sd*rng.NormFloat64())
				s += float64(nb[c]-x[c]) * float64(nb[c]-x[c])
			}
			bt.Dist[i*k+j] = float32(s)
		}
	}
	return bt
}

func TestCPUWorkersBitwise(t *testing.T) {
	b := randomBatch(7, 300, 20, 24)
	var first []float64
	for _, w := range []int{1, 2, 3, 8} {
		dst := make([]float64, b.B*b.K)
		if err := (llc.CPU{Workers: w}).Code(dst, b, withParams(func(p *llc.Params) { p.Lambda = 0.01 })); err != nil {
			t.Fatalf("Workers=%d: %v", w, err)
		}
		if first == nil {
			first = dst
			continue
		}
		for i := range dst {
			if math.Float64bits(dst[i]) != math.Float64bits(first[i]) {
				t.Fatalf("Workers=%d: dst[%d] = %v, Workers=1 gave %v", w, i, dst[i], first[i])
			}
		}
	}
}

func TestCPULowestError(t *testing.T) {
	b := randomBatch(8, 500, 6, 5)
	b.Len = make([]int32, b.B)
	for i := range b.Len {
		b.Len[i] = 6
	}
	b.Len[400] = 0
	b.X[260*b.D] = float32(math.NaN())
	b.Len[130] = 7
	for _, w := range []int{1, 2, 4, 16} {
		err := (llc.CPU{Workers: w}).Code(make([]float64, b.B*b.K), b, llc.DefaultParams())
		if err == nil || !strings.Contains(err.Error(), "neighbourhood 130:") {
			t.Errorf("Workers=%d: error %v, want the one of neighbourhood 130", w, err)
		}
	}
}

func TestCPUMaxIter(t *testing.T) {
	b := randomBatch(9, 4, 50, 64)
	err := llc.CPU{}.Code(make([]float64, b.B*b.K), b, withParams(func(p *llc.Params) { p.MaxIter = 2 }))
	if err == nil || !strings.Contains(err.Error(), "did not converge") {
		t.Errorf("MaxIter 2 at K=50: error %v, want non-convergence", err)
	}
}

func TestCPUShapePanics(t *testing.T) {
	good := randomBatch(10, 3, 4, 5)
	for _, tc := range []struct {
		name string
		dst  int
		edit func(*llc.Batch)
		p    llc.Params
	}{
		{"short dst", 11, func(*llc.Batch) {}, llc.DefaultParams()},
		{"short X", 12, func(b *llc.Batch) { b.X = b.X[:14] }, llc.DefaultParams()},
		{"short N", 12, func(b *llc.Batch) { b.N = b.N[:59] }, llc.DefaultParams()},
		{"short Dist with locality", 12, func(b *llc.Batch) { b.Dist = nil }, withParams(func(p *llc.Params) { p.Lambda = 1 })},
		{"short Len", 12, func(b *llc.Batch) { b.Len = []int32{4, 4} }, llc.DefaultParams()},
		{"negative D", 12, func(b *llc.Batch) { b.D = -1 }, llc.DefaultParams()},
	} {
		b := good
		tc.edit(&b)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Code did not panic", tc.name)
				}
			}()
			_ = llc.CPU{}.Code(make([]float64, tc.dst), b, tc.p)
		}()
	}
	// Without the locality adaptor distances are not needed.
	b := good
	b.Dist = nil
	if err := (llc.CPU{}).Code(make([]float64, 12), b, llc.DefaultParams()); err != nil {
		t.Errorf("nil Dist, Lambda 0: %v", err)
	}
	// An empty batch is fine.
	if err := (llc.CPU{}).Code(nil, llc.Batch{K: 10, D: 3}, llc.DefaultParams()); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}

func TestParams(t *testing.T) {
	if d := llc.DefaultParams(); d != (llc.Params{Lambda: 0, Sigma: 1, Ridge: 1e-10, Tol: 1e-9, MaxIter: 1000}) {
		t.Errorf("DefaultParams() = %+v", d)
	}
	set := llc.Params{Lambda: 2, Sigma: 3, Ridge: 0, Tol: 1e-7, MaxIter: 5}
	for _, tc := range []struct {
		p       llc.Params
		wantErr string
	}{
		{llc.DefaultParams(), ""},
		{set, ""},
		{withParams(func(p *llc.Params) { p.Lambda = -1 }), "Lambda"},
		{withParams(func(p *llc.Params) { p.Lambda = math.Inf(1) }), "Lambda"},
		{withParams(func(p *llc.Params) { p.Sigma = -1 }), "Sigma"},
		{withParams(func(p *llc.Params) { p.Sigma = math.NaN() }), "Sigma"},
		{withParams(func(p *llc.Params) { p.Ridge = -1e-9 }), "Ridge"},
		{withParams(func(p *llc.Params) { p.Ridge = 1 }), "Ridge"},
		{withParams(func(p *llc.Params) { p.Tol = -1 }), "Tol"},
		{withParams(func(p *llc.Params) { p.MaxIter = -1 }), "MaxIter"},
		// Zero is a value, never "the default": the zero Params is invalid.
		{llc.Params{}, "Sigma"},
		{withParams(func(p *llc.Params) { p.Tol = 0 }), "Tol"},
		{withParams(func(p *llc.Params) { p.MaxIter = 0 }), "MaxIter"},
	} {
		err := tc.p.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%+v: Validate() = %v, want nil", tc.p, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%+v: Validate() = %v, want an error naming %s", tc.p, err, tc.wantErr)
		}
	}
}

func TestCPUAllocs(t *testing.T) {
	b := randomBatch(11, 256, 10, 32)
	dst := make([]float64, b.B*b.K)
	c := llc.CPU{Workers: 1}
	allocs := testing.AllocsPerRun(20, func() {
		if err := c.Code(dst, b, llc.DefaultParams()); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Code of 256 neighbourhoods on one worker: %v allocations per call, want 0", allocs)
	}
}

// TestDigits codes real kNN neighbourhoods of the sklearn digits (8x8 pixels
// 0..16: integer-valued, many exact duplicate distances, some pixels always
// zero), checks them with llctest.Check (KKT), and compares them with the
// codes at a far stricter solver tolerance.
func TestDigits(t *testing.T) {
	x := devdata.ReadLE[float32](t, filepath.Join(devdata.Dir(t, "sklearn_digits"), "features.f32"))
	const d, k, items = 64, 10, 200
	n := len(x) / d
	b := llc.Batch{B: items, K: k, D: d, X: x[:items*d], N: make([]float32, items*k*d), Dist: make([]float32, items*k)}
	type cand struct {
		dist float32
		j    int
	}
	cs := make([]cand, 0, n)
	for i := 0; i < items; i++ {
		cs = cs[:0]
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			var s float32
			for c := 0; c < d; c++ {
				v := x[i*d+c] - x[j*d+c]
				s += v * v
			}
			cs = append(cs, cand{s, j})
		}
		sort.Slice(cs, func(a, b int) bool {
			return cs[a].dist < cs[b].dist || cs[a].dist == cs[b].dist && cs[a].j < cs[b].j
		})
		for r := 0; r < k; r++ {
			copy(b.N[(i*k+r)*d:], x[cs[r].j*d:(cs[r].j+1)*d])
			b.Dist[i*k+r] = cs[r].dist
		}
	}
	for _, p := range []llc.Params{llc.DefaultParams(), withParams(func(p *llc.Params) { p.Lambda, p.Sigma = 1e-3, 200 })} {
		got := make([]float64, items*k)
		if err := (llc.CPU{}).Code(got, b, p); err != nil {
			t.Fatalf("Lambda %g: %v", p.Lambda, err)
		}
		if err := llctest.Check(got, b, p); err != nil {
			t.Errorf("Lambda %g: %v", p.Lambda, err)
		}
		strict := p
		strict.Tol = 1e-14
		want := make([]float64, items*k)
		if err := (llc.CPU{}).Code(want, b, strict); err != nil {
			t.Fatalf("Lambda %g, Tol 1e-14: %v", p.Lambda, err)
		}
		var support int
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-6 {
				t.Errorf("Lambda %g: neighbourhood %d: a[%d] = %.12g, at Tol 1e-14 %.12g", p.Lambda, i/k, i%k, got[i], want[i])
			}
			if got[i] > 0 {
				support++
			}
		}
		// The code is a real blend, not the nearest neighbour alone.
		if mean := float64(support) / items; mean < 2 {
			t.Errorf("Lambda %g: mean support %.2f neighbours, want >= 2", p.Lambda, mean)
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
