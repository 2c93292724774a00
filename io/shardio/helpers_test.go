package shardio

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// sharedData is ../shared/data seen from this package; tests that read it
// skip when it is absent (a checkout without the development data).
const sharedData = "../../../shared/data"

func needShared(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(sharedData, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("development data absent (%v): this test reads ../shared/data", err)
	}
	return p
}

// writeRecords writes recs as one file of format (one row group or record
// batch each).
func writeRecordFile(t *testing.T, path string, format Format, recs ...arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sink, err := newSink(struct{ io.Writer }{f}, format, recs[0].Schema(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := sink.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
}

// jsonRecord builds a record of schema sc from JSON rows.
func jsonRecord(t *testing.T, sc *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatalf("RecordFromJSON: %v", err)
	}
	t.Cleanup(rec.Release)
	return rec
}

// synth makes n rows of dimension d with ids first..first+n-1 (or their
// decimal strings), labels i mod c, features i + j/10.
func synth(first int64, n, d, c int, idKind schemas.IDKind, multi bool) *schemas.Rows {
	r := &schemas.Rows{Offset: first, IDKind: idKind, D: d, Multi: multi, LabelOff: []int32{0}}
	for i := 0; i < n; i++ {
		id := first + int64(i)
		if idKind == schemas.IDString {
			s := "id-" + itoa(id)
			r.StrIDs = append(r.StrIDs, s)
			r.IDs = append(r.IDs, schemas.Key(s))
		} else {
			r.IDs = append(r.IDs, id)
		}
		for j := 0; j < d; j++ {
			r.Features = append(r.Features, float32(id)+float32(j)/10)
		}
		switch {
		case !multi && id%7 == 3:
			r.Labels = append(r.Labels, schemas.Unlabelled)
		case !multi:
			r.Labels = append(r.Labels, int32(id)%int32(c))
		default:
			// 0 to 2 annotations.
			for k := int64(0); k < id%3; k++ {
				r.Labels = append(r.Labels, int32(id+k)%int32(c))
			}
		}
		r.LabelOff = append(r.LabelOff, int32(len(r.Labels)))
	}
	return r
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

// readAll scans pattern and reads every unit.
func readAll(ctx context.Context, pattern string, opts ReadOptions) ([]Shard, []*schemas.Rows, error) {
	shards, err := Scan(ctx, pattern, opts)
	if err != nil {
		return nil, nil, err
	}
	var out []*schemas.Rows
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := ReadUnit(ctx, u, opts)
			if err != nil {
				return shards, out, err
			}
			out = append(out, r)
		}
	}
	return shards, out, nil
}

var _ blobio.FS = blobio.Local{}
