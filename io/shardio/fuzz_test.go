package shardio

import (
	"bytes"
	"context"
	"flag"
	"fmt"
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

// The fuzz targets feed arbitrary bytes to each reader: Scan, the label scans
// and ReadUnit must return an error or rows, never panic, hang or allocate
// beyond what the file could hold. CI runs each for a bounded time
// (.ci/fuzz.sh); crashers found are kept under testdata/fuzz/<Name>/, where
// go test runs them as regression cases.

// addSeeds adds the committed files matching each glob (relative to this
// package) to f's corpus.
func addSeeds(f *testing.F, globs ...string) {
	n := 0
	for _, g := range globs {
		paths, err := filepath.Glob(g)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			n++
		}
	}
	if n == 0 {
		f.Logf("no seed files match %v (run go test -run TestFuzzSeeds -update-seeds)", globs)
	}
}

// fuzzRead writes b to a file and reads it the way a run does: Scan, the
// class set, then every unit. With a checked allocator, every Arrow buffer
// must be released, error or not.
func fuzzRead(t *testing.T, b []byte) {
	dir := t.TempDir()
	p := filepath.Join(dir, "shard")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	failed := false
	defer func() {
		// A read that succeeded releases everything. On some error paths
		// arrow-go v18.8 does not release what it allocated (a message
		// buffer in ipc's fileBlock.NewMessage:
		// testdata/fuzz/FuzzArrowFile/2873bcc5243159e5); relabel's
		// allocator is Go's, so the garbage collector takes it, and it
		// must stay small: bounded, not zero.
		if !failed {
			mem.AssertSize(t, 0)
		} else if n := mem.CurrentAlloc(); n > 1<<20 {
			t.Fatalf("%d bytes left allocated after a failed read", n)
		}
	}()
	opts := ReadOptions{Mem: mem}
	shards, err := Scan(ctx, p, opts)
	if err != nil {
		failed = true
		mustName(t, err, p)
		return
	}
	if shards[0].Input.LabelKind == schemas.LabelString {
		opts.ClassNames, err = ScanClassNames(ctx, shards, opts)
	} else {
		opts.Classes, err = ScanNumClasses(ctx, shards, opts)
	}
	if err != nil {
		failed = true
		return // for example all labels null: no class set
	}
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := ReadUnit(ctx, u, opts)
			if err != nil {
				failed = true
				mustName(t, err, p)
				continue
			}
			if err := r.Validate(); err != nil {
				t.Fatalf("ReadUnit gave inconsistent rows: %v", err)
			}
		}
	}
}

// mustName fails unless err names the file.
func mustName(t *testing.T, err error, path string) {
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("error does not name the file: %v", err)
	}
}

func FuzzParquet(f *testing.F) {
	addSeeds(f, "../../testdata/digits/*.parquet", "testdata/*.parquet")
	f.Fuzz(fuzzRead)
}

func FuzzArrowFile(f *testing.F) {
	addSeeds(f, "testdata/*.arrow")
	f.Fuzz(fuzzRead)
}

func FuzzArrowStream(f *testing.F) {
	addSeeds(f, "testdata/*.arrows")
	f.Fuzz(fuzzRead)
}

// fuzzSchemas are the input layouts FuzzColumns decodes JSON rows into: every
// accepted type of each column.
var fuzzSchemas = func() []*arrow.Schema {
	f32, f64 := arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64
	ids := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString}
	feats := []arrow.DataType{arrow.FixedSizeListOf(2, f32), arrow.ListOf(f32), arrow.LargeListOf(f64), arrow.FixedSizeListOf(3, f64)}
	labels := []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String,
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}}
	var out []*arrow.Schema
	for _, id := range ids {
		for _, ft := range feats {
			for _, lt := range labels {
				for _, multi := range []bool{false, true} {
					lab := arrow.Field{Name: "label", Type: lt, Nullable: true}
					if multi {
						lab = arrow.Field{Name: "labels", Type: arrow.ListOf(lt), Nullable: true}
					}
					out = append(out, arrow.NewSchema([]arrow.Field{
						{Name: "id", Type: id, Nullable: true}, {Name: "features", Type: ft, Nullable: true}, lab}, nil))
				}
			}
		}
	}
	return out
}()

