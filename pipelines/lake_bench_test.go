package pipelines_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/schemas"
)

// blobRows makes n rows of 10 Gaussian classes in d = 32 with 20% of the
// labels flipped uniformly, ids from first on.
func blobRows(first int64, n int, seed uint64) *schemas.Rows {
	const d, c = 32, 10
	rng := rand.New(rand.NewPCG(seed, 7))
	centres := rand.New(rand.NewPCG(1, 1))
	mu := make([]float32, c*d)
	for i := range mu {
		mu[i] = float32(centres.NormFloat64() * 2)
	}
	r := &schemas.Rows{D: d, LabelOff: []int32{0}}
	for i := 0; i < n; i++ {
		y := rng.IntN(c)
		r.IDs = append(r.IDs, first+int64(i))
		for j := 0; j < d; j++ {
			r.Features = append(r.Features, mu[y*d+j]+float32(rng.NormFloat64()))
		}
		lab := int32(y)
		if rng.Float64() < 0.2 {
			lab = int32(rng.IntN(c))
		}
		r.Labels = append(r.Labels, lab)
		r.LabelOff = append(r.LabelOff, int32(len(r.Labels)))
	}
	return r
}

// BenchmarkLakeAppend: a table of RELABEL_LAKE_ROWS rows (default 20,000)
// plus a 1% append. It times a full run over the grown table and the
// incremental run that relabels the append (after a full run over the table
// before it), and reports incremental/full.
func BenchmarkLakeAppend(b *testing.B) {
	n := 20000
	if s := os.Getenv("RELABEL_LAKE_ROWS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	ctx := context.Background()
	for range b.N {
		l := newTestLake(b)
		l.appendRows(b, blobRows(0, n, 1))
		inc := l.config("ns.inc")
		inc.Lake.Incremental = true
		if _, err := pipelines.Run(ctx, inc, embedded); err != nil {
			b.Fatal(err)
		}
		l.appendRows(b, blobRows(int64(n), n/100, 2))
		t0 := time.Now()
		sum, err := pipelines.Run(ctx, inc, embedded)
		if err != nil {
			b.Fatal(err)
		}
		ti := time.Since(t0)
		t0 = time.Now()
		if _, err := pipelines.Run(ctx, l.config("ns.full"), embedded); err != nil {
			b.Fatal(err)
		}
		tf := time.Since(t0)
		b.ReportMetric(ti.Seconds(), "incremental-s")
		b.ReportMetric(tf.Seconds(), "full-s")
		b.ReportMetric(ti.Seconds()/tf.Seconds(), "incremental/full")
		b.Logf("rows %d + %d: incremental %.2fs (new %d, rescored %d, searched %d, files +%d -%d), full %.2fs, ratio %.3f",
			n, n/100, ti.Seconds(), sum.Lake.NewRows, sum.Lake.Rescored, sum.Lake.Searched, sum.Lake.AddedFiles, sum.Lake.RemovedFiles, tf.Seconds(), ti.Seconds()/tf.Seconds())
	}
}
