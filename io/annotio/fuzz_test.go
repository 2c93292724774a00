package annotio

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// FuzzAnnotations feeds arbitrary bytes to the annotation reader the way a
// run reads --annotations: Scan, then every unit. It must return an error
// or batches, never panic; every error names the file. .ci/fuzz.sh runs it
// for a bounded time; crashers kept under testdata/fuzz/FuzzAnnotations/
// run as regression cases.
func FuzzAnnotations(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed.parquet")
	writeTable(f, seed, []arrow.Field{fID, fAnn, fLabel}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 1, 2, 3}, nil)
		b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b", "a", "c"}, nil)
		b.Field(2).(*array.Int32Builder).AppendValues([]int32{0, 1, 1, 2}, nil)
	})
	b, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "ann.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		units, _, err := Scan(ctx, p, Options{Columns: DefaultColumns()})
		if err != nil {
			return
		}
		for _, u := range units {
			if _, err := ReadUnit(ctx, u, Options{Columns: DefaultColumns()}); err != nil {
				return
			}
		}
	})
}
