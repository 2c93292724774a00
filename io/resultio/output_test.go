package resultio

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// cleaned builds n rows of output, ids from first, with given labels (one
// per row, or two annotations when multi; row 1 unlabelled) of c classes.
func cleaned(first int64, n, c int, multi bool) *schemas.Cleaned {
	b := &schemas.Cleaned{IDKind: schemas.IDInt64, Multi: multi, LabelOff: []int32{0}, PostOff: []int32{0}}
	for i := range n {
		id := first + int64(i)
		b.IDs = append(b.IDs, id)
		switch {
		case i == 1 && !multi:
			b.Labels = append(b.Labels, schemas.Unlabelled)
		case i != 1:
			b.Labels = append(b.Labels, int32(id)%int32(c))
			if multi {
				b.Labels = append(b.Labels, int32(id+1)%int32(c))
			}
		}
		b.LabelOff = append(b.LabelOff, int32(len(b.Labels)))
		clean := int32(id+int64(i%2)) % int32(c)
		b.CleanLabel = append(b.CleanLabel, clean)
		b.CleanProb = append(b.CleanProb, 0.5+float32(i)/float32(4*n))
		gp := float32(i) / float32(2*n)
		if i == 1 {
			gp = float32(math.NaN())
		}
		b.GivenProb = append(b.GivenProb, gp)
		b.Changed = append(b.Changed, i != 1 && clean != int32(id)%int32(c))
		b.PostClass = append(b.PostClass, clean)
		b.PostProb = append(b.PostProb, b.CleanProb[i])
		b.PostOff = append(b.PostOff, int32(len(b.PostClass)))
	}
	return b
}

// writeOutput writes batches as the output shard name of dir.
func writeOutput(t *testing.T, dir, name string, format shardio.Format, kind schemas.LabelKind, names []string, c int, batches ...*schemas.Cleaned) {
	t.Helper()
	meta := schemas.Metadata("test", 1, map[string]string{"classes": "0"}, names)
	if names == nil {
		meta = schemas.Metadata("test", 1, map[string]string{"classes": itoa(c)}, nil)
	}
	if err := shardio.WriteShard(context.Background(), blobio.Local{}, filepath.Join(dir, name), format, batches, meta, kind, names, schemas.IDInt64, nil); err != nil {
		t.Fatal(err)
	}
}

func itoa(v int) string { return string(rune('0' + v)) }

func TestReadOutput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		multi  bool
		kind   schemas.LabelKind
		names  []string
		format shardio.Format
	}{
		{"int labels, arrow", false, schemas.LabelInt32, nil, shardio.ArrowFile},
		{"int64 annotations, parquet", true, schemas.LabelInt64, nil, shardio.Parquet},
		{"string labels, parquet", false, schemas.LabelString, []string{"ant", "bee", "cat"}, shardio.Parquet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			dir := t.TempDir()
			a, b := cleaned(0, 5, 3, tc.multi), cleaned(5, 4, 3, tc.multi)
			writeOutput(t, dir, "part-0"+tc.format.Ext(), tc.format, tc.kind, tc.names, 3, a)
			writeOutput(t, dir, "part-1"+tc.format.Ext(), tc.format, tc.kind, tc.names, 3, b)
			o, err := ReadOutput(context.Background(), dir, mem)
			if err != nil {
				t.Fatal(err)
			}
			if o.Len() != 9 || len(o.Paths) != 2 || o.Multi != tc.multi || o.Classes != 3 || !slices.Equal(o.ClassNames, tc.names) || o.StrIDs != nil {
				t.Fatalf("%d rows, paths %q, multi %v, %d classes, names %q, str ids %v", o.Len(), o.Paths, o.Multi, o.Classes, o.ClassNames, o.StrIDs)
			}
			var want schemas.Cleaned
			for _, c := range []*schemas.Cleaned{a, b} {
				want.IDs = append(want.IDs, c.IDs...)
				want.CleanLabel = append(want.CleanLabel, c.CleanLabel...)
				want.CleanProb = append(want.CleanProb, c.CleanProb...)
				want.Changed = append(want.Changed, c.Changed...)
			}
			if !slices.Equal(o.IDs, want.IDs) || !slices.Equal(o.Clean, want.CleanLabel) || !slices.Equal(o.CleanProb, want.CleanProb) || !slices.Equal(o.Changed, want.Changed) {
				t.Errorf("read ids %v clean %v prob %v changed %v\nwant %v %v %v %v", o.IDs, o.Clean, o.CleanProb, o.Changed, want.IDs, want.CleanLabel, want.CleanProb, want.Changed)
			}
			for i := range o.Len() {
				src, j := a, i
				if i >= 5 {
					src, j = b, i-5
				}
				got := o.Given[o.GivenOff[i]:o.GivenOff[i+1]]
				w := slices.DeleteFunc(slices.Clone(src.Labels[src.LabelOff[j]:src.LabelOff[j+1]]), func(l int32) bool { return l < 0 })
				if !slices.Equal(got, w) {
					t.Errorf("row %d: given %v, want %v", i, got, w)
				}
				if gp, w := o.GivenProb[i], src.GivenProb[j]; gp != w && !(math.IsNaN(float64(gp)) && math.IsNaN(float64(w))) {
					t.Errorf("row %d: given prob %v, want %v", i, gp, w)
				}
			}
		})
	}
}

