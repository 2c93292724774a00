package crowdstages

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
	"github.com/relabel/relabel/transforms/mixture"
)

const testC = 4

// testC0 is how many classes each output state keeps: a run's default.
var testC0 = mixture.DefaultC0(testC)

// crowdP is the model's defaults with iterations EM iterations.
func crowdP(iterations int) crowd.Params {
	p := crowd.DefaultParams(testC)
	p.Iterations = iterations
	return p
}

func testAnnotators() []crowd.SimAnnotator {
	return []crowd.SimAnnotator{
		{Kind: crowd.Expert, Acc: .85}, {Kind: crowd.Expert, Acc: .8}, {Kind: crowd.Expert, Acc: .75}, {Kind: crowd.Expert, Acc: .9},
		{Kind: crowd.Confuser, Acc: .65}, {Kind: crowd.Confuser, Acc: .7}, {Kind: crowd.Expert, Acc: .7}, {Kind: crowd.Expert, Acc: .8},
		{Kind: crowd.Spammer}, {Kind: crowd.Spammer}, {Kind: crowd.Adversary, Acc: .8}, {Kind: crowd.Adversary, Acc: .8},
	}
}

// annRow is one long-format annotation.
type annRow struct {
	id   int64
	name string
	ann  int64
	lab  int32
}

// flatten lists a crowd's annotations, item ids 1000+i, annotator names w00.
func flatten(cr *crowd.Crowd) []annRow {
	var out []annRow
	for i := 0; i < cr.Items.Len(); i++ {
		a, l := cr.Items.Item(i)
		for k := range a {
			out = append(out, annRow{id: 1000 + int64(i), name: fmt.Sprintf("w%02d", a[k]), ann: a[k], lab: l[k]})
		}
	}
	return out
}

// writeShards writes rows, shuffled, into nfiles Parquet files of row
// groups of 50 rows, with string annotator names when byName.
func writeShards(t *testing.T, dir string, rows []annRow, nfiles int, byName bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	fs := blobio.Local{}
	for f := 0; f < nfiles; f++ {
		var ids, anns []int64
		var names []string
		var labs []int32
		for k := f; k < len(rows); k += nfiles {
			ids = append(ids, rows[k].id)
			anns = append(anns, rows[k].ann)
			names = append(names, rows[k].name)
			labs = append(labs, rows[k].lab)
		}
		if !byName {
			names = nil
		}
		path := filepath.Join(dir, fmt.Sprintf("ann-%d.parquet", f))
		if err := annotio.WriteAnnotations(context.Background(), fs, path, shardio.Parquet, ids, nil, anns, names, labs, 50); err != nil {
			t.Fatal(err)
		}
	}
}

// runLabelOnly runs ReadAnnotations, LabelOnly and stages.Write on the
// annotation shards matching pattern, into out.
func runLabelOnly(t *testing.T, pattern, out string, kind schemas.IDKind, iterations int) error {
	t.Helper()
	units, lay, err := annotio.Scan(context.Background(), pattern, annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC})
	if err != nil {
		t.Fatal(err)
	}
	if lay.AnnotatorKind != kind {
		t.Fatalf("annotator kind %v, want %v", lay.AnnotatorKind, kind)
	}
	p, s := beam.NewPipelineWithRoot()
	anns := ReadAnnotations(s, beam.CreateList(s, units), annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC}, 3)
	items := LabelOnly(s, anns, Params{Crowd: crowdP(iterations), C0: testC0, Buckets: 3, AnnotatorKind: kind, TmpDir: out, Format: shardio.ArrowFile})
	stages.Write(s, items, stages.WriteParams{TmpDir: out, Format: shardio.ArrowFile, LabelKind: schemas.LabelInt32, IDKind: schemas.IDInt64, C: testC, Cal: resultio.Calibration{Temperature: 1}})
	return ptest.Run(p)
}

