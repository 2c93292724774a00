package pipelines_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/transforms/crowd"
)

func crowdAnnotators() []crowd.SimAnnotator {
	return []crowd.SimAnnotator{
		{Kind: crowd.Expert, Acc: .8}, {Kind: crowd.Expert, Acc: .75}, {Kind: crowd.Expert, Acc: .7}, {Kind: crowd.Confuser, Acc: .65},
		{Kind: crowd.Confuser, Acc: .7}, {Kind: crowd.Spammer}, {Kind: crowd.Spammer}, {Kind: crowd.Adversary, Acc: .8},
	}
}

// writeCrowdAnnotations writes cr's annotations as two Parquet shards (ids
// 100+i, annotators "a0".."a7").
func writeCrowdAnnotations(t *testing.T, dir string, cr *crowd.Crowd) {
	t.Helper()
	var ids [2][]int64
	var names [2][]string
	var labs [2][]int32
	for i := 0; i < cr.Items.Len(); i++ {
		a, l := cr.Items.Item(i)
		for k := range a {
			f := (i + k) % 2
			ids[f] = append(ids[f], 100+int64(i))
			names[f] = append(names[f], fmt.Sprintf("a%d", a[k]))
			labs[f] = append(labs[f], l[k])
		}
	}
	for f := range 2 {
		path := filepath.Join(dir, fmt.Sprintf("ann-%d.parquet", f))
		if err := annotio.WriteAnnotations(context.Background(), blobio.Local{}, path, shardio.Parquet, ids[f], nil, nil, names[f], labs[f], 200); err != nil {
			t.Fatal(err)
		}
	}
}

func accuracyOf(o *resultio.Output, truth []int32) float64 {
	ok := 0
	for r, id := range o.IDs {
		if o.Clean[r] == truth[id-100] {
			ok++
		}
	}
	return float64(ok) / float64(len(truth))
}

// TestLabelOnlyRun runs label-only mode end to end, from Parquet annotation
// shards to committed output shards, the annotators file and summary.json,
// twice: the outputs are byte-identical.
func TestLabelOnlyRun(t *testing.T) {
	cr := crowd.Simulate(1500, 5, 4, crowdAnnotators(), 21)
	in := t.TempDir()
	writeCrowdAnnotations(t, in, cr)
	var first [][]byte
	for run := range 2 {
		out := t.TempDir()
		cfg := options.Defaults()
		cfg.Annotations, cfg.Output, cfg.CrowdIters = filepath.Join(in, "*.parquet"), out, 10
		sum, err := pipelines.Run(ctxT(t), job.NewConfig(cfg), embedded)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Rows != 1500 || sum.Classes != 5 || sum.Annotators == nil || sum.Annotators.Annotators != 8 || sum.Annotators.Spammers != 2 || sum.Annotators.Adversaries != 1 {
			t.Fatalf("summary: rows %d classes %d annotators %+v", sum.Rows, sum.Classes, sum.Annotators)
		}
		o, err := resultio.ReadOutput(context.Background(), out, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		if acc := accuracyOf(o, cr.Truth); acc < 0.9 {
			t.Errorf("accuracy %.3f", acc)
		}
		files := append(o.Paths, filepath.Join(out, "annotators.arrow"))
		for k, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if run == 0 {
				first = append(first, b)
			} else if !bytes.Equal(b, first[k]) {
				t.Errorf("%s differs between two runs", filepath.Base(f))
			}
		}
	}
}

