package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// synthRows makes n rows of dimension 4 with ids first..first+n-1 in three
// well separated clusters; the label is the cluster, so a run on it is quick
// and uneventful.
func synthRows(first int64, n int) *schemas.Rows {
	const d = 4
	r := &schemas.Rows{Offset: first, D: d, LabelOff: []int32{0}}
	for i := 0; i < n; i++ {
		id := first + int64(i)
		c := int32(id % 3)
		r.IDs = append(r.IDs, id)
		for j := 0; j < d; j++ {
			r.Features = append(r.Features, 10*float32(c)+float32((id*7+int64(j)*3)%11)/10)
		}
		r.Labels = append(r.Labels, c)
		r.LabelOff = append(r.LabelOff, int32(len(r.Labels)))
	}
	return r
}

// writeRows writes batches (one row group or record batch each) as an input
// shard with relabel's canonical writer.
func writeRows(t *testing.T, path string, kind schemas.LabelKind, names []string, batches ...*schemas.Rows) {
	t.Helper()
	format := shardio.Parquet
	if filepath.Ext(path) == ".arrow" {
		format = shardio.ArrowFile
	}
	if err := shardio.WriteInput(context.Background(), blobio.Local{}, path, format, batches, kind, names, nil); err != nil {
		t.Fatal(err)
	}
}

