package shardio

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestInvalidUTF8Refused: a string id or a string label
// that is not UTF-8 is refused naming the file, the row and the column (the
// value shown escaped), so that no output string is invalid UTF-8.
func TestInvalidUTF8Refused(t *testing.T) {
	ctx := context.Background()
	feat := arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)
	for _, tc := range []struct {
		name      string
		ids, labs []string
		want      string
	}{
		{"id", []string{"a", "b", "c\xff"}, []string{"x", "y", "x"}, `row 2 column "id": id "c\xff" is not valid UTF-8`},
		{"label", []string{"a", "b", "c"}, []string{"x", "y\xfe\x1b[2J", "x"}, `row 1 column "label": label "y\xfe\x1b[2J" is not valid UTF-8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.BinaryTypes.String},
				{Name: "features", Type: feat},
				{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
			}, nil)
			b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
			defer b.Release()
			b.Field(0).(*array.StringBuilder).AppendValues(tc.ids, nil)
			fl := b.Field(1).(*array.FixedSizeListBuilder)
			for range tc.ids {
				fl.Append(true)
				fl.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{1, 2}, nil)
			}
			b.Field(2).(*array.StringBuilder).AppendValues(tc.labs, nil)
			rec := b.NewRecordBatch()
			defer rec.Release()
			path := filepath.Join(t.TempDir(), "bad.arrow")
			writeRecordFile(t, path, ArrowFile, rec)
			shards, err := Scan(ctx, path, ReadOptions{})
			if err == nil {
				_, err = ScanClassNames(ctx, shards, ReadOptions{})
			}
			if err == nil {
				_, _, err = readAll(ctx, path, ReadOptions{ClassNames: []string{"x", "y"}})
			}
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), path+" "+tc.want) {
				t.Errorf("error %v, want %q naming %s", err, tc.want, path)
			}
		})
	}
}

// TestInputDirNamed (target 6): --input naming a directory says so and
// shows the glob to give, instead of "no files match".
func TestInputDirNamed(t *testing.T) {
	dir := t.TempDir()
	_, err := Scan(context.Background(), dir, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), dir+" is a directory") || !strings.Contains(err.Error(), filepath.Join(dir, "*.parquet")) {
		t.Errorf("Scan(dir): %v, want a message naming the directory and a glob", err)
	}
}
