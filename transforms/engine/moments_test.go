package engine

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// The moments and the z-scores are the same bits on any core count: each
// column is summed over the rows in order, each row scaled alone.
func TestMomentsCores(t *testing.T) {
	const n, d = 3001, 67 // above eachSpan's cut, spans of uneven size
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n*d)
	for i := range x {
		x[i] = float32(r.NormFloat64()*3 + float64(i%d))
	}
	for j := 0; j < n; j++ { // one constant column: std 1
		x[j*d+5] = 2
	}
	// The plain loops, one core.
	mean, std := make([]float64, d), make([]float64, d)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			mean[j] += float64(x[i*d+j])
		}
	}
	for j := range mean {
		mean[j] /= n
	}
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			dv := float64(x[i*d+j]) - mean[j]
			std[j] += dv * dv
		}
	}
	for j := range std {
		if std[j] = math.Sqrt(std[j] / n); std[j] == 0 {
			std[j] = 1
		}
	}
	want := make([]float32, len(x))
	for i := range x {
		want[i] = float32((float64(x[i]) - mean[i%d]) / std[i%d])
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		m, s := Moments(x, n, d)
		for j := range m {
			if math.Float64bits(m[j]) != math.Float64bits(mean[j]) || math.Float64bits(s[j]) != math.Float64bits(std[j]) {
				t.Fatalf("%d cores: column %d moments %v, %v; one core's %v, %v", procs, j, m[j], s[j], mean[j], std[j])
			}
		}
		got := make([]float32, len(x))
		StandardiseInto(got, x, d, m, s)
		in := append([]float32(nil), x...)
		Standardise(in, d, m, s)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(in[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d cores: element %d z-scored to %v (in place %v), one core's %v", procs, i, got[i], in[i], want[i])
			}
		}
	}
}