// writeJSON writes rows (JSON) of schema sc as a Parquet or Arrow IPC file
// with arrow-go directly, for inputs relabel's writer cannot make.
func writeJSON(t *testing.T, path string, sc *arrow.Schema, rows string) {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatalf("RecordFromJSON: %v", err)
	}
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if filepath.Ext(path) == ".arrow" {
		w, err := ipc.NewFileWriter(f, ipc.WithSchema(sc))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	w, err := pqarrow.NewFileWriter(sc, f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// jsonRows is n rows of a 4-dimensional input as JSON, with row bad replaced.
func jsonRows(n, bad int, badRow string) string {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		if i == bad {
			b.WriteString(badRow)
			continue
		}
		b.WriteString(`{"id": ` + itoa(i) + `, "features": [` + itoa(i%3) + `,1,2,3], "label": ` + itoa(i%3) + `}`)
	}
	b.WriteString("]")
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRunBadInput runs the binary on each kind of bad input of the data
// contract: it must exit 1 with exactly one error line on stderr that names
// the file, row and column where those exist (DIR stands for the input
// directory), and leave nothing in --output: no shard, no summary, no
// temporary directory. Some errors are found while planning, others only
// inside the pipeline (a DoFn reading a row group, the global duplicate
// check): both must reach the user as the same one line.
func TestRunBadInput(t *testing.T) {
	f32 := arrow.PrimitiveTypes.Float32
	id := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	fsl4 := arrow.Field{Name: "features", Type: arrow.FixedSizeListOf(4, f32)}
	list := arrow.Field{Name: "features", Type: arrow.ListOf(f32)}
	lab := arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	sch := func(f ...arrow.Field) *arrow.Schema { return arrow.NewSchema(f, nil) }
	withFeature := func(row, dim int, v float32) *schemas.Rows {
		r := synthRows(0, 60)
		r.Features[row*4+dim] = v
		return r
	}
	withID := func(r *schemas.Rows, row int, id int64) *schemas.Rows {
		r.IDs[row] = id
		return r
	}

	for _, tc := range []struct {
		name  string
		files func(t *testing.T, dir string)
		input string // glob relative to DIR
		args  []string
		want  string // the whole error line
	}{
		{"missing column", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, "a.parquet"), sch(id, lab), `[{"id": 0, "label": 0}]`)
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/a.parquet column "features": missing`},
		{"wrong column type", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, "a.arrow"), sch(id, fsl4, arrow.Field{Name: "label", Type: f32}),
				`[{"id": 0, "features": [1,2,3,4], "label": 0.5}]`)
		}, "*.arrow", nil,
			`relabel run: shardio: DIR/a.arrow column "label": type float32, want int32, int64, utf8, large_utf8 or dictionary<utf8>`},
		{"ragged feature dimension in a shard", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, "a.parquet"), sch(id, list, lab),
				jsonRows(50, 41, `{"id": 41, "features": [1,2,3], "label": 0}`))
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/a.parquet row 41 column "features": 3 values, want dimension 4`},
		{"ragged feature dimension across shards", func(t *testing.T, dir string) {
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, synthRows(0, 30))
			r := synthRows(30, 30)
			r.D, r.Features = 5, append(r.Features, make([]float32, 30)...)
			writeRows(t, filepath.Join(dir, "b.parquet"), schemas.LabelInt32, nil, r)
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/b.parquet column "features": dimension 5, want 4 (from DIR/a.parquet)`},
		{"NaN feature", func(t *testing.T, dir string) {
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, withFeature(17, 3, float32(math.NaN())))
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/a.parquet row 17 column "features": NaN at dimension 3`},
		{"Inf feature in the second row group", func(t *testing.T, dir string) {
			r := withFeature(45, 0, float32(math.Inf(1)))
			writeRows(t, filepath.Join(dir, "a.arrow"), schemas.LabelInt32, nil, sliceRows(r, 0, 30), sliceRows(r, 30, 60))
		}, "*.arrow", nil,
			`relabel run: shardio: DIR/a.arrow row 45 column "features": +Inf at dimension 0`},
		{"label out of range", func(t *testing.T, dir string) {
			r := synthRows(0, 60)
			r.Labels[9] = 7
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, r)
		}, "*.parquet", []string{"--classes", "3"},
			`relabel run: shardio: DIR/a.parquet row 9 column "label": label 7 outside [0,3) (--classes 3)`},
		{"label not in the class set", func(t *testing.T, dir string) {
			r := synthRows(0, 60)
			r.Labels[12] = 3
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelString, []string{"ant", "bee", "cat", "dog"}, r)
		}, "*.parquet", []string{"--class-names", "ant,bee,cat"},
			`relabel run: shardio: DIR/a.parquet row 12 column "label": label "dog" not in the class set (3 classes)`},
		{"duplicate id in a row group", func(t *testing.T, dir string) {
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, withID(synthRows(0, 60), 20, 3))
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/a.parquet row 20 column "id": duplicate id 3 (first at row 3)`},
		{"duplicate id across row groups", func(t *testing.T, dir string) {
			r := withID(synthRows(0, 60), 50, 8)
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, sliceRows(r, 0, 30), sliceRows(r, 30, 60))
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/a.parquet row 50 column "id": duplicate id 8 (first at row 8)`},
		{"duplicate id across shards", func(t *testing.T, dir string) {
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, synthRows(0, 30))
			writeRows(t, filepath.Join(dir, "b.parquet"), schemas.LabelInt32, nil, withID(synthRows(30, 30), 4, 11))
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/b.parquet row 4 column "id": duplicate id 11 (first at DIR/a.parquet row 11)`},
		{"empty glob", func(t *testing.T, dir string) {
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, synthRows(0, 30))
		}, "*.arrow", nil,
			`relabel run: shardio: no files match DIR/*.arrow`},
		{"empty file", func(t *testing.T, dir string) {
			writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, synthRows(0, 30))
			if err := os.WriteFile(filepath.Join(dir, "b.parquet"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/b.parquet: empty file (0 bytes)`},
		{"truncated file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "a.parquet")
			writeRows(t, p, schemas.LabelInt32, nil, synthRows(0, 60))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b[:len(b)/2], 0o644); err != nil {
				t.Fatal(err)
			}
		}, "*.parquet", nil,
			`relabel run: shardio: DIR/a.parquet: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // its own directories; two runs at once overlap their start-up
			dir := t.TempDir()
			tc.files(t, dir)
			out := filepath.Join(t.TempDir(), "out")
			r := relabel(t, append([]string{"run", "--input", filepath.Join(dir, tc.input), "--output", out}, tc.args...)...)
			if r.code != 1 {
				t.Errorf("exit status %d, want 1", r.code)
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			lines := errorLines(r.stderr)
			switch {
			case len(lines) != 1:
				t.Errorf("%d error lines on stderr, want 1:\n%s", len(lines), tail(r.stderr, 4000))
			case strings.HasSuffix(tc.want, ": ") && !strings.HasPrefix(lines[0], want):
				t.Errorf("error line\n got %s\nwant %s...", lines[0], want)
			case !strings.HasSuffix(tc.want, ": ") && lines[0] != want:
				t.Errorf("error line\n got %s\nwant %s", lines[0], want)
			}
			if l := lastLine(r.stderr); len(lines) == 1 && l != lines[0] {
				t.Errorf("last line of stderr is %q, want the error line", l)
			}
			if got := listDir(t, out); len(got) > 0 {
				t.Errorf("--output holds %q after a failed run, want nothing", got)
			}
		})
	}
}

// errorLines returns the lines of stderr that are not log records (Beam's
// log, prefixed by a timestamp "time=...", and relabel's progress lines,
// "relabel: ..."; its errors read "relabel run: ..."): what the
// program itself says about the failure. Prism also logs the failed bundle at
// level ERROR, with Beam's whole stage plan in one quoted record.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if l == "" || strings.HasPrefix(l, "time=") || strings.HasPrefix(l, "relabel: ") {
			continue
		}
		out = append(out, l)
	}
	return out
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// sliceRows returns rows [lo, hi) of r as a batch of its own.
func sliceRows(r *schemas.Rows, lo, hi int) *schemas.Rows {
	d := r.D
	out := &schemas.Rows{
		Shard: r.Shard, Offset: r.Offset + int64(lo), IDKind: r.IDKind, D: d, Multi: r.Multi,
		IDs:      append([]int64(nil), r.IDs[lo:hi]...),
		Features: append([]float32(nil), r.Features[lo*d:hi*d]...),
		Labels:   append([]int32(nil), r.Labels[r.LabelOff[lo]:r.LabelOff[hi]]...),
		LabelOff: []int32{0},
	}
	if r.StrIDs != nil {
		out.StrIDs = append([]string(nil), r.StrIDs[lo:hi]...)
	}
	for i := lo; i < hi; i++ {
		out.LabelOff = append(out.LabelOff, r.LabelOff[i+1]-r.LabelOff[lo])
	}
	return out
}

// TestRunOverwrite: a rerun into a finished output refuses without
// --overwrite (leaving the old output as it was) and replaces it with it.
func TestRunOverwrite(t *testing.T) {
	dir := t.TempDir()
	writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, synthRows(0, 60))
	in, out := filepath.Join(dir, "*.parquet"), filepath.Join(dir, "out")
	shard := filepath.Join(out, "a.arrow")
	mustRelabel(t, "run", "--input", in, "--output", out, "--rounds", "2")
	first, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}

	r := relabel(t, "run", "--input", in, "--output", out, "--rounds", "2", "--seed", "2")
	want := "relabel run: relabel: " + shard + " exists (pass --overwrite to replace it)"
	if lines := errorLines(r.stderr); r.code != 1 || len(lines) != 1 || lines[0] != want {
		t.Errorf("rerun without --overwrite: exit %d, error lines %q; want 1 and %q", r.code, lines, want)
	}
	if b, err := os.ReadFile(shard); err != nil || !bytes.Equal(b, first) {
		t.Errorf("rerun without --overwrite changed %s (err %v)", shard, err)
	}
	if got := listDir(t, out); !slices.Equal(got, []string{"a.arrow", "report.html", "summary.json"}) {
		t.Errorf("output after the refused rerun holds %q", got)
	}

	mustRelabel(t, "run", "--input", in, "--output", out, "--rounds", "2", "--seed", "2", "--overwrite")
	if got := listDir(t, out); !slices.Equal(got, []string{"a.arrow", "report.html", "summary.json"}) {
		t.Errorf("output after --overwrite holds %q", got)
	}
	o := readOutput(t, shard)
	if seed, _ := o.schema.Metadata().GetValue("relabel.seed"); seed != "2" {
		t.Errorf("after --overwrite %s records seed %q, want 2 (the new run's)", shard, seed)
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil || !bytes.Contains(sum, []byte(`"seed": "2"`)) {
		t.Errorf("after --overwrite summary.json does not record seed 2 (err %v)", err)
	}
}

// TestRunDeterminism: the same input and seed give byte-identical output
// files (Arrow and Parquet), and the same rows cut into other shards, row
// groups and formats, relabelled with one worker instead of all, give the
// same label and the same clean_prob bits for every id (the fitted
// temperature does not depend on the sharding).
func TestRunDeterminism(t *testing.T) {
	t.Run("Arrow, two runs", func(t *testing.T) {
		// The committed two-shard input, as TestCLITestdataShards runs it.
		a := outDir(t, "testdata-digits")
		sharedRun(t, "run", "--input", digitsShards, "--output", a)
		b := filepath.Join(t.TempDir(), "out")
		mustRelabel(t, "run", "--input", digitsShards, "--output", b)
		sameFiles(t, a, b, "noisy-idn-0.4-part-0000.arrow", "noisy-idn-0.4-part-0001.arrow")
	})

	// One shard of 899 digits in two row groups, and the same rows as three
	// Arrow files of 100-row record batches.
	part := "../../testdata/digits/noisy-idn-0.4-part-0000.parquet"
	rows := readAll(t, part)
	resharded := t.TempDir()
	for s, lo := 0, 0; lo < rows.Len(); s++ {
		hi := min(lo+300, rows.Len())
		var batches []*schemas.Rows
		for b := lo; b < hi; b += 100 {
			batches = append(batches, sliceRows(rows, b, min(b+100, hi)))
		}
		writeRows(t, filepath.Join(resharded, "s"+itoa(s)+".arrow"), schemas.LabelInt32, nil, batches...)
		lo = hi
	}

	pq := []string{"run", "--input", part, "--format", "parquet", "--classes", "10"}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	mustRelabel(t, append(pq, "--output", a)...)
	t.Run("Parquet, two runs", func(t *testing.T) {
		mustRelabel(t, append(pq, "--output", b)...)
		sameFiles(t, a, b, "noisy-idn-0.4-part-0000.parquet")
	})

	t.Run("other shards, one worker", func(t *testing.T) {
		c := filepath.Join(t.TempDir(), "c")
		mustRelabel(t, "run", "--input", filepath.Join(resharded, "*.arrow"), "--output", c, "--classes", "10", "--workers", "1")
		ref := readOutput(t, filepath.Join(a, "noisy-idn-0.4-part-0000.parquet"))
		if len(ref.ids) != rows.Len() {
			t.Fatalf("reference run wrote %d rows, want %d", len(ref.ids), rows.Len())
		}
		want := ref.byID()
		wantProb := make(map[int64]float32, len(ref.ids))
		for i, id := range ref.ids {
			wantProb[id] = ref.prob[i]
		}
		n, diff := 0, 0
		for _, name := range []string{"s0.arrow", "s1.arrow", "s2.arrow"} {
			o := readOutput(t, filepath.Join(c, name))
			for i, id := range o.ids {
				n++
				// clean_prob too, bit for bit: the fitted temperature
				// (--temperature auto) is the same whatever the sharding.
				if w, ok := want[id]; !ok || w != o.clean[i] || wantProb[id] != o.prob[i] {
					if diff < 5 {
						t.Errorf("%s id %d: clean_label %d (clean_prob %v), the one-shard run gave %d (%v, present %v)", name, id, o.clean[i], o.prob[i], w, wantProb[id], ok)
					}
					diff++
				}
			}
		}
		if n != len(want) || diff > 0 {
			t.Errorf("%d of %d labels differ; %d rows, want %d", diff, n, n, len(want))
		}
	})
}

// sameFiles checks that the named files of two output directories are
// byte-identical.
func sameFiles(t *testing.T, a, b string, names ...string) {
	t.Helper()
	for _, name := range names {
		x, err := os.ReadFile(filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			at := 0
			for at < min(len(x), len(y)) && x[at] == y[at] {
				at++
			}
			t.Errorf("%s differs between two runs with the same seed: %d and %d bytes, first difference at byte %d", name, len(x), len(y), at)
		}
	}
}

// readAll reads every unit of one input file into one batch.
func readAll(t *testing.T, path string) *schemas.Rows {
	t.Helper()
	ctx := context.Background()
	opts := shardio.ReadOptions{Classes: 10}
	shards, err := shardio.Scan(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	all := &schemas.Rows{LabelOff: []int32{0}}
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := shardio.ReadUnit(ctx, u, opts)
			if err != nil {
				t.Fatal(err)
			}
			all.D = r.D
			all.IDs = append(all.IDs, r.IDs...)
			all.Features = append(all.Features, r.Features...)
			base := int32(len(all.Labels))
			all.Labels = append(all.Labels, r.Labels...)
			for _, o := range r.LabelOff[1:] {
				all.LabelOff = append(all.LabelOff, base+o)
			}
		}
	}
	return all
}
