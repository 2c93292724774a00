// Package icebergiotest makes Iceberg input tables of schemas.Rows for tests,
// as another writer would (iceberg-go's own CreateTable and AppendTable): one
// place for what the lake's, the worker pool's, the CLI's and icebergio's
// tests each wrote by hand. It speaks iceberg-go's catalog.Catalog, not
// icebergio's, so that icebergio's own tests can use it.
package icebergiotest

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// Schema is an input table's Arrow schema: Iceberg has no fixed-size list,
// so features are list<float32>, which relabel's readers accept; the label
// is nullable (unlabelled rows).
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: schemas.ColID, Type: arrow.PrimitiveTypes.Int64},
	{Name: schemas.ColFeatures, Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)},
	{Name: schemas.ColLabel, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

// Record is r's rows as a record of Schema (a row's first label; a negative
// one is null). The caller releases it.
func Record(r *schemas.Rows) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, Schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	feats := b.Field(1).(*array.ListBuilder)
	vals := feats.ValueBuilder().(*array.Float32Builder)
	labs := b.Field(2).(*array.Int32Builder)
	for i, id := range r.IDs {
		ids.Append(id)
		feats.Append(true)
		vals.AppendValues(r.Features[i*r.D:(i+1)*r.D], nil)
		if lab := r.Labels[r.LabelOff[i]]; lab >= 0 {
			labs.Append(lab)
		} else {
			labs.AppendNull()
		}
	}
	return b.NewRecordBatch()
}

// CreateTable creates the table name ("ns.items") of Schema in cat, and its
// namespace unless it exists, with opts (properties, a partitioning).
func CreateTable(t testing.TB, cat catalog.Catalog, name string, opts ...catalog.CreateTableOpt) *table.Table {
	t.Helper()
	ctx := context.Background()
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(Schema, false)
	if err != nil {
		t.Fatal(err)
	}
	ident := catalog.ToIdentifier(name)
	ns := catalog.NamespaceFromIdent(ident)
	if ok, err := cat.CheckNamespaceExists(ctx, ns); err != nil {
		t.Fatal(err)
	} else if !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := cat.CreateTable(ctx, ident, sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// Append appends rows to tbl as one snapshot and returns the table it
// refreshed.
func Append(t testing.TB, tbl *table.Table, rows ...*schemas.Rows) *table.Table {
	t.Helper()
	recs := make([]arrow.RecordBatch, len(rows))
	for i, r := range rows {
		recs[i] = Record(r)
		defer recs[i].Release()
	}
	at := array.NewTableFromRecords(Schema, recs)
	defer at.Release()
	tbl, err := tbl.AppendTable(context.Background(), at, 1<<16, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// Units reads every unit (row group or record batch) of the files matching
// glob, in file and unit order: the committed digits slice's four units are
// the lake tests' four "daily" appends.
func Units(t testing.TB, glob string, classes int) []*schemas.Rows {
	t.Helper()
	ctx := context.Background()
	opts := shardio.ReadOptions{Classes: classes}
	shards, err := shardio.Scan(ctx, glob, opts)
	if err != nil {
		t.Fatal(err)
	}
	var units []*schemas.Rows
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := shardio.ReadUnit(ctx, u, opts)
			if err != nil {
				t.Fatal(err)
			}
			units = append(units, r)
		}
	}
	return units
}

// Scan reads tbl's current snapshot with iceberg-go's own scan, a reader
// independent of relabel's. The caller releases the table.
func Scan(t testing.TB, tbl *table.Table) arrow.Table {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return at
}