// TestLabelOnlyEndToEnd writes a simulated crowd's annotations as Parquet
// shards (split across files and row groups, one annotation repeated), runs
// label-only mode into output shards and checks every row against
// crowd.Fit on the same annotations, bit for bit, and the annotators file.
func TestLabelOnlyEndToEnd(t *testing.T) {
	const iterations = 8
	cr := crowd.Simulate(600, testC, 3, testAnnotators(), 11)
	rows := flatten(cr)
	rows = append(rows, rows[5]) // the same annotation twice counts once
	in, out := t.TempDir(), t.TempDir()
	writeShards(t, in, rows, 3, true)
	if err := runLabelOnly(t, filepath.Join(in, "*.parquet"), out, schemas.IDString, iterations); err != nil {
		t.Fatal(err)
	}
	o, err := resultio.ReadOutput(context.Background(), out, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Paths) != 3 || !strings.HasSuffix(o.Paths[0], "items-00000.arrow") {
		t.Errorf("output shards %v, want items-0000{0,1,2}.arrow", o.Paths)
	}
	// The same fit in memory; the pipeline keys annotators by their names.
	it := cr.Items
	it.Annotator = make([]int64, len(cr.Items.Annotator))
	for k, a := range cr.Items.Annotator {
		it.Annotator[k] = schemas.Key(fmt.Sprintf("w%02d", a))
	}
	it.Sort()
	res, err := crowd.Fit(&it, nil, crowdP(iterations))
	if err != nil {
		t.Fatal(err)
	}
	if o.Len() != cr.Items.Len() {
		t.Fatalf("%d output rows, want %d items", o.Len(), cr.Items.Len())
	}
	seen := map[int64]bool{}
	prev := map[string]int64{}
	for r := 0; r < o.Len(); r++ {
		id := o.IDs[r]
		i := int(id - 1000)
		if i < 0 || i >= cr.Items.Len() || seen[id] {
			t.Fatalf("row %d: id %d unknown or repeated", r, id)
		}
		seen[id] = true
		if p, ok := prev[o.Paths[0]]; ok && id < p {
			t.Errorf("ids not ascending")
		}
		post := res.Posterior[i*testC : (i+1)*testC]
		best := 0
		for c := range post {
			if post[c] > post[best] {
				best = c
			}
		}
		_, lab := cr.Items.Item(i)
		if o.Clean[r] != int32(best) || o.CleanProb[r] != float32(post[best]) {
			t.Errorf("id %d: clean %d (%v), in memory %d (%v)", id, o.Clean[r], o.CleanProb[r], best, float32(post[best]))
		}
		given := o.Given[o.GivenOff[r]:o.GivenOff[r+1]]
		if len(given) != 1 || given[0] != schemas.GivenLabel(lab) {
			t.Errorf("id %d: given %v, want the majority %d of %v", id, given, schemas.GivenLabel(lab), lab)
		}
		if o.Changed[r] != (o.Clean[r] != given[0]) {
			t.Errorf("id %d: changed = %v", id, o.Changed[r])
		}
	}
	// The annotators file: 12 annotators by name, spammers and adversaries flagged.
	f, err := os.Open(filepath.Join(out, "annotators.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rec, err := rd.RecordBatchAt(0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.NumRows() != 12 {
		t.Fatalf("%d annotators, want 12", rec.NumRows())
	}
	names := rec.Column(0).(*array.String)
	given := rec.Column(1).(*array.Int64)
	spam := rec.Column(6).(*array.Boolean)
	adv := rec.Column(7).(*array.Boolean)
	var total int64
	for k := 0; k < 12; k++ {
		if want := fmt.Sprintf("w%02d", k); names.Value(k) != want {
			t.Errorf("annotator %d: %q, want %q", k, names.Value(k), want)
		}
		kind := testAnnotators()[k].Kind
		if spam.Value(k) != (kind == crowd.Spammer) || adv.Value(k) != (kind == crowd.Adversary) {
			t.Errorf("annotator w%02d (%v): spammer %v adversary %v", k, kind, spam.Value(k), adv.Value(k))
		}
		total += given.Value(k)
	}
	if total != int64(len(cr.Items.Label)) {
		t.Errorf("labels given %d, want %d (the repeat counted once)", total, len(cr.Items.Label))
	}
	if b, err := os.ReadFile(filepath.Join(out, "annotators.arrow.report.json")); err != nil || !strings.Contains(string(b), `"spammers":2`) {
		t.Errorf("report %s (%v)", b, err)
	}
}

// TestConflictingDuplicate: one annotator giving one item two labels is an
// error naming both places.
func TestConflictingDuplicate(t *testing.T) {
	cr := crowd.Simulate(100, testC, 3, testAnnotators(), 12)
	rows := flatten(cr)
	dup := rows[7]
	dup.lab = (dup.lab + 1) % testC
	rows = append(rows, dup)
	in, out := t.TempDir(), t.TempDir()
	writeShards(t, in, rows, 2, false)
	err := runLabelOnly(t, filepath.Join(in, "*.parquet"), out, schemas.IDInt64, 2)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("item %d: its annotator gave label", dup.id)) || strings.Count(msg, ".parquet row ") < 2 {
		t.Errorf("error %q: want both rows named", msg)
	}
}

