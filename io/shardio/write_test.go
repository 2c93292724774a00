package shardio

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// readOutput reads a written output file back with arrow-go's own readers:
// its schema and one JSON object per row.
func readOutput(t *testing.T, path string, format Format, mem memory.Allocator) (*arrow.Schema, []string, int) {
	t.Helper()
	var recs []arrow.RecordBatch
	var sc *arrow.Schema
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	groups := 0
	switch format {
	case Parquet:
		pr, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		groups = pr.NumRowGroups()
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 20}, mem)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rr.Release()
		// The file's schema, with its metadata (the record reader's has none).
		if sc, err = fr.Schema(); err != nil {
			t.Fatal(err)
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		if err := rr.Err(); err != nil {
			t.Fatal(err)
		}
	case ArrowFile:
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		sc = r.Schema()
		groups = r.NumRecords()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
	}
	var rows []string
	for _, rec := range recs {
		var buf bytes.Buffer
		if err := array.RecordToJSON(rec, &buf); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		rows = append(rows, strings.Split(strings.TrimSpace(buf.String()), "\n")...)
	}
	return sc, rows, groups
}

// cleanedBatches is one shard's output in two batches, given out of order.
func cleanedBatches(idKind schemas.IDKind, multi bool) []*schemas.Cleaned {
	nan := float32(math.NaN())
	b0 := &schemas.Cleaned{
		Shard: "in/a.parquet", Offset: 0, IDKind: idKind, IDs: []int64{10, 11}, Multi: multi,
		Labels: []int32{1, schemas.Unlabelled}, LabelOff: []int32{0, 1, 2},
		CleanLabel: []int32{1, 2}, CleanProb: []float32{0.75, 0.5}, GivenProb: []float32{0.75, nan}, Changed: []bool{false, true},
		PostOff: []int32{0, 2, 3}, PostClass: []int32{1, 0, 2}, PostProb: []float32{0.75, 0.25, 0.5},
	}
	b1 := &schemas.Cleaned{
		Shard: "in/a.parquet", Offset: 2, IDKind: idKind, IDs: []int64{12}, Multi: multi,
		Labels: []int32{0}, LabelOff: []int32{0, 1},
		CleanLabel: []int32{2}, CleanProb: []float32{1}, GivenProb: []float32{0}, Changed: []bool{true},
		PostOff: []int32{0, 1}, PostClass: []int32{2}, PostProb: []float32{1},
	}
	if multi {
		// Row 10 has two annotations, row 11 none.
		b0.Labels, b0.LabelOff = []int32{1, 1}, []int32{0, 2, 2}
	}
	if idKind == schemas.IDString {
		b0.StrIDs, b1.StrIDs = []string{"ten", "eleven"}, []string{"twelve"}
		b0.IDs = []int64{schemas.Key("ten"), schemas.Key("eleven")}
		b1.IDs = []int64{schemas.Key("twelve")}
	}
	return []*schemas.Cleaned{b1, b0}
}

