package shardio

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// TestListLabelsRoundTrip reads a list column of annotations holding a null
// list, an empty list and nulls inside lists, then writes the rows out: the
// output's labels column must be the input's exactly.
func TestListLabelsRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)},
		{Name: "labels", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	labels := []string{`[1, 2]`, `null`, `[]`, `[null, 3]`, `[null]`, `[0, null, 0]`}
	var rows []string
	for i, l := range labels {
		rows = append(rows, `{"id": `+itoa(int64(i))+`, "features": [1, 2], "labels": `+l+`}`)
	}
	in := filepath.Join(dir, "in.arrow")
	writeRecordFile(t, in, ArrowFile, jsonRecord(t, sc, "["+strings.Join(rows, ",")+"]"))
	_, got, err := readAll(ctx, in, ReadOptions{Classes: 4})
	if err != nil {
		t.Fatal(err)
	}
	r := got[0]
	u, e := int32(schemas.Unlabelled), int32(schemas.EmptyList)
	wantLabels := []int32{1, 2, e, u, 3, u, 0, u, 0}
	wantOff := []int32{0, 2, 2, 3, 5, 6, 9}
	if !slices.Equal(r.Labels, wantLabels) || !slices.Equal(r.LabelOff, wantOff) {
		t.Fatalf("read Labels %v LabelOff %v, want %v %v", r.Labels, r.LabelOff, wantLabels, wantOff)
	}

	// Through the output writer, in every format.
	n := r.Len()
	c := &schemas.Cleaned{Shard: in, IDKind: r.IDKind, IDs: r.IDs, Labels: r.Labels, LabelOff: r.LabelOff, Multi: true,
		CleanLabel: make([]int32, n), CleanProb: make([]float32, n), GivenProb: make([]float32, n),
		Changed: make([]bool, n), PostOff: make([]int32, n+1)}
	for _, format := range []Format{Parquet, ArrowFile} {
		out := filepath.Join(dir, "out-"+format.String())
		if err := WriteShard(ctx, blobio.Local{}, out, format, []*schemas.Cleaned{c}, nil, schemas.LabelInt32, nil, schemas.IDInt64, nil); err != nil {
			t.Fatal(err)
		}
		if got := outputColumnJSON(t, out, format, schemas.ColLabels); got != "["+strings.Join(labels, ",")+"]" {
			t.Errorf("%v: output labels %s, want [%s]", format, got, strings.Join(labels, ","))
		}
	}
	// WriteInput writes them back the same way.
	again := filepath.Join(dir, "again.arrow")
	if err := WriteInput(ctx, blobio.Local{}, again, ArrowFile, []*schemas.Rows{r}, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := outputColumnJSON(t, again, ArrowFile, schemas.ColLabels); got != "["+strings.Join(labels, ",")+"]" {
		t.Errorf("WriteInput: labels %s, want [%s]", got, strings.Join(labels, ","))
	}
}

// outputColumnJSON reads column name of an Arrow IPC or Parquet file as a
// JSON list, one compact value per row.
func outputColumnJSON(t *testing.T, path string, format Format, name string) string {
	t.Helper()
	_, rows, _ := readOutput(t, path, format, memory.DefaultAllocator)
	var out []string
	for _, row := range rows {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(row), &m); err != nil {
			t.Fatal(err)
		}
		v, ok := m[name]
		if !ok {
			v = json.RawMessage("null")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.ReplaceAll(buf.String(), ",", ", "))
	}
	return "[" + strings.Join(out, ",") + "]"
}

// TestMixedIntLabelWidths reads an int32-label shard and an int64-label
// shard in one scan: both are read, and the shards say int64 (the output
// type of the run).
func TestMixedIntLabelWidths(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i, kind := range []schemas.LabelKind{schemas.LabelInt32, schemas.LabelInt64} {
		p := filepath.Join(dir, "part-"+itoa(int64(i)))
		if err := WriteInput(ctx, blobio.Local{}, p, Parquet, []*schemas.Rows{synth(int64(10*i), 10, 3, 5, schemas.IDInt64, false)}, kind, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	shards, rows, err := readAll(ctx, filepath.Join(dir, "part-*"), ReadOptions{Classes: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 2 || len(rows) != 2 {
		t.Fatalf("%d shards, %d units; want 2, 2", len(shards), len(rows))
	}
	for _, s := range shards {
		if s.Input.LabelKind != schemas.LabelInt64 {
			t.Errorf("%s: label kind %v, want int64", s.Path, s.Input.LabelKind)
		}
	}
	for i, r := range rows {
		want := synth(int64(10*i), 10, 3, 5, schemas.IDInt64, false)
		if !slices.Equal(r.Labels, want.Labels) {
			t.Errorf("shard %d: labels %v, want %v", i, r.Labels, want.Labels)
		}
	}
	// Strings with integers still do not mix.
	if err := WriteInput(ctx, blobio.Local{}, filepath.Join(dir, "part-2"), Parquet, []*schemas.Rows{synth(20, 10, 3, 5, schemas.IDInt64, false)}, schemas.LabelString, []string{"a", "b", "c", "d", "e"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Scan(ctx, filepath.Join(dir, "part-*"), ReadOptions{}); err == nil || !strings.Contains(err.Error(), "labels are utf8") {
		t.Errorf("string and integer labels: error %v", err)
	}
}

// TestEmptyShardSkipped puts a 0-row shard of each format among good ones:
// it is left out with a note, not an error; all shards empty is an error.
func TestEmptyShardSkipped(t *testing.T) {
	ctx := context.Background()
	for _, format := range []Format{Parquet, ArrowFile, ArrowStream} {
		dir := t.TempDir()
		good := synth(0, 10, 3, 5, schemas.IDInt64, false)
		if err := WriteInput(ctx, blobio.Local{}, filepath.Join(dir, "part-0"), format, []*schemas.Rows{good}, schemas.LabelInt32, nil, nil); err != nil {
			t.Fatal(err)
		}
		empty := filepath.Join(dir, "part-1")
		if err := WriteInput(ctx, blobio.Local{}, empty, format, []*schemas.Rows{synth(0, 0, 3, 5, schemas.IDInt64, false)}, schemas.LabelInt32, nil, nil); err != nil {
			t.Fatal(err)
		}
		shards, skipped, err := ScanFiles(ctx, filepath.Join(dir, "part-*"), ReadOptions{Classes: 5})
		if err != nil {
			t.Fatalf("%v: %v", format, err)
		}
		if len(shards) != 1 || shards[0].Rows != 10 || len(skipped) != 1 || skipped[0].Path != empty {
			t.Errorf("%v: %d shards, skipped %v; want 1 shard of 10 rows, %s skipped", format, len(shards), skipped, empty)
		}
		if _, err := Scan(ctx, empty, ReadOptions{Classes: 5}); err == nil || err.Error() != "shardio: "+empty+": no rows" {
			t.Errorf("%v: only an empty shard: error %v", format, err)
		}
	}
}

// TestDuplicateClassNames: class names given twice are named in the error
// in the user's terms.
func TestDuplicateClassNames(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.parquet")
	if err := WriteInput(ctx, blobio.Local{}, p, Parquet, []*schemas.Rows{synth(0, 4, 2, 2, schemas.IDInt64, false)}, schemas.LabelString, []string{"a", "b"}, nil); err != nil {
		t.Fatal(err)
	}
	_, _, err := readAll(ctx, p, ReadOptions{ClassNames: []string{"a", "a", "b"}})
	if err == nil || err.Error() != `shardio: class names: "a" given twice` {
		t.Errorf("error %v", err)
	}
}