// featureItems makes n items in two batches of stages.Items, each item's
// neighbours the next K items of its class (candidate index = item index).
func featureItems(cr *crowd.Crowd, k int, noLabels map[int]bool) ([]stages.Items, *crowd.Neighbours) {
	n := len(cr.Truth)
	byClass := make([][]int32, testC)
	for i, c := range cr.Truth {
		byClass[c] = append(byClass[c], int32(i))
	}
	nb := &crowd.Neighbours{K: k, Index: make([]int32, n*k), Weight: make([]float64, n*k)}
	pos := make([]int, n)
	for _, members := range byClass {
		for p, i := range members {
			pos[i] = p
		}
	}
	for i, c := range cr.Truth {
		m := byClass[c]
		for j := 0; j < k; j++ {
			nb.Index[i*k+j] = m[(pos[i]+1+j)%len(m)]
			nb.Weight[i*k+j] = 1 / float64(k)
		}
	}
	var out []stages.Items
	for lo := 0; lo < n; lo += n / 2 {
		hi := min(n, lo+n/2)
		it := stages.Items{Shard: "in.parquet", Offset: int64(lo), K: k, LabelOff: []int32{0}, Multi: true}
		for i := lo; i < hi; i++ {
			it.IDs = append(it.IDs, 1000+int64(i))
			it.Cand = append(it.Cand, int32(i))
			if !noLabels[i] {
				_, lab := cr.Items.Item(i)
				it.Labels = append(it.Labels, lab...)
			}
			it.LabelOff = append(it.LabelOff, int32(len(it.Labels)))
		}
		it.Neigh = nb.Index[lo*k : hi*k]
		it.Weight = nb.Weight[lo*k : hi*k]
		out = append(out, it)
	}
	return out, nb
}

type collectFn struct{}

func (collectFn) ProcessElement(it stages.Items, emit func(string)) {
	for i, id := range it.IDs {
		c, p := it.State.Top(i)
		emit(fmt.Sprintf("%d %d %v", id, c, p))
	}
}

// TestWithFeaturesJoin joins annotations split across shards to items in
// batches; items 3 and 4 have no annotations (3 keeps its labels, as the
// Anonymous annotator's; 4 has none), and the result equals crowd.Fit with
// the same neighbours bit for bit.
func TestWithFeaturesJoin(t *testing.T) {
	const iterations, K = 6, 5
	cr := crowd.Simulate(300, testC, 2, testAnnotators(), 13)
	items, nb := featureItems(cr, K, map[int]bool{4: true})
	var rows []annRow
	for _, r := range flatten(cr) {
		if r.id != 1003 && r.id != 1004 {
			rows = append(rows, r)
		}
	}
	in := t.TempDir()
	writeShards(t, in, rows, 2, false)
	units, _, err := annotio.Scan(context.Background(), filepath.Join(in, "*.parquet"), annotio.Options{Columns: annotio.DefaultColumns()})
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	anns := ReadAnnotations(s, beam.CreateList(s, units), annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC}, 4)
	out := WithFeatures(s, beam.CreateList(s, items), anns, Params{Crowd: crowdP(iterations), C0: testC0, Buckets: 4})
	got := beam.ParDo(s, &collectFn{}, out)

	// In memory: item 3's labels by the anonymous annotator, item 4 none.
	it := crowd.Items{Off: []int32{0}}
	for i := 0; i < cr.Items.Len(); i++ {
		a, l := cr.Items.Item(i)
		switch i {
		case 3:
			for range a {
				it.Annotator = append(it.Annotator, Anonymous)
			}
			it.Label = append(it.Label, l...)
		case 4:
		default:
			it.Annotator = append(it.Annotator, a...)
			it.Label = append(it.Label, l...)
		}
		it.Off = append(it.Off, int32(len(it.Label)))
	}
	it.Sort()
	res, err := crowd.Fit(&it, nb, crowdP(iterations))
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for i := 0; i < cr.Items.Len(); i++ {
		post := res.Posterior[i*testC : (i+1)*testC]
		best := 0
		for c := range post {
			if post[c] > post[best] {
				best = c
			}
		}
		want = append(want, fmt.Sprintf("%d %d %v", 1000+i, best, float32(post[best])))
	}
	equals(s, got, want)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownID: an annotation of an id no item has is an error naming its
