package annotio

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
)

// Unit is one unit of work of an annotation shard: a Parquet row group, an
// Arrow IPC record batch, or a whole Arrow IPC stream. It is plain data (a
// PCollection element).
type Unit struct {
	Path   string
	Format shardio.Format
	// Index is the row group or record batch number (0 for a stream).
	Index int
	// Offset is the row number of its first row within the file.
	Offset int64
	// Rows is its number of rows; -1 for a stream (known once read).
	Rows int64
}

var (
	magicParquet = []byte("PAR1")
	magicArrow   = []byte("ARROW1")
	magicStream  = []byte{0xff, 0xff, 0xff, 0xff}
)

func detect(path string, f blobio.File) (shardio.Format, error) {
	head := make([]byte, min(f.Size(), 8))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return 0, fileError(path, err, "read")
	}
	switch {
	case len(head) == 0:
		return 0, fileError(path, nil, "empty file (0 bytes)")
	case bytes.HasPrefix(head, magicParquet):
		return shardio.Parquet, nil
	case bytes.HasPrefix(head, magicArrow):
		return shardio.ArrowFile, nil
	case bytes.HasPrefix(head, magicStream):
		return shardio.ArrowStream, nil
	}
	return 0, fileError(path, nil, "not Parquet (PAR1) nor Arrow IPC (ARROW1 or a stream): starts with % x", head)
}

func readProps(mem memory.Allocator, size int64) *parquet.ReaderProperties {
	p := parquet.NewReaderProperties(mem)
	p.MaxCompressedPageSize = max(1, min(p.GetMaxCompressedPageSize(), size))
	return p
}

// scanFile reads path's schema and cuts it into units (those of 0 rows left
// out).
func scanFile(ctx context.Context, path string, mem memory.Allocator) (sc *arrow.Schema, units []Unit, err error) {
	defer corrupt(path, &err)
	fs, err := blobio.For(path)
	if err != nil {
		return nil, nil, fmt.Errorf("annotio: %w", err)
	}
	f, err := fs.Open(ctx, path)
	if err != nil {
		return nil, nil, fileError(path, err, "open")
	}
	defer f.Close()
	format, err := detect(path, f)
	if err != nil {
		return nil, nil, err
	}
	var rows []int64
	switch format {
	case shardio.Parquet:
		pr, err := file.NewParquetReader(blobio.Section(f), file.WithReadProps(readProps(mem, f.Size())))
		if err != nil {
			return nil, nil, fileError(path, err, "corrupt or truncated Parquet")
		}
		defer pr.Close()
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, mem)
		if err != nil {
			return nil, nil, fileError(path, err, "Parquet schema")
		}
		if sc, err = fr.Schema(); err != nil {
			return nil, nil, fileError(path, err, "Parquet schema")
		}
		for i := 0; i < pr.NumRowGroups(); i++ {
			rows = append(rows, pr.MetaData().RowGroup(i).NumRows())
		}
	case shardio.ArrowFile:
		r, err := ipc.NewFileReader(blobio.Section(f), ipc.WithAllocator(mem))
		if err != nil {
			return nil, nil, fileError(path, err, "corrupt or truncated Arrow IPC file")
		}
		defer r.Close()
		sc = r.Schema()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				return nil, nil, fileError(path, err, "corrupt Arrow IPC file: record batch %d", i)
			}
			rows = append(rows, rec.NumRows())
			rec.Release()
		}
	case shardio.ArrowStream:
		r, err := ipc.NewReader(bufio.NewReader(blobio.Section(f)), ipc.WithAllocator(mem), ipc.WithMetadataSizeLimit(f.Size()))
		if err != nil {
			return nil, nil, fileError(path, err, "corrupt or truncated Arrow IPC stream")
		}
		sc = r.Schema()
		r.Release()
		rows = []int64{-1}
	}
	off := int64(0)
	for i, n := range rows {
		if n == 0 {
			continue
		}
		units = append(units, Unit{Path: path, Format: format, Index: i, Offset: off, Rows: n})
		off += n
	}
	return sc, units, nil
}

// chunks are some columns of one unit, each as its chunks.
type chunks struct {
	cols    [][]arrow.Array
	release func()
}

func (c *chunks) rows() int64 {
	n := int64(0)
	for _, a := range c.cols[0] {
		n += int64(a.Len())
	}
	return n
}

