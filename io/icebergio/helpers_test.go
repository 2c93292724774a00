package icebergio

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/icebergio/icebergiotest"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

const digitsGlob = "../../testdata/digits/noisy-idn-0.4-part-*.parquet"

// digitsDays reads the committed digits slice as its four units (row groups
// of 512, 387, 512 and 386 rows): the four "daily" appends of the tests.
func digitsDays(t *testing.T) []*schemas.Rows {
	t.Helper()
	days := icebergiotest.Units(t, digitsGlob, 10)
	if len(days) != 4 {
		t.Fatalf("digits: %d units, want 4", len(days))
	}
	return days
}

// inputSchema is the input table's Arrow schema (icebergiotest's).
var inputSchema = icebergiotest.Schema

// newLake opens a SQLite catalog with a local warehouse in a temporary
// directory.
func newLake(t *testing.T) (*Catalog, string) {
	t.Helper()
	dir := t.TempDir()
	cat, err := OpenCatalog(context.Background(), "sqlite://"+filepath.Join(dir, "lake", "catalog.db"), CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cat.Close(); err != nil {
			t.Error(err)
		}
	})
	return cat, dir
}

// createInput creates the input table ns.items and appends the given days,
// one snapshot each, returning the snapshot ids.
func createInput(t *testing.T, cat *Catalog, days []*schemas.Rows) []int64 {
	t.Helper()
	return createInputWith(t, cat, days)
}

// createInputWith is createInput with catalog options for the table (its
// properties, its partitioning).
func createInputWith(t *testing.T, cat *Catalog, days []*schemas.Rows, opts ...catalog.CreateTableOpt) []int64 {
	t.Helper()
	tbl := icebergiotest.CreateTable(t, cat.Iceberg(), "ns.items", opts...)
	var snaps []int64
	for _, d := range days {
		tbl = appendDay(t, tbl, d)
		snaps = append(snaps, tbl.CurrentSnapshot().SnapshotID)
	}
	return snaps
}

func appendDay(t *testing.T, tbl *table.Table, d *schemas.Rows) *table.Table {
	return icebergiotest.Append(t, tbl, d)
}

// readTasks reads a plan's files with relabel's own readers, as workers
// would, and returns the ids in file order.
func readTasks(t *testing.T, p *InputPlan) []int64 {
	t.Helper()
	ctx := context.Background()
	opts := shardio.ReadOptions{Classes: 10}
	var ids []int64
	for _, task := range p.Tasks {
		shards, err := shardio.Scan(ctx, task.ReaderPath(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(shards) != 1 || shards[0].Rows != task.Rows {
			t.Fatalf("%s: %d shards, rows %d, want 1 shard of %d rows", task.Path, len(shards), shards[0].Rows, task.Rows)
		}
		for _, u := range shards[0].Units {
			r, err := shardio.ReadUnit(ctx, u, opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.D != 64 {
				t.Fatalf("%s: d = %d, want 64", task.Path, r.D)
			}
			ids = append(ids, r.IDs...)
		}
	}
	return ids
}

// cleaned makes deterministic fake output rows for input rows: clean label
// (label + shift) mod 10, probabilities from the id, so that two "runs" with
// different shifts write different values for the same ids.
func cleaned(r *schemas.Rows, shift int32) *schemas.Cleaned {
	n := r.Len()
	c := &schemas.Cleaned{
		Shard: r.Shard, Offset: r.Offset, IDKind: r.IDKind,
		IDs:    slices.Clone(r.IDs),
		Labels: slices.Clone(r.Labels), LabelOff: slices.Clone(r.LabelOff),
		CleanLabel: make([]int32, n), CleanProb: make([]float32, n), GivenProb: make([]float32, n),
		Changed: make([]bool, n), PostOff: make([]int32, n+1),
	}
	for i := range n {
		given := r.Labels[r.LabelOff[i]]
		c.CleanLabel[i] = (given + shift) % 10
		c.CleanProb[i] = 0.5 + float32(r.IDs[i]%50)/100
		c.GivenProb[i] = 1 - c.CleanProb[i]
		if shift == 0 {
			c.GivenProb[i] = c.CleanProb[i]
		}
		c.Changed[i] = c.CleanLabel[i] != given
		c.PostClass = append(c.PostClass, c.CleanLabel[i], (c.CleanLabel[i]+1)%10)
		c.PostProb = append(c.PostProb, c.CleanProb[i], 1-c.CleanProb[i])
		c.PostOff[i+1] = int32(len(c.PostClass))
	}
	return c
}

var outSchema = schemas.OutputSchema(schemas.IDInt64, schemas.LabelInt32, false, nil)

// outputRecord builds the output Arrow record of c, as relabel's output
// shards lay it out.
func outputRecord(c *schemas.Cleaned) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, outSchema)
	defer b.Release()
	post := b.Field(6).(*array.ListBuilder)
	st := post.ValueBuilder().(*array.StructBuilder)
	for i, id := range c.IDs {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Int32Builder).Append(c.Labels[c.LabelOff[i]])
		b.Field(2).(*array.Int32Builder).Append(c.CleanLabel[i])
		b.Field(3).(*array.Float32Builder).Append(c.CleanProb[i])
		b.Field(4).(*array.Float32Builder).Append(c.GivenProb[i])
		b.Field(5).(*array.BooleanBuilder).Append(c.Changed[i])
		post.Append(true)
		for j := c.PostOff[i]; j < c.PostOff[i+1]; j++ {
			st.Append(true)
			st.FieldBuilder(0).(*array.Int32Builder).Append(c.PostClass[j])
			st.FieldBuilder(1).(*array.Float32Builder).Append(c.PostProb[j])
		}
	}
	return b.NewRecordBatch()
}