// file and row.
func TestUnknownID(t *testing.T) {
	cr := crowd.Simulate(100, testC, 2, testAnnotators(), 14)
	items, _ := featureItems(cr, 3, nil)
	rows := flatten(cr)
	rows = append(rows, annRow{id: 99999, ann: 1, lab: 0})
	in := t.TempDir()
	writeShards(t, in, rows, 1, false)
	// Where the stray row landed.
	units, _, err := annotio.Scan(context.Background(), filepath.Join(in, "*.parquet"), annotio.Options{Columns: annotio.DefaultColumns()})
	if err != nil {
		t.Fatal(err)
	}
	where := ""
	for _, u := range units {
		b, err := annotio.ReadUnit(context.Background(), u, annotio.Options{Columns: annotio.DefaultColumns()})
		if err != nil {
			t.Fatal(err)
		}
		for k, id := range b.IDs {
			if id == 99999 {
				where = fmt.Sprintf("%s row %d column \"id\"", u.Path, b.Offset+int64(k))
			}
		}
	}
	p, s := beam.NewPipelineWithRoot()
	anns := ReadAnnotations(s, beam.CreateList(s, units), annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC}, 2)
	WithFeatures(s, beam.CreateList(s, items), anns, Params{Crowd: crowdP(1), C0: testC0, Buckets: 2})
	err = ptest.Run(p)
	if err == nil || !strings.Contains(err.Error(), where+": annotation of item 99999, which is not in the input") {
		t.Errorf("error %v, want it to name %s", err, where)
	}
}

var _ = math.NaN

// TestLabelOnlyStringIDs: string item ids come out one row each, each shard
// in id order.
func TestLabelOnlyStringIDs(t *testing.T) {
	cr := crowd.Simulate(200, testC, 3, testAnnotators(), 15)
	var ids, anns []int64
	var strs []string
	var labs []int32
	for i := 0; i < cr.Items.Len(); i++ {
		a, l := cr.Items.Item(i)
		for k := range a {
			strs = append(strs, fmt.Sprintf("item-%03d", i))
			ids = append(ids, 0)
			anns = append(anns, a[k])
			labs = append(labs, l[k])
		}
	}
	in, out := t.TempDir(), t.TempDir()
	if err := annotio.WriteAnnotations(context.Background(), blobio.Local{}, filepath.Join(in, "a.arrow"), shardio.ArrowFile, ids, strs, anns, nil, labs, 100); err != nil {
		t.Fatal(err)
	}
	units, lay, err := annotio.Scan(context.Background(), filepath.Join(in, "a.arrow"), annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC})
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	items := LabelOnly(s, ReadAnnotations(s, beam.CreateList(s, units), annotio.Options{Columns: annotio.DefaultColumns(), Classes: testC}, 2),
		Params{Crowd: crowdP(3), C0: testC0, Buckets: 2, IDKind: lay.IDKind, AnnotatorKind: lay.AnnotatorKind})
	stages.Write(s, items, stages.WriteParams{TmpDir: out, Format: shardio.Parquet, LabelKind: schemas.LabelInt32, IDKind: schemas.IDString, C: testC, Cal: resultio.Calibration{Temperature: 1}})
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	o, err := resultio.ReadOutput(context.Background(), out, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.StrIDs) != 200 {
		t.Fatalf("%d rows, want 200", len(o.StrIDs))
	}
	seen := map[string]bool{}
	for r, id := range o.StrIDs {
		if seen[id] || !strings.HasPrefix(id, "item-") {
			t.Fatalf("row %d: id %q repeated or unknown", r, id)
		}
		seen[id] = true
	}
}

