package ivf_test

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/relabel/relabel/internal/devdata"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

var (
	grid    = flag.Bool("ivf.grid", false, "compare ivf with exact on the whole dev grid (digits, satellite, pendigits, letter; sym and idn), not digits idn alone")
	fashion = flag.Bool("ivf.fashion", false, "compare ivf with exact on fashion_mnist_pca50 too, at the default partitioning (what auto picks for it)")
)

// rounds runs o.Rounds rounds of sample + EM over fixed neighbourhoods, as
// engine.Run does after its search (states quantized to what packed states
// carry): the engine-level equivalent of the pipeline's rounds, for any
// neighbourhoods.
func rounds(keys []int64, labels, off []int32, nb *engine.Neighbourhoods, o engine.Options) mixture.States {
	n, k := len(keys), nb.K
	mp := o.Mixture
	states := make([]mixture.State, n)
	next := make([]mixture.State, n)
	var init []mixture.State
	for i := range states {
		states[i].Init(labels[off[i]:off[i+1]], mp.C, mp.C0, mp.Smooth)
		states[i].Quantize()
	}
	if mp.UsesInit() {
		init = make([]mixture.State, n)
		for i := range init {
			init[i].CopyFrom(&states[i])
		}
	}
	for r := 0; r < o.Rounds; r++ {
		var wg sync.WaitGroup
		workers := runtime.GOMAXPROCS(0)
		for g := 0; g < workers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ws mixture.Workspace
				neigh := make([]mixture.State, k)
				var w []float64
				for i := g; i < n; i += workers {
					neigh, w = neigh[:0], w[:0]
					for j := 0; j < k; j++ {
						c := nb.Index[i*k+j]
						if c < 0 {
							continue
						}
						neigh = neigh[:len(neigh)+1]
						neigh[len(neigh)-1].CopyFrom(&states[c])
						w = append(w, nb.Weight[i*k+j])
					}
					var in *mixture.State
					if init != nil {
						in = &init[i]
					}
					iw := mp.AnchorWeight(engine.Annotations(labels[off[i]:off[i+1]]))
					ws.Round(&next[i], &states[i], in, iw, neigh, w, uint64(keys[i]), r, &mp)
					next[i].Quantize()
				}
			}()
		}
		wg.Wait()
		states, next = next, states
	}
	var out mixture.States
	out.Reset()
	for i := range states {
		out.Append(&states[i])
	}
	return out
}

