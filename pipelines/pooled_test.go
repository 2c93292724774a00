package pipelines_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
)

// writePairNoise writes n rows of c Gaussian blobs with 45% pair-flip
// noise (class y's labels flip to y + 1) as two Parquet shards in dir,
// and returns them.
func writePairNoise(t *testing.T, dir string, n, c, d int) []*schemas.Rows {
	t.Helper()
	var out []*schemas.Rows
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
		out = append(out, r)
	}
	return out
}

// runPairNoise runs relabel (3 rounds, L 30, no report) on the shards
// writePairNoise wrote to in, with mod's options, and returns the summary,
// the output shards' bytes and the cleaned accuracy (truth: id mod c).
func runPairNoise(t *testing.T, in string, c int, mod func(*options.Options)) (*resultio.Summary, map[string][]byte, float64) {
	t.Helper()
	o := options.Defaults()
	o.Input, o.Output, o.Rounds, o.L, o.Report = filepath.Join(in, "*.parquet"), t.TempDir(), 3, 30, false
	mod(&o)
	sum, err := pipelines.Run(context.Background(), job.NewConfig(o), embedded)
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
	right := 0
	clean := cleanLabels(t, o.Output)
	for id, y := range clean {
		if y == int32(id%int64(c)) {
			right++
		}
	}
	return sum, files, float64(right) / float64(len(clean))
}

