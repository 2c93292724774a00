package shardio

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// TestBadInput covers every bad-input rule of the data contract: each case
// writes files into a fresh directory, scans and reads them, and checks the
// whole error text, which must name the file, the row and the column where
// those exist. DIR stands for the directory in the wanted text.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	f32 := arrow.PrimitiveTypes.Float32
	i64 := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	fsl4 := arrow.Field{Name: "features", Type: arrow.FixedSizeListOf(4, f32), Nullable: true}
	list := arrow.Field{Name: "features", Type: arrow.ListOf(f32), Nullable: true}
	lab := arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	sch := func(f ...arrow.Field) *arrow.Schema { return arrow.NewSchema(f, nil) }
	good := sch(i64, fsl4, lab)
	goodRows := `[{"id": 0, "features": [1,2,3,4], "label": 0}, {"id": 1, "features": [1,2,3,4], "label": 1}]`

	// Writers of the cases' files.
	jsonFile := func(name string, format Format, sc *arrow.Schema, rows string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			writeRecordFile(t, filepath.Join(dir, name), format, jsonRecord(t, sc, rows))
		}
	}
	rowsFile := func(name string, format Format, r *schemas.Rows, kind schemas.LabelKind, names []string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := WriteInput(ctx, blobio.Local{}, filepath.Join(dir, name), format, []*schemas.Rows{r}, kind, names, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	rawFile := func(name string, content []byte) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	withFeature := func(row, dim int, v float32) *schemas.Rows {
		r := synth(0, 20, 4, 10, schemas.IDInt64, false)
		r.Features[row*4+dim] = v
		return r
	}
	withLabel := func(row int, v int32) *schemas.Rows {
		r := synth(0, 20, 4, 10, schemas.IDInt64, false)
		r.Labels[row] = v
		return r
	}
	both := func(fs ...func(t *testing.T, dir string)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			for _, f := range fs {
				f(t, dir)
			}
		}
	}
	strLabels := sch(i64, fsl4, arrow.Field{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true})

	for _, tc := range []struct {
		name    string
		files   func(t *testing.T, dir string)
		pattern string // relative to the directory
		opts    ReadOptions
		want    string
	}{
		{"empty glob", rawFile("a.txt", []byte("x")), "*.parquet", ReadOptions{Classes: 10},
			`shardio: no files match DIR/*.parquet`},
		{"missing column", jsonFile("a.parquet", Parquet, sch(i64, lab), `[{"id": 0, "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet column "features": missing`},
		{"missing renamed column", jsonFile("a.parquet", Parquet, good, goodRows), "*", ReadOptions{Classes: 10, Columns: schemas.Columns{ID: "key"}},
			`shardio: DIR/a.parquet column "key": missing`},
		{"missing label and labels", jsonFile("a.arrow", ArrowFile, sch(i64, fsl4), `[{"id": 0, "features": [1,2,3,4]}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.arrow column "label": missing (nor is there a "labels" column of annotations)`},
		{"wrong column type", jsonFile("a.parquet", Parquet, sch(i64, fsl4, arrow.Field{Name: "label", Type: f32}), `[{"id": 0, "features": [1,2,3,4], "label": 0.5}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet column "label": type float32, want int32, int64, utf8, large_utf8 or dictionary<utf8>`},
		{"wrong features type", jsonFile("a.arrow", ArrowFile, sch(i64, arrow.Field{Name: "features", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}, lab), `[{"id": 0, "features": [1,2], "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.arrow column "features": type list<item: int64, nullable>, want fixed_size_list, list or large_list of float32 or float64`},
		{"ragged within a shard", jsonFile("a.parquet", Parquet, sch(i64, list, lab),
			`[{"id": 0, "features": [1,2,3,4], "label": 0}, {"id": 1, "features": [1,2,3,4], "label": 0}, {"id": 2, "features": [1,2,3], "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 2 column "features": 3 values, want dimension 4`},
		{"ragged across shards", both(
			rowsFile("a.parquet", Parquet, synth(0, 3, 4, 10, schemas.IDInt64, false), schemas.LabelInt32, nil),
			rowsFile("b.parquet", Parquet, synth(3, 3, 5, 10, schemas.IDInt64, false), schemas.LabelInt32, nil)), "*", ReadOptions{Classes: 10},
			`shardio: DIR/b.parquet column "features": dimension 5, want 4 (from DIR/a.parquet)`},
		{"ragged across shards, list features", both(
			rowsFile("a.parquet", Parquet, synth(0, 3, 4, 10, schemas.IDInt64, false), schemas.LabelInt32, nil),
			jsonFile("b.parquet", Parquet, sch(i64, list, lab), `[{"id": 7, "features": [1,2,3,4], "label": 0}, {"id": 8, "features": [1,2,3,4,5], "label": 0}]`)), "*", ReadOptions{Classes: 10},
			`shardio: DIR/b.parquet row 1 column "features": 5 values, want dimension 4`},
		{"dimension other than ReadOptions.D", rowsFile("a.arrow", ArrowFile, synth(0, 3, 4, 10, schemas.IDInt64, false), schemas.LabelInt32, nil), "*", ReadOptions{Classes: 10, D: 8},
			`shardio: DIR/a.arrow column "features": dimension 4, want 8 (from ReadOptions.D)`},
		{"NaN feature", rowsFile("a.parquet", Parquet, withFeature(17, 3, float32(math.NaN())), schemas.LabelInt32, nil), "a.parquet", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 17 column "features": NaN at dimension 3`},
		{"Inf feature", rowsFile("a.arrow", ArrowFile, withFeature(4, 0, float32(math.Inf(-1))), schemas.LabelInt32, nil), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.arrow row 4 column "features": -Inf at dimension 0`},
		{"float64 feature overflowing float32", jsonFile("a.parquet", Parquet, sch(i64, arrow.Field{Name: "features", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float64)}, lab),
			`[{"id": 0, "features": [1, 2], "label": 0}, {"id": 1, "features": [1, 1e300], "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 1 column "features": 1e+300 at dimension 1 overflows float32`},
		{"feature beyond MaxAbsFeature", rowsFile("a.parquet", Parquet, withFeature(9, 2, -1e37), schemas.LabelInt32, nil), "*", ReadOptions{Classes: 10, MaxAbsFeature: MaxAbsForDistances(4)},
			`shardio: DIR/a.parquet row 9 column "features": -1e+37 at dimension 2: features are used unscaled (--no-standardise) and must lie within ±4.61e+18 at dimension 4, or squared distances overflow float32`},
		{"null feature row", jsonFile("a.parquet", Parquet, good, `[{"id": 0, "features": [1,2,3,4], "label": 0}, {"id": 1, "features": null, "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 1 column "features": null feature row`},
		{"null feature value", jsonFile("a.arrow", ArrowFile, good, `[{"id": 0, "features": [1,2,null,4], "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.arrow row 0 column "features": null at dimension 2`},
		{"label out of range", rowsFile("a.parquet", Parquet, withLabel(5, 12), schemas.LabelInt32, nil), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 5 column "label": label 12 outside [0,10)`},
		{"negative label", jsonFile("a.parquet", Parquet, sch(i64, fsl4, arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int64, Nullable: true}),
			`[{"id": 0, "features": [1,2,3,4], "label": -3}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 0 column "label": label -3 outside [0,10)`},
		{"label not in the class set", jsonFile("a.arrow", ArrowFile, strLabels,
			`[{"id": 0, "features": [1,2,3,4], "label": "cat"}, {"id": 1, "features": [1,2,3,4], "label": "cow"}]`), "*", ReadOptions{ClassNames: []string{"cat", "dog"}},
			`shardio: DIR/a.arrow row 1 column "label": label "cow" not in the class set (2 classes)`},
		{"annotation out of range", jsonFile("a.parquet", Parquet, sch(i64, fsl4, arrow.Field{Name: "labels", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}),
			`[{"id": 0, "features": [1,2,3,4], "labels": [1, 2]}, {"id": 1, "features": [1,2,3,4], "labels": [3, 10]}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 1 column "labels": annotation 1: label 10 outside [0,10)`},
		{"integer labels without Classes", jsonFile("a.parquet", Parquet, good, goodRows), "*", ReadOptions{},
			`shardio: DIR/a.parquet column "label": integer labels need the number of classes (ReadOptions.Classes = 0)`},
		{"string labels without ClassNames", jsonFile("a.parquet", Parquet, strLabels, `[{"id": 0, "features": [1,2,3,4], "label": "cat"}]`), "*", ReadOptions{},
			`shardio: DIR/a.parquet column "label": string labels need the class names (ReadOptions.ClassNames; ScanClassNames collects them)`},
		{"null id", jsonFile("a.parquet", Parquet, good, `[{"id": 0, "features": [1,2,3,4], "label": 0}, {"id": null, "features": [1,2,3,4], "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 1 column "id": null id`},
		{"duplicate id", jsonFile("a.parquet", Parquet, good,
			`[{"id": 5, "features": [1,2,3,4], "label": 0}, {"id": 6, "features": [1,2,3,4], "label": 0}, {"id": 5, "features": [1,2,3,4], "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet row 2 column "id": duplicate id 5 (first at row 0)`},
		{"duplicate string id", jsonFile("a.arrow", ArrowFile, sch(arrow.Field{Name: "id", Type: arrow.BinaryTypes.String}, fsl4, lab),
			`[{"id": "x", "features": [1,2,3,4], "label": 0}, {"id": "x", "features": [1,2,3,4], "label": 0}]`), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.arrow row 1 column "id": duplicate id "x" (first at row 0)`},
		{"shards disagree on id type", both(
			rowsFile("a.parquet", Parquet, synth(0, 3, 4, 10, schemas.IDInt64, false), schemas.LabelInt32, nil),
			rowsFile("b.parquet", Parquet, synth(3, 3, 4, 10, schemas.IDString, false), schemas.LabelInt32, nil)), "*", ReadOptions{Classes: 10},
			`shardio: DIR/b.parquet column "id": ids are utf8, but DIR/a.parquet has int64 ids`},
		{"empty file", rawFile("a.parquet", nil), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet: empty file (0 bytes)`},
		{"not a data file", rawFile("a.parquet", []byte("id,features\n1,2\n")), "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet: not Parquet (PAR1) nor Arrow IPC (ARROW1 or a stream): starts with 69 64 2c 66 65 61 74 75`},
		{"zero rows, Parquet", func(t *testing.T, dir string) {
			writeRecordFile(t, filepath.Join(dir, "a.parquet"), Parquet, jsonRecord(t, good, `[]`))
		}, "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.parquet: no rows`},
		{"zero rows, Arrow file", func(t *testing.T, dir string) {
			writeRecordFile(t, filepath.Join(dir, "a.arrow"), ArrowFile, jsonRecord(t, good, `[]`))
		}, "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.arrow: no rows`},
		{"zero rows, Arrow stream", func(t *testing.T, dir string) {
			writeRecordFile(t, filepath.Join(dir, "a.arrows"), ArrowStream, jsonRecord(t, good, `[]`))
		}, "*", ReadOptions{Classes: 10},
			`shardio: DIR/a.arrows: no rows`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.files(t, dir)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tc.opts.Mem = mem
			_, _, err := readAll(ctx, filepath.Join(dir, tc.pattern), tc.opts)
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			if err == nil || err.Error() != want {
				t.Errorf("error\n got %v\nwant %s", err, want)
			}
		})
	}
}

// TestTruncated cuts good files of each format at many lengths: every cut
// must give an error naming the file, never a panic or a silent short read.
func TestTruncated(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, format := range []Format{Parquet, ArrowFile, ArrowStream} {
		full := filepath.Join(dir, "full"+format.Ext())
		r := synth(0, 40, 4, 10, schemas.IDInt64, false)
		if err := WriteInput(ctx, blobio.Local{}, full, format, []*schemas.Rows{r, synth(40, 10, 4, 10, schemas.IDInt64, false)}, schemas.LabelInt32, nil, nil); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(full)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, format.String()+"-cut")
		for _, n := range []int{1, 4, 7, 12, len(b) / 3, len(b) / 2, len(b) - 9, len(b) - 1} {
			if err := os.WriteFile(cut, b[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := readAll(ctx, cut, ReadOptions{Classes: 10})
			if err == nil || !strings.HasPrefix(err.Error(), "shardio: "+cut+": ") {
				t.Errorf("%v cut to %d of %d bytes: error %v, want one naming the file", format, n, len(b), err)
			}
		}
	}
}
