package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/mixture"
)

// outputItems is n items of C = 4 classes in batches of batch over two input
// shards, with final states made by hand: item i was given label i%4 and
// ends with its posterior on (i/3)%4, so some labels change and some stay;
// every 7th item is unlabelled. It returns the items and each id's expected
// clean label and changed flag.
func outputItems(n, batch int) ([]Items, map[int64]int32, map[int64]bool) {
	const c = 4
	var out []Items
	clean, changed := map[int64]int32{}, map[int64]bool{}
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		shard, off := "in/a.parquet", lo
		if lo >= n/2 {
			shard, off = "in/b.parquet", lo-n/2
		}
		it := Items{Shard: shard, Offset: int64(off), IDKind: schemas.IDInt64, LabelOff: []int32{0}}
		it.State.Reset()
		for i := lo; i < hi; i++ {
			id := int64(1000 + i)
			it.IDs = append(it.IDs, id)
			var s mixture.State
			post := int32(i/3) % c
			s.Init([]int32{post}, c, c, 0.1)
			it.State.Append(&s)
			clean[id] = post
			given := int32(i % c)
			if i%7 == 0 {
				given = schemas.Unlabelled // a single-label batch holds -1 for null
			}
			it.Labels = append(it.Labels, given)
			changed[id] = given >= 0 && post != given
			it.LabelOff = append(it.LabelOff, int32(len(it.Labels)))
		}
		out = append(out, it)
	}
	return out, clean, changed
}

// TestWrite writes 100 items in batches of 9 over two shards as Arrow files
// and reads them back with io/resultio: one output file per input shard,
// every id exactly once, the clean label the top of the posterior with
// probability 1, changed where it differs from the given label, and each
// shard's report counting its rows and changed labels.
func TestWrite(t *testing.T) {
	const n = 100
	items, clean, changed := outputItems(n, 9)
	dir := t.TempDir()
	p, s := beam.NewPipelineWithRoot()
	Write(s, beam.CreateList(s, items), WriteParams{
		TmpDir: dir, Format: shardio.ArrowFile, Meta: map[string]string{}, LabelKind: schemas.LabelInt32,
		IDKind: schemas.IDInt64, C: 4, Cal: resultio.Calibration{Temperature: 0.25},
	})
	ptest.RunAndValidate(t, p)

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	out, err := resultio.ReadOutput(context.Background(), dir, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Paths) != 2 || filepath.Base(out.Paths[0]) != "a.arrow" || filepath.Base(out.Paths[1]) != "b.arrow" {
		t.Errorf("output files %v, want a.arrow and b.arrow", out.Paths)
	}
	seen := map[int64]int{}
	for i, id := range out.IDs {
		seen[id]++
		if out.Clean[i] != clean[id] || out.CleanProb[i] != 1 {
			t.Errorf("id %d: clean label %d (%g), want %d (1)", id, out.Clean[i], out.CleanProb[i], clean[id])
		}
		if out.Changed[i] != changed[id] {
			t.Errorf("id %d: changed %v, want %v", id, out.Changed[i], changed[id])
		}
		if given := out.Given[out.GivenOff[i]:out.GivenOff[i+1]]; len(given) == 0 && !math.IsNaN(float64(out.GivenProb[i])) {
			t.Errorf("id %d: unlabelled, given_label_prob %g, want null", id, out.GivenProb[i])
		}
	}
	if len(seen) != n || len(out.IDs) != n {
		t.Errorf("%d rows, %d distinct ids; want %d of each", len(out.IDs), len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("id %d written %d times", id, k)
		}
	}

	perShard := map[string]int64{}
	for _, it := range items {
		perShard[resultio.OutputName(it.Shard, shardio.ArrowFile)] += int64(it.Len())
	}
	var rows, ch int64
	for _, name := range []string{"a.arrow", "b.arrow"} {
		b, err := os.ReadFile(filepath.Join(dir, name+resultio.ReportSuffix))
		if err != nil {
			t.Fatal(err)
		}
		var r resultio.ShardReport
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Output != name || r.Rows != perShard[name] {
			t.Errorf("%s: report %+v, want output %s with %d rows", name, r, name, perShard[name])
		}
		rows, ch = rows+r.Rows, ch+r.Changed
	}
	want := int64(0)
	for _, c := range changed {
		if c {
			want++
		}
	}
	if rows != n || ch != want {
		t.Errorf("reports: %d rows, %d changed; want %d, %d", rows, ch, n, want)
	}
}

// TestWriteSpilled: the writer given its batches in spill files
// (SpilledItems) writes the same bytes as given them inline, with the
// temperature fitted from every batch's statistics (Auto) and with a
// fixed one; a batch whose file is gone fails the run, naming its shard.
func TestWriteSpilled(t *testing.T) {
	items, _, _ := outputItems(100, 9)
	for _, cal := range []resultio.Calibration{{Auto: true}, {Temperature: 0.5}} {
		wp := WriteParams{Format: shardio.Parquet, Meta: map[string]string{"k": "v"}, LabelKind: schemas.LabelInt32,
			IDKind: schemas.IDInt64, C: 4, Cal: cal}
		inline, spilled := t.TempDir(), t.TempDir()
		sp := spillio.Dir(t.TempDir())
		var refs []SpilledItems
		for i, it := range items {
			r, err := sp.Write(0, fmt.Sprint("b", i), EncodeItems(it))
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, SpilledItems{Shard: it.Shard, Ref: r[0]})
		}
		p, s := beam.NewPipelineWithRoot()
		wp.TmpDir = inline
		Write(s.Scope("inline"), beam.CreateList(s, items), wp)
		wp.TmpDir = spilled
		Write(s.Scope("spilled"), beam.CreateList(s, refs), wp)
		ptest.RunAndValidate(t, p)
		for _, name := range []string{"a.parquet", "b.parquet", "a.parquet" + resultio.ReportSuffix, "b.parquet" + resultio.ReportSuffix} {
			a, err := os.ReadFile(filepath.Join(inline, name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(spilled, name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%+v: %s differs between the inline and the spilled writer's input", cal, name)
			}
		}
	}

	gone := []SpilledItems{{Shard: "in/a.parquet", Ref: spillio.Ref{Path: filepath.Join(t.TempDir(), "missing"), Len: 10}}}
	p, s := beam.NewPipelineWithRoot()
	Write(s, beam.CreateList(s, gone), WriteParams{TmpDir: t.TempDir(), Format: shardio.Parquet, LabelKind: schemas.LabelInt32,
		IDKind: schemas.IDInt64, C: 4, Cal: resultio.Calibration{Temperature: 1}})
	if err := ptest.Run(p); err == nil || !strings.Contains(err.Error(), "in/a.parquet") {
		t.Errorf("a missing spill file: error %v, want one naming in/a.parquet", err)
	}
}
