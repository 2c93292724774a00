package annotio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

var ctx = context.Background()

// TestRoundTrip writes annotations in every format, with int and string
// ids and annotators, several row groups, and reads them back.
func TestRoundTrip(t *testing.T) {
	ids := []int64{1, 2, 3, 1, 2, 3, 7}
	strs := []string{"a", "b", "c", "a", "b", "c", "g"}
	anns := []int64{10, 10, 11, 12, 11, 12, 10}
	names := []string{"w1", "w1", "w2", "w3", "w2", "w3", "w1"}
	labs := []int32{0, 1, 2, 0, 1, 1, 2}
	for _, f := range []shardio.Format{shardio.Parquet, shardio.ArrowFile, shardio.ArrowStream} {
		for _, str := range []bool{false, true} {
			name := f.String()
			if str {
				name += "-strings"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "a"+f.Ext())
				var si, sn []string
				if str {
					si, sn = strs, names
				}
				if err := WriteAnnotations(ctx, blobio.Local{}, path, f, ids, si, anns, sn, labs, 3); err != nil {
					t.Fatal(err)
				}
				units, lay, err := Scan(ctx, filepath.Join(dir, "*"), Options{Columns: DefaultColumns()})
				if err != nil {
					t.Fatal(err)
				}
				wantKind := schemas.IDInt64
				if str {
					wantKind = schemas.IDString
				}
				if lay.IDKind != wantKind || lay.AnnotatorKind != wantKind {
					t.Fatalf("layout %+v", lay)
				}
				if f != shardio.ArrowStream && (len(units) != 3 || lay.Rows != 7) {
					t.Fatalf("%d units, %d rows, want 3 units of 7 rows", len(units), lay.Rows)
				}
				var gotIDs, gotAnn []int64
				var gotLab []int32
				var gotStr []string
				for _, u := range units {
					b, err := ReadUnit(ctx, u, Options{Columns: DefaultColumns(), Classes: 3})
					if err != nil {
						t.Fatal(err)
					}
					gotIDs = append(gotIDs, b.IDs...)
					gotAnn = append(gotAnn, b.Annotators...)
					gotLab = append(gotLab, b.Labels...)
					gotStr = append(gotStr, b.StrAnnotators...)
				}
				wantIDs, wantAnn := ids, anns
				if str {
					wantIDs, wantAnn = make([]int64, len(ids)), make([]int64, len(ids))
					for k := range ids {
						wantIDs[k], wantAnn[k] = schemas.Key(strs[k]), schemas.Key(names[k])
					}
					if !slices.Equal(gotStr, names) {
						t.Errorf("annotator names %v", gotStr)
					}
				}
				if !slices.Equal(gotIDs, wantIDs) || !slices.Equal(gotAnn, wantAnn) || !slices.Equal(gotLab, labs) {
					t.Errorf("read %v %v %v", gotIDs, gotAnn, gotLab)
				}
			})
		}
	}
}

// writeTable writes one Parquet file of the given columns.
func writeTable(t testing.TB, path string, fields []arrow.Field, fill func(b *array.RecordBuilder)) {
	t.Helper()
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	fill(b)
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := writeRecord(ctx, blobio.Local{}, path, shardio.Parquet, sc, rec); err != nil {
		t.Fatal(err)
	}
}

var (
	fID    = arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	fAnn   = arrow.Field{Name: "annotator", Type: arrow.BinaryTypes.String, Nullable: true}
	fLabel = arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
)

