package shardio

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/schemas"
)

// writeFeatureParquet writes rows (nil: a null row) as a Parquet file of
// id, features (of type ft) and label, in small pages and row groups of 7
// rows, dictionary-encoded or not. Each row group is a record of its own:
// arrow-go's writer, cutting one record into row groups, repeats a
// fixed_size_list column's first rows in the later groups (relabel's
// writer never cuts a record: shardio.maxRecordRows).
func writeFeatureParquet(t *testing.T, path string, ft arrow.DataType, rows [][]float32, nulls map[[2]int]bool, dict bool) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: ft, Nullable: true},
		{Name: "label", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(dict), parquet.WithDataPageSize(256), parquet.WithMaxRowGroupLength(7))
	w, err := pqarrow.NewFileWriter(sc, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	flush := func() {
		rec := b.NewRecordBatch()
		defer rec.Release()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	for i, row := range rows {
		if i > 0 && i%7 == 0 {
			flush()
		}
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.Int32Builder).Append(int32(i % 3))
		lb := b.Field(1).(array.ListLikeBuilder)
		if row == nil {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.Float32Builder)
		for j, v := range row {
			if nulls[[2]int{i, j}] {
				vb.AppendNull()
			} else {
				vb.Append(v)
			}
		}
	}
	flush()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readGeneric reads unit u's features through pqarrow's arrays (the path
// every format and column shape takes).
func readGeneric(t *testing.T, u Unit, opts ReadOptions) (*schemas.Rows, error) {
	t.Helper()
	c, err := readColumns(context.Background(), u, &opts, func(in schemas.Input) []int { return []int{in.ID, in.Features, in.Label} }, -1)
	if err != nil {
		return nil, err
	}
	defer c.release()
	r := &schemas.Rows{}
	return r, readFeatures(r, u, c.in, c.chunks[1], c.rows(), opts.D)
}

// flatTaken reports whether unit u's features are read straight from their
// column chunk.
func flatTaken(t *testing.T, u Unit, opts ReadOptions) bool {
	t.Helper()
	c, err := readColumns(context.Background(), u, &opts, func(in schemas.Input) []int { return []int{in.ID, in.Features, in.Label} }, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.release()
	return c.flat[1] != nil
}

// A list of float32 read straight from its column chunk gives the bits
// pqarrow's arrays give, in every list type, encoding, page and row group
// layout; a column with a null, an empty or a ragged row is read through
// pqarrow, with its errors.
func TestFlatFeatures(t *testing.T) {
	ctx := context.Background()
	const n, d = 23, 5
	r := rand.New(rand.NewPCG(3, 4))
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, d)
		for j := range rows[i] {
			rows[i][j] = float32(r.NormFloat64())
			if j == 1 {
				rows[i][j] = float32(i % 4) // repeats, for the dictionary
			}
		}
	}
	types := map[string]arrow.DataType{
		"list": arrow.ListOf(arrow.PrimitiveTypes.Float32), "large_list": arrow.LargeListOf(arrow.PrimitiveTypes.Float32),
		"fixed_size_list": arrow.FixedSizeListOf(d, arrow.PrimitiveTypes.Float32),
	}
	opts := ReadOptions{Classes: 3}
	defer func(b, v int64) { flatBatch, flatBytesPerValue = b, v }(flatBatch, flatBytesPerValue)
	for _, batch := range []int64{flatBatch, 7} { // 7: levels decoded 7 at a time
		flatBatch = batch
		checkFlat(t, rows, types, opts)
	}
	flatBytesPerValue = 1 << 40 // values sized for one batch, grown with every batch
	checkFlat(t, rows, types, opts)

	// Shapes the straight read leaves to pqarrow, with the error each gives
	// (row 9: the second row of the second row group).
	bad := func(name string, ft arrow.DataType, edit func(rows [][]float32, nulls map[[2]int]bool) [][]float32, want string) {
		t.Run(name, func(t *testing.T) {
			rs := make([][]float32, n)
			for i := range rows {
				rs[i] = append([]float32(nil), rows[i]...)
			}
			nulls := map[[2]int]bool{}
			rs = edit(rs, nulls)
			path := filepath.Join(t.TempDir(), "bad.parquet")
			writeFeatureParquet(t, path, ft, rs, nulls, true)
			shards, err := Scan(ctx, path, ReadOptions{D: d})
			if err != nil {
				t.Fatal(err)
			}
			u := shards[0].Units[1]
			if flatTaken(t, u, opts) {
				t.Errorf("read straight from the column chunk")
			}
			_, err = ReadUnit(ctx, u, ReadOptions{Classes: 3, D: d})
			if want := fmt.Sprintf(`shardio: %s row 8 column "features": %s`, path, want); err == nil || err.Error() != want {
				t.Errorf("error %v, want %s", err, want)
			}
		})
	}
	list := arrow.ListOf(arrow.PrimitiveTypes.Float32)
	bad("null row", list, func(rs [][]float32, _ map[[2]int]bool) [][]float32 { rs[8] = nil; return rs }, "null feature row")
	bad("empty row", list, func(rs [][]float32, _ map[[2]int]bool) [][]float32 { rs[8] = []float32{}; return rs }, "0 values, want dimension 5")
	bad("ragged row", list, func(rs [][]float32, _ map[[2]int]bool) [][]float32 { rs[8] = rs[8][:3]; return rs }, "3 values, want dimension 5")
	bad("null value", list, func(rs [][]float32, nulls map[[2]int]bool) [][]float32 { nulls[[2]int{8, 2}] = true; return rs }, "null at dimension 2")
}

// checkFlat is TestFlatFeatures' check of every list type and encoding.
func checkFlat(t *testing.T, rows [][]float32, types map[string]arrow.DataType, opts ReadOptions) {
	t.Helper()
	ctx := context.Background()
	const d = 5
	for name, ft := range types {
		for _, dict := range []bool{true, false} {
			path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%v.parquet", name, dict))
			writeFeatureParquet(t, path, ft, rows, nil, dict)
			shards, err := Scan(ctx, path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(shards[0].Units) != 4 {
				t.Fatalf("%s: %d row groups, want 4", path, len(shards[0].Units))
			}
			for _, u := range shards[0].Units {
				if !flatTaken(t, u, opts) {
					t.Errorf("%s unit %d: not read straight from the column chunk", name, u.Index)
				}
				got, err := ReadUnit(ctx, u, opts)
				if err != nil {
					t.Fatal(err)
				}
				want, err := readGeneric(t, u, opts)
				if err != nil {
					t.Fatal(err)
				}
				if got.D != d || len(got.Features) != len(want.Features) {
					t.Fatalf("%s unit %d: D %d, %d values; pqarrow's %d", name, u.Index, got.D, len(got.Features), len(want.Features))
				}
				for i := range got.Features {
					if math.Float32bits(got.Features[i]) != math.Float32bits(want.Features[i]) ||
						got.Features[i] != rows[int(u.Offset)+i/d][i%d] {
						t.Fatalf("%s unit %d (offset %d) value %d: %v, pqarrow's %v, written %v", name, u.Index, u.Offset, i, got.Features[i], want.Features[i], rows[int(u.Offset)+i/d][i%d])
					}
				}
				if _, err := ReadUnit(ctx, u, ReadOptions{Classes: 3, D: d + 1}); err == nil ||
					err.Error() != fmt.Sprintf(`shardio: %s row %d column "features": %d values, want dimension %d`, path, u.Offset, d, d+1) {
					t.Errorf("%s unit %d, D %d: error %v", name, u.Index, d+1, err)
				}
			}
		}
	}

}
