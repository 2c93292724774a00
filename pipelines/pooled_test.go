package pipelines_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/schemas"
)

// writePairNoise writes n rows of c Gaussian blobs with 45% pair-flip
// noise (class y's labels flip to y + 1) as two Parquet shards in dir.
func writePairNoise(t *testing.T, dir string, n, c, d int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 1))
	centres := make([]float64, c*d)
	for x := range centres {
		centres[x] = 5 * rng.NormFloat64()
	}
	for part, lo := range []int{0, n / 2} {
		hi := lo + n/2
		r := &schemas.Rows{IDs: make([]int64, 0, hi-lo), D: d, LabelOff: []int32{0}}
		for i := lo; i < hi; i++ {
			y := int32(i % c)
			r.IDs = append(r.IDs, int64(i))
			for k := range d {
				r.Features = append(r.Features, float32(centres[int(y)*d+k]+rng.NormFloat64()))
			}
			if rng.Float64() < 0.45 {
				y = (y + 1) % int32(c)
			}
			r.Labels = append(r.Labels, y)
			r.LabelOff = append(r.LabelOff, int32(len(r.Labels)))
		}
		path := filepath.Join(dir, []string{"a.parquet", "b.parquet"}[part])
		if err := shardio.WriteInput(context.Background(), blobio.Local{}, path, shardio.Parquet, []*schemas.Rows{r}, schemas.LabelInt32, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPooledRun: relabel run with the defaults on pair-flip noise fits the
// pooled start, opens its gate and says so in summary.json (Pooled), and
// writes the same bytes at 1 and 3 workers; --pooled-iters 0 records no
// fit. In ivf mode the start is off unless asked for, and asking is
// refused, naming the flag.
func TestPooledRun(t *testing.T) {
	const n, c, d = 600, 5, 6
	in := t.TempDir()
	writePairNoise(t, in, n, c, d)
	ctx := context.Background()
	run := func(workers int, mod func(*options.Options)) (*pipelines.Summary, map[string][]byte) {
		t.Helper()
		o := options.Defaults()
		o.Input, o.Output, o.Rounds, o.L, o.Workers, o.Report = filepath.Join(in, "*.parquet"), t.TempDir(), 3, 30, options.Some(workers), false
		if mod != nil {
			mod(&o)
		}
		sum, err := pipelines.Run(ctx, o, embedded)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, name := range []string{"a.arrow", "b.arrow"} {
			b, err := os.ReadFile(filepath.Join(o.Output, name))
			if err != nil {
				t.Fatal(err)
			}
			files[name] = b
		}
		return sum, files
	}
	sum1, files1 := run(1, nil)
	p := sum1.Pooled
	if p == nil || !p.Open || p.Fitted != n || p.Structure < p.Gate || p.Gate != 0.5 {
		t.Fatalf("summary's pooled start %+v, want open, %d items fitted, structure >= gate .5", p, n)
	}
	if sum1.Options["pooled-iters"] != "30" {
		t.Errorf("recorded pooled-iters %q, want 30", sum1.Options["pooled-iters"])
	}
	_, files3 := run(3, nil)
	for name, b := range files1 {
		if !bytes.Equal(b, files3[name]) {
			t.Errorf("%s: 1 and 3 workers wrote different bytes", name)
		}
	}
	off, filesOff := run(2, func(o *options.Options) { o.PooledIters = options.Some(0) })
	if off.Pooled != nil || off.Options["pooled-iters"] != "0" {
		t.Errorf("--pooled-iters 0: summary's pooled %+v, recorded %q; want none, 0", off.Pooled, off.Options["pooled-iters"])
	}
	if bytes.Equal(filesOff["a.arrow"], files1["a.arrow"]) {
		t.Error("--pooled-iters 0 wrote the pooled start's bytes")
	}

	o := options.Defaults()
	o.Input, o.Output, o.Neighbours = filepath.Join(in, "*.parquet"), t.TempDir(), options.NeighboursIVF
	plan, err := pipelines.MakePlan(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Mixture.PooledIters != 0 || plan.Recorded()["pooled-iters"] != "0" {
		t.Errorf("ivf mode: pooled iterations %d, recorded %q; want 0 (not fitted there)", plan.Mixture.PooledIters, plan.Recorded()["pooled-iters"])
	}
	o.PooledIters = options.Some(5)
	var oe *options.Error
	if _, err := pipelines.MakePlan(ctx, o); !errors.As(err, &oe) || oe.Flag != "pooled-iters" {
		t.Errorf("ivf mode with --pooled-iters 5: %v, want an error naming --pooled-iters", err)
	}
}