// readColumns reads the fields named of unit u, and only those where the
// format allows (Parquet).
func readColumns(ctx context.Context, u Unit, names []string, mem memory.Allocator) (c *chunks, err error) {
	defer corrupt(u.Path, &err)
	fs, err := blobio.For(u.Path)
	if err != nil {
		return nil, fmt.Errorf("annotio: %w", err)
	}
	f, err := fs.Open(ctx, u.Path)
	if err != nil {
		return nil, fileError(u.Path, err, "open")
	}
	defer f.Close()
	where := fmt.Sprintf("%s unit %d (rows %d..)", u.Format, u.Index, u.Offset)
	pick := func(sc *arrow.Schema) ([]int, error) {
		var idx []int
		for _, n := range names {
			i := sc.FieldIndices(n)
			if len(i) != 1 {
				return nil, columnError(u.Path, n, "missing (the file changed since Scan?)")
			}
			idx = append(idx, i[0])
		}
		return idx, nil
	}
	c = &chunks{}
	switch u.Format {
	case shardio.Parquet:
		pr, err := file.NewParquetReader(blobio.Section(f), file.WithReadProps(readProps(mem, f.Size())))
		if err != nil {
			return nil, fileError(u.Path, err, "corrupt or truncated Parquet")
		}
		defer pr.Close()
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, mem)
		if err != nil {
			return nil, fileError(u.Path, err, "Parquet schema")
		}
		sc, err := fr.Schema()
		if err != nil {
			return nil, fileError(u.Path, err, "Parquet schema")
		}
		fields, err := pick(sc)
		if err != nil {
			return nil, err
		}
		if u.Index >= pr.NumRowGroups() {
			return nil, fileError(u.Path, nil, "no row group %d (the file changed since Scan?)", u.Index)
		}
		var leaves []int
		for _, fi := range fields {
			leaves = appendLeaves(leaves, &fr.Manifest.Fields[fi])
		}
		tbl, err := fr.ReadRowGroups(ctx, leaves, []int{u.Index})
		if err != nil {
			return nil, fileError(u.Path, err, "reading %s", where)
		}
		c.release = tbl.Release
		for _, fi := range fields {
			idx := tbl.Schema().FieldIndices(sc.Field(fi).Name)
			if len(idx) != 1 {
				tbl.Release()
				return nil, fileError(u.Path, nil, "reading %s: column %q not read", where, sc.Field(fi).Name)
			}
			c.cols = append(c.cols, tbl.Column(idx[0]).Data().Chunks())
		}
	case shardio.ArrowFile:
		r, err := ipc.NewFileReader(blobio.Section(f), ipc.WithAllocator(mem))
		if err != nil {
			return nil, fileError(u.Path, err, "corrupt or truncated Arrow IPC file")
		}
		defer r.Close()
		fields, err := pick(r.Schema())
		if err != nil {
			return nil, err
		}
		rec, err := r.RecordBatchAt(u.Index)
		if err != nil {
			return nil, fileError(u.Path, err, "reading %s", where)
		}
		c.release = rec.Release
		for _, fi := range fields {
			c.cols = append(c.cols, []arrow.Array{rec.Column(fi)})
		}
	case shardio.ArrowStream:
		r, err := ipc.NewReader(bufio.NewReaderSize(blobio.Section(f), 1<<20), ipc.WithAllocator(mem), ipc.WithMetadataSizeLimit(f.Size()), ipc.WithBodySizeLimit(f.Size()))
		if err != nil {
			return nil, fileError(u.Path, err, "corrupt or truncated Arrow IPC stream")
		}
		defer r.Release()
		fields, err := pick(r.Schema())
		if err != nil {
			return nil, err
		}
		var recs []arrow.RecordBatch
		c.release = func() {
			for _, rec := range recs {
				rec.Release()
			}
		}
		c.cols = make([][]arrow.Array, len(fields))
		for r.Next() {
			rec := r.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
			for i, fi := range fields {
				c.cols[i] = append(c.cols[i], rec.Column(fi))
			}
		}
		if err := r.Err(); err != nil && err != io.EOF {
			c.release()
			return nil, fileError(u.Path, err, "corrupt or truncated Arrow IPC stream after %d record batches", len(recs))
		}
	default:
		return nil, fileError(u.Path, nil, "unit of unknown format %v", u.Format)
	}
	return c, nil
}

func appendLeaves(dst []int, f *pqarrow.SchemaField) []int {
	if len(f.Children) == 0 {
		return append(dst, f.ColIndex)
	}
	for i := range f.Children {
		dst = appendLeaves(dst, &f.Children[i])
	}
	return dst
}