// FuzzColumns fuzzes the input-column decoders (ids, features, labels) on
// records of every accepted layout built from JSON rows.
func FuzzColumns(f *testing.F) {
	f.Add(uint8(0), `[{"id": 1, "features": [1, 2], "label": 0}, {"id": 2, "features": [3, 4], "label": null}]`)
	f.Add(uint8(3), `[{"id": 1, "features": [1, 2], "labels": [null, 1]}, {"id": 2, "features": [1, 2], "labels": []}]`)
	f.Add(uint8(13), `[{"id": "a", "features": [1, 2, 3], "label": "x"}]`)
	f.Add(uint8(21), `[{"id": "a", "features": [1e300, 2], "labels": ["x", null]}, {"id": "a", "features": null, "labels": null}]`)
	f.Fuzz(func(t *testing.T, which uint8, rows string) {
		sc := fuzzSchemas[int(which)%len(fuzzSchemas)]
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rec, err := recordFromJSON(mem, sc, rows)
		if err != nil {
			return // not a record of this schema: nothing for the decoders
		}
		defer mem.AssertSize(t, 0)
		defer rec.Release()
		in, err := schemas.ResolveInput(sc, schemas.Columns{})
		if err != nil {
			t.Fatalf("schema %v: %v", sc, err)
		}
		u := Unit{Path: "fuzz", Offset: 100}
		n := rec.NumRows()
		r := &schemas.Rows{IDKind: in.IDKind, Multi: in.Multi}
		if err := readIDs(r, u, in, []arrow.Array{rec.Column(in.ID)}, n); err != nil {
			return
		}
		if err := readFeatures(r, u, in, []arrow.Array{rec.Column(in.Features)}, n, in.D); err != nil {
			return
		}
		opts := &ReadOptions{Classes: 3, ClassNames: []string{"x", "y", "z"}}
		m, err := newClassMap("fuzz", in, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := readLabels(r, u, in, []arrow.Array{rec.Column(in.Label)}, n, m); err != nil {
			return
		}
		if n > 0 {
			if err := r.Validate(); err != nil {
				t.Fatalf("decoded rows inconsistent: %v", err)
			}
		}
	})
}

// recordFromJSON builds the fuzz target's input record. arrow-go's
// RecordFromJSON panics on some malformed JSON (a number where a string
// should be: testdata/fuzz/FuzzColumns/ceafa6227315ae06); that is the input
// generator failing, not relabel's decoders, so it counts as no input.
func recordFromJSON(mem memory.Allocator, sc *arrow.Schema, rows string) (rec arrow.RecordBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			rec, err = nil, fmt.Errorf("arrow-go RecordFromJSON panicked: %v", r)
		}
	}()
	rec, _, err = array.RecordFromJSON(mem, sc, strings.NewReader(rows))
	return rec, err
}

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the fuzz seed files in testdata/")

// TestFuzzSeeds keeps the committed seed files in step with the writer:
// each is what WriteInput writes now (rewrite them with -update-seeds).
func TestFuzzSeeds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	names := []string{"a", "b", "c"}
	for _, s := range []struct {
		name   string
		format Format
		id     schemas.IDKind
		label  schemas.LabelKind
		multi  bool
	}{
		{"int.arrow", ArrowFile, schemas.IDInt64, schemas.LabelInt32, false},
		{"str-multi.arrow", ArrowFile, schemas.IDString, schemas.LabelString, true},
		{"int.arrows", ArrowStream, schemas.IDInt64, schemas.LabelInt64, false},
		{"str-multi.arrows", ArrowStream, schemas.IDString, schemas.LabelString, true},
		{"str-multi.parquet", Parquet, schemas.IDString, schemas.LabelString, true},
	} {
		var lnames []string
		if s.label == schemas.LabelString {
			lnames = names
		}
		p := filepath.Join(dir, s.name)
		rows := []*schemas.Rows{synth(0, 4, 3, 3, s.id, s.multi), synth(4, 3, 3, 3, s.id, s.multi)}
		if err := WriteInput(ctx, blobio.Local{}, p, s.format, rows, s.label, lnames, nil); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		committed := filepath.Join("testdata", s.name)
		if *updateSeeds {
			if err := os.WriteFile(committed, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(committed)
		if err != nil {
			t.Fatalf("%v (run go test -run TestFuzzSeeds -update-seeds)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what WriteInput writes now (run go test -run TestFuzzSeeds -update-seeds)", committed)
		}
	}
}