// TestErrors: every data problem names the file, the row and the column.
func TestErrors(t *testing.T) {
	three := func(ids []int64, idValid []bool, anns []string, annValid []bool, labs []int32, labValid []bool) func(b *array.RecordBuilder) {
		return func(b *array.RecordBuilder) {
			b.Field(0).(*array.Int64Builder).AppendValues(ids, idValid)
			b.Field(1).(*array.StringBuilder).AppendValues(anns, annValid)
			b.Field(2).(*array.Int32Builder).AppendValues(labs, labValid)
		}
	}
	ok3 := []bool{true, true, true}
	for _, tc := range []struct {
		name   string
		fields []arrow.Field
		fill   func(b *array.RecordBuilder)
		opts   Options
		want   string
	}{
		{"null label", []arrow.Field{fID, fAnn, fLabel}, three([]int64{1, 2, 3}, nil, []string{"a", "b", "c"}, nil, []int32{0, 0, 1}, []bool{true, false, true}), Options{Columns: DefaultColumns()}, `row 1 column "label": null label`},
		{"null annotator", []arrow.Field{fID, fAnn, fLabel}, three([]int64{1, 2, 3}, nil, []string{"a", "b", "c"}, []bool{true, true, false}, []int32{0, 0, 1}, ok3), Options{Columns: DefaultColumns()}, `row 2 column "annotator": null annotator`},
		{"null id", []arrow.Field{fID, fAnn, fLabel}, three([]int64{1, 2, 3}, []bool{false, true, true}, []string{"a", "b", "c"}, nil, []int32{0, 0, 1}, ok3), Options{Columns: DefaultColumns()}, `row 0 column "id": null id`},
		{"label outside", []arrow.Field{fID, fAnn, fLabel}, three([]int64{1, 2, 3}, nil, []string{"a", "b", "c"}, nil, []int32{0, 5, 1}, ok3), Options{Columns: DefaultColumns(), Classes: 3}, `row 1 column "label": label 5 outside [0,3)`},
		{"annotator not UTF-8", []arrow.Field{fID, fAnn, fLabel}, three([]int64{1, 2, 3}, nil, []string{"a", "b\xff\x1b[2J", "c"}, nil, []int32{0, 0, 1}, ok3), Options{Columns: DefaultColumns()}, `row 1 column "annotator": annotator "b\xff\x1b[2J" is not valid UTF-8`},
		{"negative label", []arrow.Field{fID, fAnn, fLabel}, three([]int64{1, 2, 3}, nil, []string{"a", "b", "c"}, nil, []int32{0, 1, -1}, ok3), Options{Columns: DefaultColumns()}, `row 2 column "label": label -1 is negative`},
		{"missing column", []arrow.Field{fID, fLabel}, func(b *array.RecordBuilder) {
			b.Field(0).(*array.Int64Builder).Append(1)
			b.Field(1).(*array.Int32Builder).Append(0)
		}, Options{Columns: DefaultColumns()}, `column "annotator": missing`},
		{"renamed columns", []arrow.Field{fID, fAnn, fLabel}, three([]int64{1}, nil, []string{"a"}, nil, []int32{0}, nil), Options{Columns: Columns{ID: ColID, Annotator: "worker", Label: ColLabel}}, `column "worker": missing`},
		{"float label", []arrow.Field{fID, fAnn, {Name: "label", Type: arrow.PrimitiveTypes.Float64}}, func(b *array.RecordBuilder) {
			b.Field(0).(*array.Int64Builder).Append(1)
			b.Field(1).(*array.StringBuilder).Append("a")
			b.Field(2).(*array.Float64Builder).Append(0)
		}, Options{Columns: DefaultColumns()}, `column "label": type float64, want int32 or int64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.parquet")
			writeTable(t, path, tc.fields, tc.fill)
			units, _, err := Scan(ctx, path, tc.opts)
			if err == nil {
				for _, u := range units {
					if _, err = ReadUnit(ctx, u, tc.opts); err != nil {
						break
					}
				}
			}
			var ie *InputError
			if err == nil || !errors.As(err, &ie) || ie.Path != path || !strings.Contains(err.Error(), path+" "+tc.want) {
				t.Errorf("error %v, want %q naming %s", err, tc.want, path)
			}
		})
	}
}

// TestRenamedColumns reads annotations whose columns have other names.
func TestRenamedColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.parquet")
	writeTable(t, path, []arrow.Field{{Name: "item", Type: arrow.PrimitiveTypes.Int64}, {Name: "worker", Type: arrow.PrimitiveTypes.Int64}, {Name: "answer", Type: arrow.PrimitiveTypes.Int64}},
		func(b *array.RecordBuilder) {
			b.Field(0).(*array.Int64Builder).AppendValues([]int64{5, 6}, nil)
			b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
			b.Field(2).(*array.Int64Builder).AppendValues([]int64{3, 0}, nil)
		})
	opts := Options{Columns: Columns{ID: "item", Annotator: "worker", Label: "answer"}}
	units, _, err := Scan(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadUnit(ctx, units[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.IDs, []int64{5, 6}) || !slices.Equal(b.Annotators, []int64{1, 2}) || !slices.Equal(b.Labels, []int32{3, 0}) {
		t.Errorf("read %+v", b)
	}
	if top, err := MaxLabel(ctx, units, opts); err != nil || top != 3 {
		t.Errorf("MaxLabel = %d, %v", top, err)
	}
}

// TestMixedKinds: all shards must type ids and annotators alike.
func TestMixedKinds(t *testing.T) {
	dir := t.TempDir()
	if err := WriteAnnotations(ctx, blobio.Local{}, filepath.Join(dir, "a.parquet"), shardio.Parquet, []int64{1}, nil, []int64{1}, nil, []int32{0}, 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteAnnotations(ctx, blobio.Local{}, filepath.Join(dir, "b.parquet"), shardio.Parquet, []int64{1}, nil, nil, []string{"w"}, []int32{0}, 0); err != nil {
		t.Fatal(err)
	}
	_, _, err := Scan(ctx, filepath.Join(dir, "*.parquet"), Options{Columns: DefaultColumns()})
	if err == nil || !strings.Contains(err.Error(), `b.parquet column "annotator": annotators are string, but`) {
		t.Errorf("error %v", err)
	}
	if _, _, err := Scan(ctx, filepath.Join(dir, "none*"), Options{Columns: DefaultColumns()}); err == nil {
		t.Errorf("no error for a glob matching nothing")
	}
	// Every column name is required: an empty one is refused, not filled.
	noLabel := DefaultColumns()
	noLabel.Label = ""
	if _, _, err := Scan(ctx, filepath.Join(dir, "a.parquet"), Options{Columns: noLabel}); err == nil || !strings.Contains(err.Error(), "no label column name") {
		t.Errorf("empty label column name: %v", err)
	}
}

// TestItemAnnotators reads an items' annotators list column.
func TestItemAnnotators(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.parquet")
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "annotators", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}}
	writeTable(t, path, fields, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
		lb := b.Field(1).(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		lb.Append(true)
		vb.AppendValues([]string{"x", "y"}, nil)
		lb.AppendNull()
		lb.Append(true)
		vb.Append("z")
	})
	u := shardio.Unit{Path: path, Format: shardio.Parquet, Index: 0, Offset: 0, Rows: 3}
	ia, err := ReadItemAnnotators(ctx, u, "annotators", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ia.Kind != schemas.IDString || !slices.Equal(ia.Off, []int32{0, 2, 2, 3}) || !slices.Equal(ia.Name, []string{"x", "y", "z"}) || ia.Key[2] != schemas.Key("z") {
		t.Errorf("read %+v", ia)
	}
	if _, err := ReadItemAnnotators(ctx, u, "id", nil); err == nil || !strings.Contains(err.Error(), `column "id": type int64, want a list`) {
		t.Errorf("a non-list column: %v", err)
	}
	if ok, err := HasColumn(ctx, path, "annotators"); err != nil || !ok {
		t.Errorf("HasColumn(annotators) = %v, %v", ok, err)
	}
	if ok, err := HasColumn(ctx, path, "labels"); err != nil || ok {
		t.Errorf("HasColumn(labels) = %v, %v", ok, err)
	}
	os.Remove(path)
}
