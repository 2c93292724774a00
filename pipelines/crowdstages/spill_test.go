package crowdstages

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
)

// sameFiles fails unless dirs a and b hold the same file names with the
// same bytes; it returns how many files there are.
func sameFiles(t *testing.T, what, a, b string) int {
	t.Helper()
	ea, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := os.ReadDir(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ea) != len(eb) {
		t.Fatalf("%s: %d files in memory, %d spilled", what, len(ea), len(eb))
	}
	for k, e := range ea {
		if eb[k].Name() != e.Name() {
			t.Fatalf("%s: file %q in memory, %q spilled", what, e.Name(), eb[k].Name())
		}
		x, err := os.ReadFile(filepath.Join(a, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s: %s differs between the in-memory and the spilled run", what, e.Name())
		}
	}
	return len(ea)
}

// leftGens fails unless the spill directory holds only the last
// generation, iteration iterations' (every earlier one removed by the
// stages, the last left for the caller).
func leftGens(t *testing.T, what, dir string, iterations int) {
	t.Helper()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Base(spillio.Dir(dir).Gen(iterations))
	if len(left) != 1 || left[0].Name() != want {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("%s: spill directory holds %v after the run, want [%s]", what, names, want)
		return
	}
	files, err := os.ReadDir(filepath.Join(dir, want))
	if err != nil || len(files) == 0 {
		t.Errorf("%s: last generation holds %d files (%v), want the final batches", what, len(files), err)
	}
}

// TestSpillLabelOnly: label-only mode with its batches spilled to files
// writes the same bytes (output shards, annotators file and its report) as
// with them in the runner's memory, and removes every generation but the
// last as it goes.
func TestSpillLabelOnly(t *testing.T) {
	const iterations = 5
	cr := crowd.Simulate(900, testC, 3, testAnnotators(), 31)
	in := t.TempDir()
	writeShards(t, in, flatten(cr), 3, false)
	units, lay, err := annotio.Scan(context.Background(), filepath.Join(in, "*.parquet"), annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC})
	if err != nil {
		t.Fatal(err)
	}
	run := func(out string, sp spillio.Dir) {
		p, s := beam.NewPipelineWithRoot()
		anns := ReadAnnotations(s, beam.CreateList(s, units), annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC}, 3)
		items := LabelOnly(s, anns, Params{Crowd: crowdP(iterations), C0: testC0, Buckets: 3,
			AnnotatorKind: lay.AnnotatorKind, TmpDir: out, Format: shardio.ArrowFile, Spill: sp})
		stages.Write(s, items, stages.WriteParams{TmpDir: out, Format: shardio.ArrowFile, LabelKind: schemas.LabelInt32, IDKind: schemas.IDInt64, C: testC, Cal: resultio.Calibration{Temperature: 1}})
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
	}
	mem, spilled, dir := t.TempDir(), t.TempDir(), t.TempDir()
	run(mem, "")
	run(spilled, spillio.Dir(dir))
	if n := sameFiles(t, "label-only", mem, spilled); n < 5 {
		t.Errorf("label-only: %d files written, want 3 shards, the annotators file and its report", n)
	}
	leftGens(t, "label-only", dir, iterations)
}

// TestSpillWithFeatures: the same with features (neighbour priors from the
// candidates' posteriors of the previous iteration, spilled too: their
// generation goes with the batches', so only the last one is left).
func TestSpillWithFeatures(t *testing.T) {
	const iterations, K = 4, 5
	cr := crowd.Simulate(300, testC, 2, testAnnotators(), 33)
	items, _ := featureItems(cr, K, nil)
	in := t.TempDir()
	writeShards(t, in, flatten(cr), 2, false)
	units, lay, err := annotio.Scan(context.Background(), filepath.Join(in, "*.parquet"), annotio.Options{Columns: annotio.DefaultColumns()})
	if err != nil {
		t.Fatal(err)
	}
	run := func(out string, sp spillio.Dir) {
		p, s := beam.NewPipelineWithRoot()
		anns := ReadAnnotations(s, beam.CreateList(s, units), annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC}, 4)
		res := WithFeatures(s, beam.CreateList(s, items), anns, Params{Crowd: crowdP(iterations), C0: testC0, Buckets: 4,
			AnnotatorKind: lay.AnnotatorKind, TmpDir: out, Format: shardio.ArrowFile, Spill: sp})
		stages.Write(s, res, stages.WriteParams{TmpDir: out, Format: shardio.ArrowFile, LabelKind: schemas.LabelInt32, IDKind: schemas.IDInt64, C: testC, Cal: resultio.Calibration{Temperature: 1}})
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
	}
	mem, spilled, dir := t.TempDir(), t.TempDir(), t.TempDir()
	run(mem, "")
	run(spilled, spillio.Dir(dir))
	if n := sameFiles(t, "features", mem, spilled); n < 3 {
		t.Errorf("features: %d files written, want the shards, the annotators file and its report", n)
	}
	leftGens(t, "features", dir, iterations)
}

