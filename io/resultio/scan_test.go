package resultio

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// TestScan: a file of more than one unit is streamed unit by unit, each
// with its first row's file row, the metadata on the schema; a cut file is
// an error naming it.
func TestScan(t *testing.T) {
	ctx := context.Background()
	const n = 70_000 // more than one unit (shardio writes 65,536 rows a unit)
	for _, format := range []shardio.Format{shardio.Parquet, shardio.ArrowFile} {
		t.Run(format.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			dir := t.TempDir()
			name := "part-0" + format.Ext()
			writeOutput(t, dir, name, format, schemas.LabelInt32, nil, 3, cleaned(0, n, 3, false))
			path := filepath.Join(dir, name)
			f, err := Open(ctx, path, mem)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := f.Schema.Metadata().GetValue(schemas.MetaOptionPrefix + "classes"); !ok || v != "3" {
				t.Errorf("metadata classes = %q, %v; want 3", v, ok)
			}
			var starts []int64
			next := int64(0)
			err = f.Scan(ctx, func(rec arrow.RecordBatch, row int64) error {
				starts = append(starts, row)
				if row != next {
					t.Errorf("unit at row %d, want %d", row, next)
				}
				ids := rec.Column(f.Schema.FieldIndices(schemas.ColID)[0]).(*array.Int64)
				if ids.Value(0) != row {
					t.Errorf("unit at row %d starts with id %d", row, ids.Value(0))
				}
				next = row + rec.NumRows()
				return nil
			})
			if err != nil || next != n || len(starts) < 2 {
				t.Errorf("scanned %d rows in units at %v, %v; want %d rows in 2 or more", next, starts, err, n)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cut := filepath.Join(dir, "cut"+format.Ext())
			if err := os.WriteFile(cut, b[:len(b)*2/3], 0o644); err != nil {
				t.Fatal(err)
			}
			err = Scan(ctx, cut, mem, func(*File, arrow.RecordBatch, int64) error { return nil })
			if err == nil || !strings.Contains(err.Error(), cut) {
				t.Errorf("cut file: %v, want an error naming %s", err, cut)
			}
			if !slices.IsSorted(starts) {
				t.Errorf("units out of order: %v", starts)
			}
		})
	}
}