// TestLabelOnlySingleLabel: with one label per item no model beyond the
// vote is identified; the pipeline chooses the vote, as crowd.Fit does,
// keeps every given label, writes Fit's posteriors bit for bit and says so
// in the annotators report.
func TestLabelOnlySingleLabel(t *testing.T) {
	const iterations = 4
	cr := crowd.Simulate(300, testC, 3, testAnnotators(), 16)
	var it crowd.Items
	it.Off = []int32{0}
	for i := 0; i < cr.Items.Len(); i++ {
		a, l := cr.Items.Item(i)
		it.Annotator = append(it.Annotator, a[i%len(a)])
		it.Label = append(it.Label, l[i%len(l)])
		it.Off = append(it.Off, int32(len(it.Label)))
	}
	cr.Items = it
	in, out := t.TempDir(), t.TempDir()
	writeShards(t, in, flatten(cr), 2, false)
	if err := runLabelOnly(t, filepath.Join(in, "*.parquet"), out, schemas.IDInt64, iterations); err != nil {
		t.Fatal(err)
	}
	o, err := resultio.ReadOutput(context.Background(), out, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	res, err := crowd.Fit(&it, nil, crowdP(iterations))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choice != crowd.Vote {
		t.Errorf("in memory: chose %v, want vote", res.Choice)
	}
	if o.Len() != it.Len() {
		t.Fatalf("%d output rows, want %d", o.Len(), it.Len())
	}
	for r := 0; r < o.Len(); r++ {
		i := int(o.IDs[r] - 1000)
		post := res.Posterior[i*testC : (i+1)*testC]
		best := 0
		for c := range post {
			if post[c] > post[best] {
				best = c
			}
		}
		if o.Clean[r] != int32(best) || o.CleanProb[r] != float32(post[best]) {
			t.Errorf("id %d: clean %d (%v), in memory %d (%v)", o.IDs[r], o.Clean[r], o.CleanProb[r], best, float32(post[best]))
		}
		if _, lab := it.Item(i); o.Clean[r] != lab[0] || o.Changed[r] {
			t.Errorf("id %d: clean %d, the only label %d (changed %v)", o.IDs[r], o.Clean[r], lab[0], o.Changed[r])
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "annotators.arrow.report.json")); err != nil || !strings.Contains(string(b), `"model":"vote"`) || !strings.Contains(string(b), `"items_scored":0`) {
		t.Errorf("report %s (%v), want the vote on no scored item", b, err)
	}
}

// TestLabelOnlyPooledChoice: 1500 one-coin annotators of like skill with
// about three labels each, seven labels per item: the held-out labels
// choose the pool (crowd.Fit does, checked first, so that the pipeline's
// pooled E step is what is compared), and the pipeline writes Fit's
// posteriors bit for bit and records the pooled model and its evidence in
// the annotators report.
func TestLabelOnlyPooledChoice(t *testing.T) {
	const iterations = 6
	ann := make([]crowd.SimAnnotator, 1500)
	for a := range ann {
		ann[a] = crowd.SimAnnotator{Kind: crowd.Expert, Acc: .6 + .1*float64(a%11)/10}
	}
	cr := crowd.Simulate(600, testC, 7, ann, 20)
	it := cr.Items
	it.Annotator, it.Label = slices.Clone(it.Annotator), slices.Clone(it.Label)
	it.Sort()
	res, err := crowd.Fit(&it, nil, crowdP(iterations))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choice != crowd.Pooled {
		g1, s1 := res.Evidence.Gain(crowd.Pooled)
		g2, s2 := res.Evidence.Gain(crowd.Annotators)
		t.Fatalf("in memory: chose %v (pool over vote %.1f ± %.1f, annotators over pool %.1f ± %.1f), want the pool", res.Choice, g1, s1, g2, s2)
	}
	in, out := t.TempDir(), t.TempDir()
	writeShards(t, in, flatten(cr), 2, false)
	if err := runLabelOnly(t, filepath.Join(in, "*.parquet"), out, schemas.IDInt64, iterations); err != nil {
		t.Fatal(err)
	}
	o, err := resultio.ReadOutput(context.Background(), out, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if o.Len() != it.Len() {
		t.Fatalf("%d output rows, want %d", o.Len(), it.Len())
	}
	for r := 0; r < o.Len(); r++ {
		i := int(o.IDs[r] - 1000)
		post := res.Posterior[i*testC : (i+1)*testC]
		best := 0
		for c := range post {
			if post[c] > post[best] {
				best = c
			}
		}
		if o.Clean[r] != int32(best) || o.CleanProb[r] != float32(post[best]) {
			t.Errorf("id %d: clean %d (%v), in memory %d (%v)", o.IDs[r], o.Clean[r], o.CleanProb[r], best, float32(post[best]))
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "annotators.arrow.report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep resultio.AnnotatorsSummary
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	model, want := Report(res.Evidence)
	if rep.Model != "pooled" || rep.Model != model || rep.Choice == nil || *rep.Choice != *want {
		t.Errorf("report: model %q, evidence %+v; in memory %q, %+v", rep.Model, rep.Choice, model, *want)
	}
}