// TestPooledRun: relabel run with the defaults on pair-flip noise fits the
// pooled start, opens its gate and says so in summary.json (Pooled), and
// writes the same bytes at 1 and 3 workers; --pooled-iters 0 records no
// fit. Annotator-aware runs keep it off and refuse --pooled-iters.
func TestPooledRun(t *testing.T) {
	const n, c, d = 600, 5, 6
	in := t.TempDir()
	writePairNoise(t, in, n, c, d)
	ctx := context.Background()
	run := func(workers int, mod func(*options.Options)) (*resultio.Summary, map[string][]byte) {
		t.Helper()
		sum, files, _ := runPairNoise(t, in, c, func(o *options.Options) {
			o.Workers = options.Some(workers)
			if mod != nil {
				mod(o)
			}
		})
		return sum, files
	}
	sum1, files1 := run(1, nil)
	p := sum1.Pooled
	if p == nil || !p.Open || p.Fitted != n || p.Structure < p.Gate || p.Gate != 0.5 {
		t.Fatalf("summary's pooled start %+v, want open, %d items fitted, structure >= gate .5", p, n)
	}
	if sum1.Options["pooled-iters"] != "30" || sum1.Options["pooled-tol"] != "0.001" {
		t.Errorf("recorded pooled-iters %q, pooled-tol %q; want 30, 0.001", sum1.Options["pooled-iters"], sum1.Options["pooled-tol"])
	}
	// The fit stops at --pooled-tol before its 30 steps, and says after how
	// many; with --pooled-tol 0 it runs all 30.
	if p.Iters < 2 || p.Iters >= 30 {
		t.Errorf("pooled fit ran %d steps, want stopped by --pooled-tol within 2..29", p.Iters)
	}
	if all, _ := run(1, func(o *options.Options) { o.PooledTol = 0 }); all.Pooled == nil || all.Pooled.Iters != 30 {
		t.Errorf("--pooled-tol 0: summary's pooled %+v, want 30 steps", all.Pooled)
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

	// Annotator-aware runs do not fit it: off unless asked for, and asking
	// is refused, naming the flag.
	ann := t.TempDir()
	writeCrowdAnnotations(t, ann, crowd.Simulate(200, 5, 4, crowdAnnotators(), 21))
	o := options.Defaults()
	o.Annotations, o.Output = filepath.Join(ann, "*.parquet"), t.TempDir()
	plan, err := job.Resolve(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Mixture.PooledIters != 0 || plan.Recorded()["pooled-iters"] != "0" {
		t.Errorf("annotators: pooled iterations %d, recorded %q; want 0 (not fitted there)", plan.Mixture.PooledIters, plan.Recorded()["pooled-iters"])
	}
	o.PooledIters = options.Some(5)
	var oe *options.Error
	if _, err := job.Resolve(ctx, o); !errors.As(err, &oe) || oe.Flag != "pooled-iters" {
		t.Errorf("annotators with --pooled-iters 5: %v, want an error naming --pooled-iters", err)
	}
}

// TestPooledIVF: relabel run in ivf mode fits the pooled start too. With
// one partition (the search in each block exact, two blocks, so some
// neighbours are external) the neighbour graph is exact mode's, and the
// fit is the same: the same items fitted and the same structure (the
// model bit for bit is ivfstages' TestPooledStart). The run beats a plain
// vote of the neighbours' given labels and the paper's start
// (--pooled-iters 0) on pair-flip noise, says so in summary.json, and
// writes the same bytes at 1 and 3 workers, spilled or not, with its
// rounds in one stage or joined round by round.
func TestPooledIVF(t *testing.T) {
	const n, c, d = 600, 5, 6
	in := t.TempDir()
	rows := writePairNoise(t, in, n, c, d)
	run := func(mod func(*options.Options)) (*resultio.Summary, map[string][]byte, float64) {
		t.Helper()
		return runPairNoise(t, in, c, func(o *options.Options) {
			o.Neighbours, o.Partitions, o.NProbe = options.NeighboursIVF, options.Some(1), options.Some(1)
			mod(o)
		})
	}
	spill := func(o *options.Options) { o.SpillDir = options.Some(t.TempDir()) }
	headFit := func(o *options.Options) { o.Head = options.Some(options.HeadFit) }
	sum, files, acc := run(func(o *options.Options) { spill(o); o.Workers = options.Some(1); headFit(o) })
	if sum.Neighbours != options.NeighboursIVF {
		t.Fatalf("ran %q neighbours, want ivf", sum.Neighbours)
	}
	p := sum.Pooled
	if p == nil || !p.Open || p.Fitted != n || sum.Options["pooled-iters"] != "30" || sum.Options[resultio.MetaPooledStart] != resultio.PooledStartOpen {
		t.Fatalf("ivf: summary's pooled start %+v, options %v; want open, %d items fitted, pooled-iters 30, pooled-start open", p, sum.Options, n)
	}
	exact, _, accExact := run(func(o *options.Options) {
		o.Neighbours, o.Partitions, o.NProbe = options.NeighboursExact, options.Opt[int]{}, options.Opt[int]{}
	})
	if exact.Pooled == nil || *exact.Pooled != *p {
		t.Errorf("ivf's pooled fit %+v, exact mode's on the same graph %+v: want the same", p, exact.Pooled)
	}
	_, _, accOff := run(func(o *options.Options) { spill(o); o.PooledIters = options.Some(0); headFit(o) })
	vote := voteAccuracy(rows, c, 10)
	t.Logf("pair-0.45 blobs: ivf %.4f, exact %.4f, ivf --pooled-iters 0 %.4f, K=10 vote %.4f", acc, accExact, accOff, vote)
	if acc < vote+0.05 || acc < accOff+0.05 {
		t.Errorf("ivf with the pooled start: accuracy %.4f, want 5 points above the vote's %.4f and the paper start's %.4f", acc, vote, accOff)
	}
	// The linear head (opt-in in the local rounds, off unset: its cost at
	// ivf mode's sizes): at 3 workers the same bytes; the joined and
	// shuffled rounds have none, and match the local rounds with --head
	// off, as the local rounds with --head unset do.
	if sum.Options["head"] != options.HeadFit {
		t.Errorf("ivf, local rounds: head %q recorded, want %s", sum.Options["head"], options.HeadFit)
	}
	headOff := func(o *options.Options) { o.Head = options.Some(options.HeadOff) }
	offSum, offFiles, accHeadOff := run(func(o *options.Options) { spill(o); o.Workers = options.Some(1); headOff(o) })
	if offSum.Options["head"] != options.HeadOff {
		t.Errorf("ivf --head off: head %q recorded", offSum.Options["head"])
	}
	// (A head without the blocks' features fails the run: the local
	// rounds' head checks every block has them; pipelines/ivfstages'
	// TestLocalRoundsHead checks its states against engine.Run's.)
	t.Logf("ivf with the head %.4f, --head off %.4f", acc, accHeadOff)
	// The files record the options, so compare what the states make.
	if reflect.DeepEqual(sum.Transition, offSum.Transition) {
		t.Error("ivf: the same posteriors with and without the head; it had no say")
	}
	_, got, _ := run(func(o *options.Options) { spill(o); o.Workers = options.Some(3); headFit(o) })
	for f, b := range files {
		if !bytes.Equal(b, got[f]) {
			t.Errorf("3 workers, spilled, with the head: %s differs from the spilled run's at 1 worker", f)
		}
	}
	for name, mod := range map[string]func(*options.Options){
		"3 workers, spilled, joined rounds": func(o *options.Options) { spill(o); o.Workers = options.Some(3); o.LocalMiB = 0 },
		"1 worker, shuffled, in waves":      func(o *options.Options) { o.Workers = options.Some(1); o.WaveMiB = options.Some(1) },
		"3 workers, shuffled, no waves":     func(o *options.Options) { o.Workers = options.Some(3); o.WaveMiB = options.Some(-1) },
		"1 worker, spilled, --head unset":   func(o *options.Options) { spill(o); o.Workers = options.Some(1); o.Head = options.Opt[string]{} },
	} {
		s, got, _ := run(func(o *options.Options) { headOff(o); mod(o) })
		if s.Options["head"] != options.HeadOff {
			t.Errorf("%s: head %q recorded, want off", name, s.Options["head"])
		}
		for f, b := range offFiles {
			if !bytes.Equal(b, got[f]) {
				t.Errorf("%s: %s differs from the spilled run's at 1 worker with --head off", name, f)
			}
		}
	}
	// Unset, a join per round has no head (and says so); given, it is
	// refused naming the flag.
	if s, _, _ := run(func(o *options.Options) { spill(o); o.LocalMiB = 0 }); s.Options["head"] != options.HeadOff {
		t.Errorf("joined rounds, --head unset: %q recorded, want off", s.Options["head"])
	}
}

// voteAccuracy is the accuracy of a plain majority vote (ties to the
// smaller class) of each item's k nearest neighbours' given labels, by
// brute force over the rows writePairNoise wrote (one label each, truth
// id mod c).
func voteAccuracy(rows []*schemas.Rows, c, k int) float64 {
	var ids []int64
	var x []float32
	var labels []int32
	var d int
	for _, r := range rows {
		ids, x, labels, d = append(ids, r.IDs...), append(x, r.Features...), append(labels, r.Labels...), r.D
	}
	right := 0
	for i := range ids {
		dist := make([]float64, len(ids))
		for j := range ids {
			for f := range d {
				v := float64(x[i*d+f] - x[j*d+f])
				dist[j] += v * v
			}
		}
		order := make([]int, 0, len(ids)-1)
		for j := range ids {
			if j != i {
				order = append(order, j)
			}
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(dist[a], dist[b]) })
		votes := make([]int, c)
		for _, j := range order[:k] {
			votes[labels[j]]++
		}
		if int64(slices.Index(votes, slices.Max(votes))) == ids[i]%int64(c) {
			right++
		}
	}
	return float64(right) / float64(len(ids))
}