func TestWriteShard(t *testing.T) {
	ctx := context.Background()
	meta := schemas.Metadata("test", 7, map[string]string{"k": "10"}, nil)
	for _, tc := range []struct {
		name      string
		idKind    schemas.IDKind
		labelKind schemas.LabelKind
		names     []string
		multi     bool
		want      []string
	}{
		{"int ids, int32 labels", schemas.IDInt64, schemas.LabelInt32, nil, false, []string{
			`{"changed":false,"clean_label":1,"clean_prob":0.75,"given_label_prob":0.75,"id":10,"label":1,"posterior":[{"class":1,"prob":0.75},{"class":0,"prob":0.25}]}`,
			`{"changed":true,"clean_label":2,"clean_prob":0.5,"given_label_prob":null,"id":11,"label":null,"posterior":[{"class":2,"prob":0.5}]}`,
			`{"changed":true,"clean_label":2,"clean_prob":1,"given_label_prob":0,"id":12,"label":0,"posterior":[{"class":2,"prob":1}]}`,
		}},
		{"string ids, string labels, annotations", schemas.IDString, schemas.LabelString, []string{"ant", "bee", "cat"}, true, []string{
			`{"changed":false,"clean_label":"bee","clean_prob":0.75,"given_label_prob":0.75,"id":"ten","labels":["bee","bee"],"posterior":[{"class":"bee","prob":0.75},{"class":"ant","prob":0.25}]}`,
			`{"changed":true,"clean_label":"cat","clean_prob":0.5,"given_label_prob":null,"id":"eleven","labels":null,"posterior":[{"class":"cat","prob":0.5}]}`,
			`{"changed":true,"clean_label":"cat","clean_prob":1,"given_label_prob":0,"id":"twelve","labels":["ant"],"posterior":[{"class":"cat","prob":1}]}`,
		}},
		{"int64 labels", schemas.IDInt64, schemas.LabelInt64, nil, false, []string{
			`{"changed":false,"clean_label":1,"clean_prob":0.75,"given_label_prob":0.75,"id":10,"label":1,"posterior":[{"class":1,"prob":0.75},{"class":0,"prob":0.25}]}`,
			`{"changed":true,"clean_label":2,"clean_prob":0.5,"given_label_prob":null,"id":11,"label":null,"posterior":[{"class":2,"prob":0.5}]}`,
			`{"changed":true,"clean_label":2,"clean_prob":1,"given_label_prob":0,"id":12,"label":0,"posterior":[{"class":2,"prob":1}]}`,
		}},
	} {
		for _, format := range []Format{Parquet, ArrowFile} {
			t.Run(tc.name+"/"+format.String(), func(t *testing.T) {
				dir := t.TempDir()
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				batches := cleanedBatches(tc.idKind, tc.multi)
				p1, p2 := filepath.Join(dir, "1"+format.Ext()), filepath.Join(dir, "2"+format.Ext())
				if err := WriteShard(ctx, blobio.Local{}, p1, format, batches, meta, tc.labelKind, tc.names, tc.idKind, mem); err != nil {
					t.Fatal(err)
				}
				// The same rows in the other batch order: the same bytes.
				batches[0], batches[1] = batches[1], batches[0]
				if err := WriteShard(ctx, blobio.Local{}, p2, format, batches, meta, tc.labelKind, tc.names, tc.idKind, mem); err != nil {
					t.Fatal(err)
				}
				b1, _ := os.ReadFile(p1)
				b2, _ := os.ReadFile(p2)
				if len(b1) == 0 || !bytes.Equal(b1, b2) {
					t.Errorf("two writes of equal rows differ (%d and %d bytes)", len(b1), len(b2))
				}
				sc, rows, _ := readOutput(t, p1, format, mem)
				if !reflect.DeepEqual(rows, tc.want) {
					t.Errorf("rows\n got %s\nwant %s", strings.Join(rows, "\n     "), strings.Join(tc.want, "\n     "))
				}
				want := schemas.OutputSchema(tc.idKind, tc.labelKind, tc.multi, meta)
				if got, want := fieldList(sc), fieldList(want); got != want {
					t.Errorf("schema\n got %s\nwant %s", got, want)
				}
				md := sc.Metadata()
				if v, ok := md.GetValue(schemas.MetaSeed); !ok || v != "7" {
					t.Errorf("metadata %s = %q, %v; want 7 (all: %v)", schemas.MetaSeed, v, ok, md)
				}
				if v, ok := md.GetValue(schemas.MetaOptionPrefix + "k"); !ok || v != "10" {
					t.Errorf("metadata option k = %q, %v", v, ok)
				}
			})
		}
	}
}