// writeOutputFile writes c as a Parquet output shard under dir with relabel's
// own writer, returning its path.
func writeOutputFile(t *testing.T, dir, name string, c *schemas.Cleaned) string {
	t.Helper()
	path := blobio.Join(dir, name)
	fs, err := blobio.For(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if err := shardio.WriteShard(context.Background(), fs, path, shardio.Parquet, []*schemas.Cleaned{c}, nil,
		schemas.LabelInt32, nil, schemas.IDInt64, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// outRow is one output row, comparable.
type outRow struct {
	ID                int64
	Label, Clean      int32
	CleanProb, GivenP float32
	Changed           bool
	Post              string
}

func rowsOfCleaned(cs ...*schemas.Cleaned) map[int64]outRow {
	m := map[int64]outRow{}
	for _, c := range cs {
		for i, id := range c.IDs {
			post := ""
			for j := c.PostOff[i]; j < c.PostOff[i+1]; j++ {
				post += fmt.Sprintf("%d:%g ", c.PostClass[j], c.PostProb[j])
			}
			m[id] = outRow{id, c.Labels[c.LabelOff[i]], c.CleanLabel[i], c.CleanProb[i], c.GivenProb[i], c.Changed[i], post}
		}
	}
	return m
}

// scanOutput reads the output table's current snapshot with iceberg-go's own
// scan (an independent reader) and returns its rows by id; a duplicate id
// fails the test.
func scanOutput(t *testing.T, tbl *table.Table) map[int64]outRow {
	t.Helper()
	at := icebergiotest.Scan(t, tbl)
	defer at.Release()
	tr := array.NewTableReader(at, 1<<16)
	defer tr.Release()
	m := map[int64]outRow{}
	idx := func(sc *arrow.Schema, name string) int {
		is := sc.FieldIndices(name)
		if len(is) != 1 {
			t.Fatalf("scan: column %q: %v", name, is)
		}
		return is[0]
	}
	for tr.Next() {
		rec := tr.RecordBatch()
		sc := rec.Schema()
		ids := rec.Column(idx(sc, schemas.ColID)).(*array.Int64)
		lab := rec.Column(idx(sc, schemas.ColLabel)).(*array.Int32)
		cl := rec.Column(idx(sc, schemas.ColCleanLabel)).(*array.Int32)
		cp := rec.Column(idx(sc, schemas.ColCleanProb)).(*array.Float32)
		gp := rec.Column(idx(sc, schemas.ColGivenLabelProb)).(*array.Float32)
		ch := rec.Column(idx(sc, schemas.ColChanged)).(*array.Boolean)
		post := rec.Column(idx(sc, schemas.ColPosterior)).(*array.List)
		st := post.ListValues().(*array.Struct)
		pc := st.Field(0).(*array.Int32)
		pp := st.Field(1).(*array.Float32)
		for i := range int(rec.NumRows()) {
			id := ids.Value(i)
			if _, dup := m[id]; dup {
				t.Fatalf("scan: id %d twice", id)
			}
			s := ""
			lo, hi := post.ValueOffsets(i)
			for j := lo; j < hi; j++ {
				s += fmt.Sprintf("%d:%g ", pc.Value(int(j)), pp.Value(int(j)))
			}
			m[id] = outRow{id, lab.Value(i), cl.Value(i), cp.Value(i), gp.Value(i), ch.Value(i), s}
		}
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}
