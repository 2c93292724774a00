package resultio

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/shardio"
)

// File is an output or truth file (Parquet, Arrow IPC file or stream) open
// for one streaming pass. Its format is told by its magic bytes in
// io/shardio, the one place that knows them, and every unit is read through
// shardio's guarded reader (a Parquet chunk's bounds and page checksums, an
// Arrow stream's end marker, a decoder's panic on a corrupt footer turned
// into an error naming the file): an output is often a file a user points
// relabel eval or report at, edited or cut short.
type File struct {
	Path string
	// Schema is the file's schema, its key-value metadata (relabel's class
	// names and options) included.
	Schema *arrow.Schema
	units  []shardio.Unit
	mem    memory.Allocator
}

// Open reads the footer of path (local or any blobio path); mem allocates
// the Arrow buffers of the footer and, in Scan, of each unit.
func Open(ctx context.Context, path string, mem memory.Allocator) (*File, error) {
	if mem == nil {
		panic("resultio: nil allocator") // a programmer error
	}
	sc, _, units, err := shardio.FileUnits(ctx, path, mem)
	if err != nil {
		return nil, fmt.Errorf("resultio: %w", err)
	}
	return &File{Path: path, Schema: sc, units: units, mem: mem}, nil
}

// Column is the index of the one field named name in the schema, false
// when there is none or more than one.
func (f *File) Column(name string) (int, bool) {
	idx := f.Schema.FieldIndices(name)
	if len(idx) != 1 {
		return 0, false
	}
	return idx[0], true
}

// Scan calls each with every unit of the file in order (a Parquet row group,
// an Arrow record batch, a whole Arrow stream; units of 0 rows left out) as
// one record batch of all the schema's columns, and the file row of its
// first row. rec is released when each returns: each must not keep it or
// any of its arrays. Memory is one unit's, whatever the file's size.
func (f *File) Scan(ctx context.Context, each func(rec arrow.RecordBatch, row int64) error) error {
	all := func(sc *arrow.Schema) ([]int, error) {
		idx := make([]int, sc.NumFields())
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	for _, u := range f.units {
		if err := ctx.Err(); err != nil {
			return err
		}
		cols, release, err := shardio.ReadColumns(ctx, u, f.mem, all)
		if err != nil {
			return fmt.Errorf("resultio: %w", err)
		}
		rec, err := f.record(cols, u.Rows)
		release()
		if err != nil {
			return err
		}
		err = each(rec, u.Offset)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// record makes one record batch of a unit's columns. A column read in
// several chunks (a Parquet row group's large binary column can be) is
// concatenated, so that row i is at index i of every column.
func (f *File) record(cols [][]arrow.Array, rows int64) (arrow.RecordBatch, error) {
	arrs := make([]arrow.Array, len(cols))
	fields := make([]arrow.Field, len(cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, chunks := range cols {
		switch len(chunks) {
		case 1:
			chunks[0].Retain()
			arrs[i] = chunks[0]
		default:
			a, err := array.Concatenate(chunks, f.mem)
			if err != nil {
				return nil, fmt.Errorf("resultio: %s column %q: %w", f.Path, f.Schema.Field(i).Name, err)
			}
			arrs[i] = a
		}
		if int64(arrs[i].Len()) != rows {
			return nil, fmt.Errorf("resultio: %s column %q: %d rows in a unit of %d", f.Path, f.Schema.Field(i).Name, arrs[i].Len(), rows)
		}
		// The type read, not the footer's: the record must not panic on a
		// file whose footer and data disagree.
		fields[i] = f.Schema.Field(i)
		fields[i].Type = arrs[i].DataType()
	}
	md := f.Schema.Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), arrs, rows), nil
}

// Scan opens path and scans it (File.Scan), each also given the file.
func Scan(ctx context.Context, path string, mem memory.Allocator, each func(f *File, rec arrow.RecordBatch, row int64) error) error {
	f, err := Open(ctx, path, mem)
	if err != nil {
		return err
	}
	return f.Scan(ctx, func(rec arrow.RecordBatch, row int64) error { return each(f, rec, row) })
}