// TestWriteShardRecordCut writes more rows than one record holds: the rows
// are cut into records of maxRecordRows whatever the batches, and all come
// back.
func TestWriteShardRecordCut(t *testing.T) {
	ctx := context.Background()
	n := maxRecordRows + 100
	var batches []*schemas.Cleaned
	for off := 0; off < n; off += 7000 {
		m := min(7000, n-off)
		c := &schemas.Cleaned{Offset: int64(off), LabelOff: []int32{0}, PostOff: []int32{0}}
		for i := 0; i < m; i++ {
			c.IDs = append(c.IDs, int64(off+i))
			c.Labels = append(c.Labels, int32((off+i)%3))
			c.LabelOff = append(c.LabelOff, int32(i+1))
			c.CleanLabel = append(c.CleanLabel, 0)
			c.CleanProb = append(c.CleanProb, 1)
			c.GivenProb = append(c.GivenProb, 0.5)
			c.Changed = append(c.Changed, false)
			c.PostClass = append(c.PostClass, 0)
			c.PostProb = append(c.PostProb, 1)
			c.PostOff = append(c.PostOff, int32(i+1))
		}
		batches = append(batches, c)
	}
	for _, format := range []Format{Parquet, ArrowFile} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		path := filepath.Join(t.TempDir(), "big"+format.Ext())
		if err := WriteShard(ctx, blobio.Local{}, path, format, batches, nil, schemas.LabelInt32, nil, schemas.IDInt64, mem); err != nil {
			t.Fatal(err)
		}
		_, rows, groups := readOutput(t, path, format, mem)
		if len(rows) != n || groups != 2 {
			t.Errorf("%v: %d rows in %d groups, want %d in 2", format, len(rows), groups, n)
		}
		if want := `"id":65600,"label":2,`; !strings.Contains(rows[65600], want) {
			t.Errorf("%v: row 65600 = %s, want it to contain %s", format, rows[65600], want)
		}
		mem.AssertSize(t, 0)
	}
}

func TestWriteShardErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mutate func(b []*schemas.Cleaned) // b[1] is at offset 0, b[0] at 2
		names  []string
		kind   schemas.LabelKind
		want   string
	}{
		{"overlap", func(b []*schemas.Cleaned) { b[0].Offset = 1 }, nil, schemas.LabelInt32,
			"batches at offsets 0 (2 rows) and 1 overlap"},
		{"inconsistent batch", func(b []*schemas.Cleaned) { b[0].Changed = nil }, nil, schemas.LabelInt32,
			"0 Changed for 1 rows"},
		{"class outside the names", func(b []*schemas.Cleaned) { b[0].CleanLabel[0] = 3 }, []string{"a", "b", "c"}, schemas.LabelString,
			"row 2: clean label: class 3 outside the 3 class names"},
		{"negative posterior class", func(b []*schemas.Cleaned) { b[1].PostClass[1] = -2 }, nil, schemas.LabelInt32,
			"row 0: posterior class: class -2 is negative"},
		{"string labels without names", func(b []*schemas.Cleaned) {}, nil, schemas.LabelString,
			"string labels need class names"},
	} {
		for _, format := range []Format{Parquet, ArrowFile} {
			dir := t.TempDir()
			path := filepath.Join(dir, "out"+format.Ext())
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			b := cleanedBatches(schemas.IDInt64, false)
			tc.mutate(b)
			err := WriteShard(ctx, blobio.Local{}, path, format, b, nil, tc.kind, tc.names, schemas.IDInt64, mem)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s/%v: error %v, want one naming %s and containing %q", tc.name, format, err, path, tc.want)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%s/%v: %d files left behind", tc.name, format, len(left))
			}
			mem.AssertSize(t, 0)
		}
	}
}

// fieldList prints a schema's fields, the list element names normalised:
// arrow-go names them "element" in Parquet and "item" in Arrow.
func fieldList(sc *arrow.Schema) string {
	var parts []string
	for _, f := range sc.Fields() {
		s := f.Name + ": " + f.Type.String()
		if f.Nullable {
			s += " (nullable)"
		}
		parts = append(parts, strings.ReplaceAll(s, "element:", "item:"))
	}
	return strings.Join(parts, ", ")
}

// TestWriteShardEmpty writes no rows: a valid file with the schema and no
// rows, as an input shard whose rows all failed would never give, but a
// caller may still ask for.
func TestWriteShardEmpty(t *testing.T) {
	for _, format := range []Format{Parquet, ArrowFile} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		path := filepath.Join(t.TempDir(), "empty"+format.Ext())
		if err := WriteShard(context.Background(), blobio.Local{}, path, format, nil, nil, schemas.LabelInt32, nil, schemas.IDInt64, mem); err != nil {
			t.Fatalf("%v: %v", format, err)
		}
		sc, rows, _ := readOutput(t, path, format, mem)
		if len(rows) != 0 || sc.NumFields() != 7 {
			t.Errorf("%v: %d rows, %d fields; want 0 rows of the 7 output columns", format, len(rows), sc.NumFields())
		}
		mem.AssertSize(t, 0)
	}
}