func TestReadOutputErrors(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	empty := t.TempDir()
	if _, err := ReadOutput(ctx, empty, mem); err == nil || !strings.Contains(err.Error(), "no output shards") {
		t.Errorf("empty dir: %v, want no output shards", err)
	}

	// An input shard is no output.
	input := t.TempDir()
	r := &schemas.Rows{IDs: []int64{0, 1}, D: 1, Features: []float32{0, 1}, Labels: []int32{0, 1}, LabelOff: []int32{0, 1, 2}}
	if err := shardio.WriteInput(ctx, blobio.Local{}, filepath.Join(input, "in.parquet"), shardio.Parquet, []*schemas.Rows{r}, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOutput(ctx, input, mem); err == nil || !strings.Contains(err.Error(), "not an output of relabel run") || !strings.Contains(err.Error(), "in.parquet") {
		t.Errorf("input dir: %v, want not an output of relabel run naming in.parquet", err)
	}

	// Shards of two runs with other class sets.
	mixed := t.TempDir()
	writeOutput(t, mixed, "a.parquet", shardio.Parquet, schemas.LabelString, []string{"ant", "bee", "cat"}, 3, cleaned(0, 3, 3, false))
	writeOutput(t, mixed, "b.parquet", shardio.Parquet, schemas.LabelString, []string{"ant", "bee", "cow"}, 3, cleaned(3, 3, 3, false))
	if _, err := ReadOutput(ctx, mixed, mem); err == nil || !strings.Contains(err.Error(), "other class names") {
		t.Errorf("mixed class names: %v, want other class names", err)
	}

	// Not Arrow or Parquet at all.
	junk := t.TempDir()
	if err := os.WriteFile(filepath.Join(junk, "x.arrow"), []byte("hello, world"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOutput(ctx, junk, mem); err == nil || !strings.Contains(err.Error(), "not Parquet (PAR1) nor Arrow IPC") {
		t.Errorf("junk: %v, want not Parquet nor Arrow IPC", err)
	}
}

func TestReadTruth(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()

	// .i32: ids 0..n-1.
	i32 := filepath.Join(dir, "t.i32")
	if err := WriteI32(ctx, i32, []int32{2, 0, 1}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTruth(ctx, i32, TruthOptions{Mem: mem})
	if err != nil || !reflect.DeepEqual(got, &Truth{Path: i32, IDs: []int64{0, 1, 2}, Labels: []int32{2, 0, 1}}) {
		t.Errorf(".i32: %+v, %v", got, err)
	}
	if _, err := ReadTruth(ctx, i32, TruthOptions{ClassNames: []string{"a", "b"}}); err == nil || !strings.Contains(err.Error(), "label of id 0 is 2, outside the class set") {
		t.Errorf(".i32 against 2 class names: %v", err)
	}
	for _, tc := range []struct {
		name string
		o    TruthOptions
		msg  string
	}{
		{"too few rows", TruthOptions{Rows: 4}, "3 labels, want 4"},
		{"too few classes", TruthOptions{Classes: 2}, "label 0: 2 outside [0,2)"},
	} {
		if _, err := ReadTruth(ctx, i32, tc.o); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf(".i32 %s: %v, want %q", tc.name, err, tc.msg)
		}
	}
	if _, err := ReadTruth(ctx, i32, TruthOptions{Rows: 3, Classes: 3}); err != nil {
		t.Errorf(".i32 with 3 rows of 3 classes: %v", err)
	}

	// A clean input file with string ids and labels; a null label is -1.
	names := []string{"ant", "bee", "cat"}
	r := &schemas.Rows{IDKind: schemas.IDString, StrIDs: []string{"x", "y", "z"}, IDs: []int64{schemas.Key("x"), schemas.Key("y"), schemas.Key("z")},
		D: 1, Features: []float32{0, 1, 2}, Labels: []int32{2, schemas.Unlabelled, 0}, LabelOff: []int32{0, 1, 2, 3}}
	arrowPath := filepath.Join(dir, "clean.arrow")
	if err := shardio.WriteInput(ctx, blobio.Local{}, arrowPath, shardio.ArrowFile, []*schemas.Rows{r}, schemas.LabelString, names, nil); err != nil {
		t.Fatal(err)
	}
	got, err = ReadTruth(ctx, arrowPath, TruthOptions{ClassNames: names, Mem: mem})
	if err != nil || !reflect.DeepEqual(got, &Truth{Path: arrowPath, StrIDs: []string{"x", "y", "z"}, Labels: []int32{2, -1, 0}}) {
		t.Errorf("arrow truth: %+v, %v", got, err)
	}
	// ByID leaves the null label out and keys string ids as strings.
	if by, err := got.ByID(); err != nil || !reflect.DeepEqual(by, map[Key]int32{{Str: "x", IsStr: true}: 2, {Str: "z", IsStr: true}: 0}) {
		t.Errorf("arrow truth by id: %v, %v", by, err)
	}
	dup := &Truth{Path: "d.i32", IDs: []int64{4, 5, 4}, Labels: []int32{0, 1, 1}}
	if _, err := dup.ByID(); err == nil || !strings.Contains(err.Error(), "d.i32 row 2: id 4 repeated") {
		t.Errorf("repeated id: %v, want row 2: id 4 repeated", err)
	}
	for _, tc := range []struct {
		name string
		o    TruthOptions
		msg  string
	}{
		{"integer classes", TruthOptions{Mem: mem}, "string label \"cat\", but the labels are integers"},
		{"missing id column", TruthOptions{IDColumn: "key", ClassNames: names, Mem: mem}, `no id column "key"`},
		{"missing label column", TruthOptions{LabelColumn: "y", ClassNames: names, Mem: mem}, `no label column "y"`},
		{"unknown class", TruthOptions{ClassNames: []string{"ant", "bee"}, Mem: mem}, `label "cat" not in the class set`},
	} {
		if _, err := ReadTruth(ctx, arrowPath, tc.o); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.msg)
		}
	}
}