// TestUnspillMismatch: a reference to another batch's bytes is an error
// naming the file, not a silent swap.
func TestUnspillMismatch(t *testing.T) {
	sp := spillio.Dir(t.TempDir())
	a := Batch{Items: stages.Items{Shard: "s", Offset: 0, IDs: []int64{1}}, C: 2, AnnOff: []int32{0}, Post: []float64{.5, .5}}
	b := Batch{Items: stages.Items{Shard: "s", Offset: 64}, C: 2}
	if err := put(sp, 0, &a); err != nil {
		t.Fatal(err)
	}
	if a.Len() != 0 || a.Spilled.Path == "" {
		t.Fatalf("put left the batch inline: %+v", a)
	}
	b.Spilled = a.Spilled
	if err := b.unspill(); err == nil || !bytes.Contains([]byte(err.Error()), []byte(a.Spilled.Path)) {
		t.Errorf("unspilling another batch's bytes: %v, want an error naming %s", err, a.Spilled.Path)
	}
	if err := a.unspill(); err != nil || a.Len() != 1 || a.Post[1] != .5 {
		t.Errorf("unspill: %v, %+v", err, a)
	}
}

// TestSpillCandPosts: spilled, an iteration's candidate posteriors travel
// as a reference of a few bytes (what Prism keeps as the side input), read
// back equal to the inline ones, decoded once per process, and go with
// their generation.
func TestSpillCandPosts(t *testing.T) {
	const C = 3
	batches := []Batch{
		{Items: stages.Items{Shard: "s", Offset: 0, Cand: []int32{2, -1, 0}}, C: C, Post: []float64{.1, .2, .7, .3, .3, .4, .5, .25, .25}},
		{Items: stages.Items{Shard: "s", Offset: 3, Cand: []int32{1}}, C: C, Post: []float64{.6, .3, .1}},
	}
	combine := func(f *candPostsFn) candMsg {
		a := f.CreateAccumulator()
		var err error
		for _, b := range batches {
			if a, err = f.AddInput(a, b); err != nil {
				t.Fatal(err)
			}
		}
		m, err := f.ExtractOutput(a)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	inline := combine(&candPostsFn{C: C})
	want := []float64{.5, .25, .25, .6, .3, .1, .1, .2, .7}
	if inline.Spilled.Path != "" || inline.Cand.C != C || !slices.Equal(inline.Cand.Post, want) {
		t.Fatalf("inline: %+v, want posteriors %v in candidate order", inline, want)
	}
	sp := spillio.Dir(t.TempDir())
	msg := combine(&candPostsFn{C: C, Gen: 2, Spill: sp})
	if msg.Spilled.Path == "" || len(msg.Cand.Post) != 0 {
		t.Fatalf("spilled: the message carries the posteriors: %+v", msg)
	}
	if filepath.Dir(msg.Spilled.Path) != sp.Gen(2) {
		t.Errorf("spilled into %s, want generation 2 (%s)", msg.Spilled.Path, sp.Gen(2))
	}
	enc := encodeCandMsg(msg)
	if len(enc) > 200 {
		t.Errorf("spilled message encodes to %d bytes, want a reference", len(enc))
	}
	dec, err := decodeCandMsg(enc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dec.get()
	if err != nil || got.C != C || !slices.Equal(got.Post, want) {
		t.Fatalf("spilled read back: %+v %v, want %v", got, err, want)
	}
	again, err := msg.get()
	if err != nil || again != got {
		t.Errorf("second read of the same reference decoded a new copy (%p, %p, %v)", got, again, err)
	}
	rt, err := decodeCandMsg(encodeCandMsg(inline))
	if err != nil || rt.Spilled.Path != "" || !slices.Equal(rt.Cand.Post, want) {
		t.Errorf("inline message round trip: %+v %v", rt, err)
	}
	if err := drop(sp, 2); err != nil {
		t.Fatal(err)
	}
	other := candMsg{Spilled: msg.Spilled}
	other.Spilled.Len++ // not the cached reference: read from the (removed) file
	if _, err := other.get(); err == nil || !strings.Contains(err.Error(), "candidate posteriors") {
		t.Errorf("reading a removed generation's posteriors: %v, want an error", err)
	}
}