// ivfNeighbourhoods searches with ivf and weights the neighbours (LLC) as the
// pipeline's search DoFn does.
func ivfNeighbourhoods(t testing.TB, keys []int64, x knn.Matrix, p ivf.Params, o engine.Options) (*engine.Neighbourhoods, float64) {
	t.Helper()
	m := fit(t, keys, x, p)
	pt, err := ivf.Assign(x, m, p.NProbe, knn.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	var res knn.Result
	if _, err := ivf.Search(&res, x, keys, pt, m.P(), o.K, o.Metric, knn.CPU{}); err != nil {
		t.Fatal(err)
	}
	nb := &engine.Neighbourhoods{K: o.K, Index: res.Index, Weight: make([]float64, len(res.Index))}
	var wb engine.WeightBuffer
	var sub knn.Result
	for lo := 0; lo < x.Rows; lo += engine.BatchRows {
		hi := min(lo+engine.BatchRows, x.Rows)
		sub.K, sub.Index, sub.Dist = o.K, res.Index[lo*o.K:hi*o.K], res.Dist[lo*o.K:hi*o.K]
		q := knn.Matrix{Rows: hi - lo, Cols: x.Cols, Data: x.Data[lo*x.Cols : hi*x.Cols]}
		if err := wb.Weights(nb.Weight[lo*o.K:hi*o.K], q, x, &sub, o.Weighting, o.LLC, llc.CPU{}); err != nil {
			t.Fatal(err)
		}
	}
	all := make([]int, x.Rows)
	for i := range all {
		all[i] = i
	}
	return nb, recall(t, x, keys, all, &res, o.K)
}

func accuracy(s *mixture.States, truth []int32) float64 {
	right := 0
	for i, c := range truth {
		if top, _ := s.Top(i); top == c {
			right++
		}
	}
	return float64(right) / float64(len(truth))
}

// TestQualityVsExact: cleaned-label accuracy with ivf neighbours within 0.5
// point of exact neighbours, at the CLI's default engine options,
// with partitions small enough that ivf really approximates: min(500, n/32)
// items per partition, nprobe 8. By default sklearn_digits with idn noise
// (each cell costs two full relabellings); -ivf.grid runs both noises of
// digits, satellite, pendigits and letter, -ivf.fashion adds
// fashion_mnist_pca50 at the default partitioning.
func TestQualityVsExact(t *testing.T) {
	type cell struct {
		ds     string
		noises []string
	}
	cells := []cell{{"sklearn_digits", []string{"idn"}}}
	if *grid {
		cells = nil
		for _, ds := range []string{"sklearn_digits", "satellite", "pendigits", "letter"} {
			cells = append(cells, cell{ds, []string{"sym", "idn"}})
		}
	}
	if *fashion {
		cells = append(cells, cell{"fashion_mnist_pca50", []string{"sym", "idn"}})
	}
	for _, c := range cells {
		dir := devdata.Dir(t, c.ds)
		var meta struct{ N, D, C int }
		mb, err := os.ReadFile(filepath.Join(dir, "meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(mb, &meta); err != nil {
			t.Fatal(err)
		}
		var keys []int64
		var x knn.Matrix
		if _, err := os.Stat(filepath.Join(dir, "features.f32")); err == nil {
			x = knn.Matrix{Rows: meta.N, Cols: meta.D, Data: devdata.ReadLE[float32](t, filepath.Join(dir, "features.f32"))}
			mean, std := engine.Moments(x.Data, x.Rows, x.Cols)
			engine.Standardise(x.Data, x.Cols, mean, std)
			keys = make([]int64, meta.N)
			for i := range keys {
				keys[i] = int64(i)
			}
		} else {
			keys, x, _ = loadParquet(t, filepath.Join(dir, "clean.parquet")) // ids 0..n-1 in order
		}
		truth := devdata.ReadLE[int32](t, filepath.Join(dir, "truth.i32"))
		off := make([]int32, meta.N+1)
		for i := range off {
			off[i] = int32(i)
		}
		d := options.Defaults()
		o, err := d.Engine(meta.C)
		if err != nil {
			t.Fatal(err)
		}
		exactNB, err := engine.Neighbours(x.Data, keys, x.Cols, engine.SelectCandidates(keys, 0, 0), o, engine.Backends{Searcher: knn.CPU{}, Coder: llc.CPU{}})
		if err != nil {
			t.Fatal(err)
		}
		size := min(ivf.DefaultPartitionSize, meta.N/32)
		p := ivf.DefaultParams(int64(meta.N)).WithPartitions(int64(meta.N), (meta.N+size-1)/size)
		p.Seed = 1
		ivfNB, rec := ivfNeighbourhoods(t, keys, x, p, o)
		for _, noise := range c.noises {
			labels := devdata.ReadLE[int32](t, filepath.Join(dir, "noisy-"+noise+"-0.4.i32"))
			t0 := time.Now()
			ex := rounds(keys, labels, off, exactNB, o)
			iv := rounds(keys, labels, off, ivfNB, o)
			ae, ai := accuracy(&ex, truth), accuracy(&iv, truth)
			t.Logf("%s %s-0.4: exact %.4f, ivf %.4f (%+.2f points; P=%d, nprobe %d, Recall@10 %.4f) in %v",
				c.ds, noise, ae, ai, 100*(ai-ae), p.Partitions, p.NProbe, rec, time.Since(t0).Round(time.Millisecond))
			if math.Abs(ai-ae) > 0.005 {
				t.Errorf("%s %s-0.4: ivf accuracy %.4f, exact %.4f: more than 0.5 point apart", c.ds, noise, ai, ae)
			}
		}
	}
}