// writeCrowdItems writes items (ids 100+i, features: the class centre plus
// noise, labels, and an annotators list column when withAnnotators) as one
// Parquet shard of two row groups.
func writeCrowdItems(t testing.TB, path string, cr *crowd.Crowd, C int, withAnnotators bool) {
	t.Helper()
	const d = 4
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.FixedSizeListOf(d, arrow.PrimitiveTypes.Float32)},
		{Name: "labels", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	}
	if withAnnotators {
		fields = append(fields, arrow.Field{Name: "annotators", Type: arrow.ListOf(arrow.BinaryTypes.String)})
	}
	sc := arrow.NewSchema(fields, nil)
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	n := cr.Items.Len()
	var recs []arrow.RecordBatch
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(100 + int64(i))
		fb := b.Field(1).(*array.FixedSizeListBuilder)
		fb.Append(true)
		c := cr.Truth[i]
		for j := 0; j < d; j++ {
			v := float32((int(c)>>j)&1) + float32((i*7919+j*104729)%1000)/2500
			if j == 3 {
				v = float32(c) + float32((i*31+7)%100)/250
			}
			fb.ValueBuilder().(*array.Float32Builder).Append(v)
		}
		a, l := cr.Items.Item(i)
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues(l, nil)
		if withAnnotators {
			ab := b.Field(3).(*array.ListBuilder)
			ab.Append(true)
			for _, x := range a {
				ab.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("a%d", x))
			}
		}
		if i == n/2-1 || i == n-1 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCrowdFeaturesRun: items with an annotators column, and the same
// items without it plus the annotations as long-format shards, give the
// same output bytes; with a third of the items' labels from spammers and an
// adversary, the annotator-aware run beats the one with ids ignored.
func TestCrowdFeaturesRun(t *testing.T) {
	const C = 5
	cr := crowd.Simulate(1200, C, 3, crowdAnnotators(), 22)
	dir := t.TempDir()
	withCol := filepath.Join(dir, "with", "items.parquet")
	plain := filepath.Join(dir, "plain", "items.parquet")
	for _, p := range []string{withCol, plain} {
		os.MkdirAll(filepath.Dir(p), 0o755)
	}
	writeCrowdItems(t, withCol, cr, C, true)
	writeCrowdItems(t, plain, cr, C, false)
	annDir := filepath.Join(dir, "ann")
	os.MkdirAll(annDir, 0o755)
	writeCrowdAnnotations(t, annDir, cr)

	run := func(input, annotations string) (*resultio.Summary, *resultio.Output) {
		out := t.TempDir()
		cfg := quickConfig(input, out)
		cfg.Annotations, cfg.CrowdIters = annotations, 10
		sum, err := pipelines.Run(ctxT(t), job.NewConfig(cfg), embedded)
		if err != nil {
			t.Fatal(err)
		}
		o, err := resultio.ReadOutput(context.Background(), out, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		return sum, o
	}
	sumCol, oCol := run(withCol, "")
	sumAnn, oAnn := run(plain, filepath.Join(annDir, "*.parquet"))
	_, oPlain := run(plain, "")
	if sumCol.Annotators == nil || sumAnn.Annotators == nil {
		t.Fatalf("no annotators report: %+v %+v", sumCol.Annotators, sumAnn.Annotators)
	}
	if sumCol.Annotators.Spammers != 2 || sumCol.Annotators.Adversaries != 1 {
		t.Errorf("annotators report %+v", sumCol.Annotators)
	}
	// The two sources of the same annotations give the same posteriors.
	if sumCol.Rows != sumAnn.Rows || sumCol.Changed != sumAnn.Changed || !slices.Equal(oCol.Clean, oAnn.Clean) || !slices.Equal(oCol.CleanProb, oAnn.CleanProb) {
		t.Errorf("annotators column: %d rows %d changed; annotation shards: %d rows %d changed (or other posteriors)", sumCol.Rows, sumCol.Changed, sumAnn.Rows, sumAnn.Changed)
	}
	crowdAcc, plainAcc := accuracyOf(oCol, cr.Truth), accuracyOf(oPlain, cr.Truth)
	if crowdAcc < plainAcc+0.02 {
		t.Errorf("accuracy with annotator ids %.3f, ignored %.3f", crowdAcc, plainAcc)
	}
	t.Logf("accuracy with annotator ids %.3f, ignored %.3f", crowdAcc, plainAcc)
}
