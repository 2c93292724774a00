package shardio

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

var digitNames = []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}

// TestInputRoundTrip writes synthetic shards with WriteInput in every format,
// id kind, label kind and label form, then scans and reads them back: the
// Rows must equal what was written, unit by unit, with absolute offsets.
func TestInputRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, format := range []Format{Parquet, ArrowFile, ArrowStream} {
		for _, idKind := range []schemas.IDKind{schemas.IDInt64, schemas.IDString} {
			for _, labelKind := range []schemas.LabelKind{schemas.LabelInt32, schemas.LabelInt64, schemas.LabelString} {
				for _, multi := range []bool{false, true} {
					name := fmt.Sprintf("%v/%v ids/%v labels/multi=%v", format, idKind, labelKind, multi)
					t.Run(name, func(t *testing.T) {
						testInputRoundTrip(ctx, t, format, idKind, labelKind, multi)
					})
				}
			}
		}
	}
}

func testInputRoundTrip(ctx context.Context, t *testing.T, format Format, idKind schemas.IDKind, labelKind schemas.LabelKind, multi bool) {
	const d, c = 3, 10
	dir := t.TempDir()
	// Two shards: the first of two units (7 + 5 rows), the second of one.
	shard0 := []*schemas.Rows{synth(0, 7, d, c, idKind, multi), synth(7, 5, d, c, idKind, multi)}
	shard1 := []*schemas.Rows{synth(12, 6, d, c, idKind, multi)}
	var names []string
	if labelKind == schemas.LabelString {
		names = digitNames
	}
	for i, rows := range [][]*schemas.Rows{shard0, shard1} {
		path := filepath.Join(dir, fmt.Sprintf("part-%d", i)) // no extension: the format is told by magic bytes
		if err := WriteInput(ctx, blobio.Local{}, path, format, rows, labelKind, names, nil); err != nil {
			t.Fatal(err)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts := ReadOptions{Mem: mem}
	pattern := filepath.Join(dir, "part-*")
	shards, err := Scan(ctx, pattern, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 2 {
		t.Fatalf("%d shards, want 2", len(shards))
	}
	if labelKind == schemas.LabelString {
		got, err := ScanClassNames(ctx, shards, opts)
		if err != nil {
			t.Fatal(err)
		}
		// synth uses every class but none other.
		if !reflect.DeepEqual(got, digitNames) {
			t.Errorf("ScanClassNames = %v, want %v", got, digitNames)
		}
		opts.ClassNames = got
	} else {
		got, err := ScanNumClasses(ctx, shards, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got != c {
			t.Errorf("ScanNumClasses = %d, want %d", got, c)
		}
		opts.Classes = got
	}
	want := append(append([]*schemas.Rows{}, shard0...), shard1...)
	var labelled int64
	for _, r := range want {
		for i := 0; i+1 < len(r.LabelOff); i++ {
			if slices.ContainsFunc(r.Labels[r.LabelOff[i]:r.LabelOff[i+1]], func(l int32) bool { return l != schemas.Unlabelled }) {
				labelled++
			}
		}
	}
	if n, err := CountLabelled(ctx, shards, opts); err != nil || n != labelled {
		t.Errorf("CountLabelled = %d, %v; want %d", n, err, labelled)
	}
	// One pass: the class set and the count, as the separate scans give them.
	if l, err := ScanLabels(ctx, shards, opts, 0); err != nil || l.Labelled != labelled ||
		!slices.Equal(l.Names, opts.ClassNames) || l.Classes != opts.Classes {
		t.Errorf("ScanLabels = %+v, %v; want classes %d, names %v, %d labelled", l, err, opts.Classes, opts.ClassNames, labelled)
	}
	if _, err := ScanLabels(ctx, shards, opts, 2); labelKind != schemas.LabelString && (err == nil || !strings.Contains(err.Error(), "outside [0,2)")) {
		t.Errorf("ScanLabels with limit 2: %v; want labels outside [0,2) refused", err)
	}
	if format == ArrowStream {
		// A stream is one unit: the first shard's two batches come back as one.
		want = []*schemas.Rows{synth(0, 12, d, c, idKind, multi), shard1[0]}
	}
	var got []*schemas.Rows
	for _, s := range shards {
		if s.Format != format || s.D != d || s.Input.IDKind != idKind || s.Input.LabelKind != labelKind || s.Input.Multi != multi {
			t.Errorf("shard %s: %+v", s.Path, s)
		}
		for _, u := range s.Units {
			r, err := ReadUnit(ctx, u, opts)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d units, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		w.Shard = g.Shard // synth leaves it empty
		if !strings.HasPrefix(g.Shard, filepath.Join(dir, "part-")) {
			t.Errorf("unit %d: Shard %q", i, g.Shard)
		}
		if w.Offset >= 12 {
			w.Offset -= 12 // offsets count from each shard's start
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("unit %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// TestDictionaryLabels reads dictionary<utf8> labels, as pandas categoricals
// are written, from an Arrow file and a Parquet file.
func TestDictionaryLabels(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)},
		{Name: "label", Type: dt, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	labels := []string{"dog", "cat", "", "dog", "bird"}
	for i, l := range labels {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		fl := b.Field(1).(*array.FixedSizeListBuilder)
		fl.Append(true)
		fl.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{1, float32(i)}, nil)
		if l == "" {
			b.Field(2).AppendNull()
		} else if err := b.Field(2).(*array.BinaryDictionaryBuilder).AppendString(l); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, format := range []Format{ArrowFile, Parquet} {
		path := filepath.Join(dir, "dict"+format.Ext())
		writeRecordFile(t, path, format, rec)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		opts := ReadOptions{Mem: mem}
		shards, err := Scan(ctx, path, opts)
		if err != nil {
			t.Fatal(err)
		}
		names, err := ScanClassNames(ctx, shards, opts)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"bird", "cat", "dog"}; !reflect.DeepEqual(names, want) {
			t.Errorf("%v: ScanClassNames = %v, want %v", format, names, want)
		}
		opts.ClassNames = names
		r, err := ReadUnit(ctx, shards[0].Units[0], opts)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int32{2, 1, schemas.Unlabelled, 2, 0}; !reflect.DeepEqual(r.Labels, want) {
			t.Errorf("%v: labels %v, want %v", format, r.Labels, want)
		}
		opts.ClassNames = []string{"cat", "dog"}
		if _, err := ReadUnit(ctx, shards[0].Units[0], opts); err == nil || !strings.Contains(err.Error(), `row 4 column "label": label "bird" not in the class set (2 classes)`) {
			t.Errorf("%v: unknown dictionary label: error %v", format, err)
		}
		mem.AssertSize(t, 0)
	}
}

// TestListFeaturesDimension checks that Scan takes the dimension of list
// features from the first row when nothing else gives it, and that
// ReadOptions.D overrides it.
func TestListFeaturesDimension(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "label", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	path := filepath.Join(dir, "a.arrow")
	writeRecordFile(t, path, ArrowFile, jsonRecord(t, sc, `[{"id": 3, "features": [0.5, 1.5, 2.5], "label": 1}]`))
	shards, err := Scan(ctx, path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if shards[0].D != 3 || shards[0].Units[0].D != 3 {
		t.Errorf("D = %d, unit D = %d; want 3", shards[0].D, shards[0].Units[0].D)
	}
	r, err := ReadUnit(ctx, shards[0].Units[0], ReadOptions{Classes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Features, []float32{0.5, 1.5, 2.5}) || r.D != 3 {
		t.Errorf("features %v (D %d)", r.Features, r.D)
	}
	if _, err := ReadUnit(ctx, shards[0].Units[0], ReadOptions{Classes: 2, D: 4}); err == nil ||
		err.Error() != fmt.Sprintf(`shardio: %s row 0 column "features": 3 values, want dimension 4`, path) {
		t.Errorf("ReadOptions.D = 4: error %v", err)
	}
}

func TestDuplicateError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{DuplicateError("id", "17", "b.parquet", 3, "a.parquet", 9), `shardio: b.parquet row 3 column "id": duplicate id 17 (first at a.parquet row 9)`},
		{DuplicateError("key", `"x"`, "a.arrow", 3, "a.arrow", 1), `shardio: a.arrow row 3 column "key": duplicate id "x" (first at row 1)`},
	} {
		if tc.err.Error() != tc.want {
			t.Errorf("got %s\nwant %s", tc.err, tc.want)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		head string
		want Format
		err  bool
	}{
		{"PAR1\x15\x04", Parquet, false},
		{"ARROW1\x00\x00", ArrowFile, false},
		{"\xff\xff\xff\xff\x10\x00\x00\x00", ArrowStream, false},
		{"", 0, true},
		{"PAR", 0, true},
		{"\x10\x00\x00\x00", 0, true}, // a pre-1.0 stream without the continuation marker
	} {
		got, err := detect([]byte(tc.head))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("detect(%q) = %v, %v; want %v, error %v", tc.head, got, err, tc.want, tc.err)
		}
	}
	for _, f := range []Format{Parquet, ArrowFile, ArrowStream} {
		if got, err := ParseFormat(f.String()); got != f || err != nil {
			t.Errorf("ParseFormat(%q) = %v, %v", f, got, err)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("ParseFormat(csv): no error")
	}
}
