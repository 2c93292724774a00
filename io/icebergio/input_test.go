package icebergio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/relabel/relabel/io/icebergio/icebergiotest"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// inRow is one input row as relabel's readers see it.
type inRow struct {
	label int32
	f0    float32
}

// readPlanRows reads a plan's files with relabel's own readers, by the
// column names relabel reads, and returns the rows by id.
func readPlanRows(t *testing.T, p *InputPlan) map[int64]inRow {
	t.Helper()
	ctx := context.Background()
	opts := shardio.ReadOptions{Classes: 10}
	got := map[int64]inRow{}
	for _, task := range p.Tasks {
		shards, err := shardio.Scan(ctx, task.ReaderPath(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range shards[0].Units {
			r, err := shardio.ReadUnit(ctx, u, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range r.IDs {
				if _, dup := got[id]; dup {
					t.Fatalf("id %d read twice", id)
				}
				got[id] = inRow{r.Labels[r.LabelOff[i]], r.Features[i*r.D]}
			}
		}
	}
	return got
}

func wantRows(days ...*schemas.Rows) map[int64]inRow {
	want := map[int64]inRow{}
	for _, d := range days {
		for i, id := range d.IDs {
			want[id] = inRow{d.Labels[d.LabelOff[i]], d.Features[i*d.D]}
		}
	}
	return want
}

// TestPlanSchemaEvolution: a table whose writer called the label column
// "class", renamed to "label" after the first append (Iceberg keeps the
// field id; the first file still says "class"), with a column added after
// the second: the plan reads every row's label by field id.
func TestPlanSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	cat, _ := newLake(t)
	old := arrow.NewSchema([]arrow.Field{inputSchema.Field(0), inputSchema.Field(1),
		{Name: "class", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(old, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Iceberg().CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.Iceberg().CreateTable(ctx, catalog.ToIdentifier("ns.items"), sc)
	if err != nil {
		t.Fatal(err)
	}
	rec := icebergiotest.Record(days[0])
	at := array.NewTableFromRecords(old, []arrow.RecordBatch{array.NewRecordBatch(old, rec.Columns(), rec.NumRows())})
	if tbl, err = tbl.AppendTable(ctx, at, 1<<16, nil); err != nil {
		t.Fatal(err)
	}
	at.Release()
	rec.Release()

	// Before the rename, nothing needs the scanner.
	p, err := cat.PlanInput(ctx, "ns.items")
	if err != nil {
		t.Fatal(err)
	}
	if p.Tasks[0].Scanned != "" {
		t.Errorf("a table with one schema: %s read through the scanner", p.Tasks[0].Path)
	}

	rename := func(tbl *table.Table, f func(*table.UpdateSchema)) *table.Table {
		txn := tbl.NewTransaction()
		u := txn.UpdateSchema(true, false)
		f(u)
		if err := u.Commit(); err != nil {
			t.Fatal(err)
		}
		tbl, err := txn.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	tbl = rename(tbl, func(u *table.UpdateSchema) { u.RenameColumn([]string{"class"}, schemas.ColLabel) })
	tbl = appendDay(t, tbl, days[1])
	tbl = rename(tbl, func(u *table.UpdateSchema) {
		u.AddColumn([]string{"source"}, iceberg.PrimitiveTypes.String, "", false, nil)
	})

	p, err = cat.PlanInput(ctx, "ns.items")
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range p.Tasks {
		if tk.Scanned == "" {
			t.Errorf("%s: read by name after a rename", tk.Path)
		}
	}
	checkRows(t, "after a rename and an added column", readPlanRows(t, p), wantRows(days[0], days[1]))

	// An incremental plan of the same catalog and snapshot names the same
	// files, so a run can tell the appended ones among the full plan's.
	inc, err := cat.PlanAppendedSince(ctx, "ns.items", firstSnapshot(tbl))
	if err != nil {
		t.Fatal(err)
	}
	if len(inc.Tasks) != 1 || !slices.ContainsFunc(p.Tasks, func(x Task) bool { return x.ReaderPath() == inc.Tasks[0].ReaderPath() }) {
		t.Errorf("incremental plan %+v: want one of the full plan's files", inc.Tasks)
	}
	// Close removes the scratch files.
	scanned := p.Tasks[0].Scanned
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(scanned); !os.IsNotExist(err) {
		t.Errorf("after Close, %s: %v, want it removed", scanned, err)
	}
}

// firstSnapshot returns tbl's first snapshot (the one holding day 0).
func firstSnapshot(tbl *table.Table) int64 {
	var first int64
	for _, s := range tbl.Metadata().Snapshots() {
		if s.ParentSnapshotID == nil {
			first = s.SnapshotID
		}
	}
	return first
}

// TestPlanPartitioned: a table partitioned by label (identity) and one by a
// bucket of the id are read whole, every row once.
func TestPlanPartitioned(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	for _, tc := range []struct {
		name string
		spec func(sc *iceberg.Schema) iceberg.PartitionSpec
	}{
		{"identity", func(sc *iceberg.Schema) iceberg.PartitionSpec {
			f, _ := sc.FindFieldByName(schemas.ColLabel)
			return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000, Name: "label", Transform: iceberg.IdentityTransform{}})
		}},
		{"bucket", func(sc *iceberg.Schema) iceberg.PartitionSpec {
			f, _ := sc.FindFieldByName(schemas.ColID)
			return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat, _ := newLake(t)
			sc, err := table.ArrowSchemaToIcebergWithFreshIDs(inputSchema, false)
			if err != nil {
				t.Fatal(err)
			}
			spec := tc.spec(sc)
			createInputWith(t, cat, days[:2], catalog.WithPartitionSpec(&spec))
			p, err := cat.PlanInput(ctx, "ns.items")
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Tasks) < 4 {
				t.Errorf("%d data files: the table is not partitioned as the test means", len(p.Tasks))
			}
			checkRows(t, tc.name+" partitioned", readPlanRows(t, p), wantRows(days[0], days[1]))
		})
	}
}

// TestPlanOrderByContent: two lakes holding the same rows in files named in
// opposite orders plan their files in the same order, by content.
func TestPlanOrderByContent(t *testing.T) {
	ctx := context.Background()
	days := digitsDays(t)
	var orders [2][]int64
	for lake, names := range [2][2]string{{"a.parquet", "b.parquet"}, {"b.parquet", "a.parquet"}} {
		cat, dir := newLake(t)
		createInput(t, cat, nil)
		tbl, err := cat.LoadTable(ctx, "ns.items")
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for d, name := range names {
			path := filepath.Join(dir, "files", name)
			writeInputFile(t, path, days[d])
			files = append(files, "file://"+filepath.ToSlash(path))
		}
		txn := tbl.NewTransaction()
		if err := txn.AddFiles(ctx, files, nil, false); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := cat.PlanInput(ctx, "ns.items")
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range p.Tasks {
			ids := readPlanRows(t, &InputPlan{Tasks: []Task{tk}})
			orders[lake] = append(orders[lake], slices.Min(slices.Collect(mapsKeys(ids))))
		}
	}
	if !slices.Equal(orders[0], orders[1]) {
		t.Errorf("the same rows in files named otherwise are planned in another order: first ids %v vs %v", orders[0], orders[1])
	}
}

func mapsKeys(m map[int64]inRow) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// writeInputFile writes rows as a Parquet file with the input table's
// columns, as another writer would before adding it to the table.
func writeInputFile(t *testing.T, path string, d *schemas.Rows) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := icebergiotest.Record(d)
	defer rec.Release()
	w, err := pqarrow.NewFileWriter(inputSchema, f, nil, pqarrow.DefaultWriterProps())
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

// TestContentOrderWithoutBounds: files whose manifests record no column
// bounds and the same row count (a writer that keeps no statistics) are
// ordered by their bytes, whatever their names.
func TestContentOrderWithoutBounds(t *testing.T) {
	dir := t.TempDir()
	days := digitsDays(t)
	// The same two contents under names in both orders.
	var firsts [2][]string
	for k, names := range [2][2]string{{"a.parquet", "b.parquet"}, {"b.parquet", "a.parquet"}} {
		var tasks []table.FileScanTask
		for d, name := range names {
			p := filepath.Join(dir, fmt.Sprint(k), name)
			writeInputFile(t, p, days[d*2]) // days 0 and 2: 512 rows each
			b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "file://"+p, iceberg.ParquetFile, nil, nil, nil, 512, 1)
			if err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, table.FileScanTask{File: b.Build()})
		}
		// Listed by name, as a catalog might list them.
		slices.SortFunc(tasks, func(a, b table.FileScanTask) int { return strings.Compare(a.File.FilePath(), b.File.FilePath()) })
		order, err := contentOrder(context.Background(), tasks)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range order {
			ids := readPlanRows(t, &InputPlan{Tasks: []Task{{Path: tasks[i].File.FilePath()}}})
			firsts[k] = append(firsts[k], fmt.Sprint(slices.Min(slices.Collect(mapsKeys(ids)))))
		}
	}
	if !slices.Equal(firsts[0], firsts[1]) {
		t.Errorf("files without statistics ordered by name: first ids %v vs %v", firsts[0], firsts[1])
	}
}
