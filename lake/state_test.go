package lake

import (
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

func testState(standardised bool) *keptio.IVF {
	s := &keptio.IVF{Seed: 7, Metric: knn.L2, NProbe: 2, FitRows: 5,
		Model: &ivf.Model{D: 2, Centroids: []float32{0, 0, 1, 1, 2, 2}, Blocks: []int32{1, 2, 1}, Seed: 9, Metric: knn.L2},
		Keys:  []int64{10, 11, 12, 13, 14}, Probes: []int32{0, 1, 1, 2, 2, 1, 0, 2, 1, 0}}
	if standardised {
		s.Mean, s.Std = []float64{0.5, -1}, []float64{2, 3}
	}
	return s
}

// TestIVFStateUsable: a state serves a run with the same seed, metric,
// partitions and nprobe over at most twice its rows; otherwise it says why
// not.
func TestIVFStateUsable(t *testing.T) {
	o := options.Defaults()
	o.Seed, o.Standardise = 7, false
	o.NProbe = options.Some(2)
	s := testState(false)
	if why := usable(s, job.Unscanned(o, 0), 10); why != "" {
		t.Fatalf("usable: %s", why)
	}
	for _, c := range []struct {
		name string
		edit func(o *options.Options)
		n    int
		want string
	}{
		{"seed", func(o *options.Options) { o.Seed = 8 }, 10, "seed 7"},
		{"nprobe", func(o *options.Options) { o.NProbe = options.Some(3) }, 10, "probes 2"},
		{"partitions", func(o *options.Options) { o.Partitions = options.Some(4) }, 10, "3 partitions"},
		{"metric", func(o *options.Options) { o.Metric = knn.Cosine }, 10, "metric"},
		{"standardise", func(o *options.Options) { o.Standardise = true }, 10, "standardise"},
		{"grown", func(o *options.Options) {}, 11, "more than twice"},
	} {
		oc := o
		c.edit(&oc)
		if why := usable(s, job.Unscanned(oc, 0), c.n); !strings.Contains(why, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, why, c.want)
		}
	}
}

// TestIVFStateExtend: the kept probes serve the old rows, the new rows are
// probed against the kept model in the kept standardisation, and the next
// state is the kept one plus the new rows; a state missing an old row is
// not used.
func TestIVFStateExtend(t *testing.T) {
	s := testState(true)
	// Rows: the five kept ones in another order, then two new ones whose
	// raw features standardise (mean .5/-1, std 2/3) to centroid 2 and 0.
	d := &incData{n: 7, d: 2, keys: []int64{14, 12, 10, 11, 13, 20, 21},
		feats: []float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4.5, 5, 0.5, -1},
		isNew: []bool{false, false, false, false, false, true, true}}
	keyRow := map[int64]int{}
	for i, k := range d.keys {
		keyRow[k] = i
	}
	pt, next, ok, err := extend(s, d, keyRow, knn.CPU{})
	if err != nil || !ok {
		t.Fatalf("extend: %v %t", err, ok)
	}
	want := []int32{1, 0, 2, 1, 0, 1, 1, 2, 0, 2, 2, 1, 0, 1}
	if !slices.Equal(pt.Probe, want) {
		t.Errorf("probes %v, want %v", pt.Probe, want)
	}
	if !slices.Equal(next.Keys, []int64{10, 11, 12, 13, 14, 20, 21}) || !slices.Equal(next.Probes[10:], []int32{2, 1, 0, 1}) || next.Model != s.Model {
		t.Errorf("next state keys %v probes %v", next.Keys, next.Probes)
	}
	delete(keyRow, 13)
	d.keys[4] = 99
	keyRow[99] = 4
	if _, _, ok, err := extend(s, d, keyRow, knn.CPU{}); err != nil || ok {
		t.Errorf("a state missing an old row: ok %t, %v", ok, err)
	}
}
