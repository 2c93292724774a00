package ivfstages

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

// TestKeep: with Params.Keep the fit and the probe write down the model,
// the moments and every row's probes, and keptio.ReadIVFDir gathers them: the model
// the fit emitted, the probes the probe emitted, which are each row's
// nearest centroids in the kept standardisation; a batch's file missing is
// refused.
func TestKeep(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 600, 70)
	dir := t.TempDir()
	fit := &fitFn{P: fixtureParams(600), Standardise: true, Keep: dir}
	sf := &sampleFn{Cap: 200, Seed: 1}
	acc := sf.CreateAccumulator()
	for _, r := range f.batches {
		acc = sf.AddInput(acc, r)
	}
	var model ivf.Model
	if err := fit.ProcessElement(ctx, sf.ExtractOutput(acc), f.stats, func(m ivf.Model) { model = m }); err != nil {
		t.Fatal(err)
	}
	pf := &probeFn{NProbe: 3, Standardise: true, Keep: dir}
	probes := map[int64][]int32{}
	var all []float32
	var keys []int64
	for _, r := range f.batches {
		if err := pf.ProcessElement(ctx, r, f.stats, model, func(p Probed) {
			for i, k := range p.Rows.IDs {
				probes[k] = p.Probe[i*p.NProbe : (i+1)*p.NProbe]
			}
		}); err != nil {
			t.Fatal(err)
		}
		all = append(all, r.Features...)
		keys = append(keys, r.IDs...)
	}
	k, err := keptio.ReadIVFDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*k.Model, model) || k.FitRows != f.stats.N || !slices.Equal(k.Mean, f.stats.Mean) || !slices.Equal(k.Std, f.stats.M2) || k.NProbe != 3 {
		t.Fatalf("kept model %d partitions, rows %d, nprobe %d: not the fitted one (%d partitions) or not its moments", k.Model.P(), k.FitRows, k.NProbe, model.P())
	}
	if got, want := slices.Sorted(slices.Values(k.Keys)), slices.Sorted(slices.Values(keys)); !slices.Equal(got, want) {
		t.Fatalf("kept %d keys, want each of the %d rows' once", len(got), len(want))
	}
	// The oracle: every row probed again against the kept model, in the
	// kept standardisation.
	engine.Standardise(all, f.stats.D, k.Mean, k.Std)
	pt, err := ivf.Assign(knn.Matrix{Rows: len(keys), Cols: f.stats.D, Data: all}, k.Model, k.NProbe, knn.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	row := map[int64]int{}
	for i, key := range keys {
		row[key] = i
	}
	for j, key := range k.Keys {
		got := k.Probes[j*k.NProbe : (j+1)*k.NProbe]
		i := row[key]
		if !slices.Equal(got, probes[key]) || !slices.Equal(got, pt.Probe[i*k.NProbe:(i+1)*k.NProbe]) {
			t.Fatalf("key %d: kept probes %v, probed %v, oracle %v", key, got, probes[key], pt.Probe[i*k.NProbe:(i+1)*k.NProbe])
		}
	}
	// A batch lost: refused.
	names, _ := filepath.Glob(filepath.Join(dir, "probes-*"))
	if err := os.Remove(names[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := keptio.ReadIVFDir(ctx, dir); err == nil || !strings.Contains(err.Error(), "of 600") {
		t.Errorf("a batch's file missing: %v, want the rows counted", err)
	}
	keptio.RemoveIVFDir(ctx, dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("RemoveIVFDir left %s: %v", dir, err)
	}
}
