package shardio

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// maxRecordRows bounds the rows of one written record batch (and so of one
// Parquet row group). Records are cut at fixed row counts, not at batch
// boundaries, so that the bytes of a shard depend only on its rows, not on
// how a runner bundled them.
const maxRecordRows = 1 << 16

// WriteShard writes the cleaned rows of one shard to path, in format (Parquet
// or ArrowFile; ArrowStream also works), with schemas.OutputSchema and meta as
// its schema metadata. batches may come in any order; they are written sorted
// by Offset and must not overlap. labelKind and classNames say how class
// indices are written (class names for string labels); idKind must be the
// batches' id kind.
//
// WriteShard writes path itself: callers wanting atomicity pass a temporary
// name and Rename it. On error it removes what it wrote. Equal inputs give
// byte-identical files (no timestamps, fixed writer properties). mem
// allocates the Arrow buffers built (nil: memory.DefaultAllocator).
func WriteShard(ctx context.Context, fs blobio.FS, path string, format Format, batches []*schemas.Cleaned,
	meta map[string]string, labelKind schemas.LabelKind, classNames []string, idKind schemas.IDKind, mem memory.Allocator) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	sorted := slices.Clone(batches)
	slices.SortStableFunc(sorted, func(a, b *schemas.Cleaned) int { return cmp.Compare(a.Offset, b.Offset) })
	multi := false
	for i, b := range sorted {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("shardio: writing %s: %w", path, err)
		}
		if b.IDKind != idKind {
			return fmt.Errorf("shardio: writing %s: batch at offset %d has %s ids, want %s", path, b.Offset, b.IDKind, idKind)
		}
		if i == 0 {
			multi = b.Multi
		} else if b.Multi != multi {
			return fmt.Errorf("shardio: writing %s: batches at offsets %d and %d differ in Multi", path, sorted[0].Offset, b.Offset)
		}
		if i > 0 && sorted[i-1].Offset+int64(sorted[i-1].Len()) > b.Offset {
			return fmt.Errorf("shardio: writing %s: batches at offsets %d (%d rows) and %d overlap", path, sorted[i-1].Offset, sorted[i-1].Len(), b.Offset)
		}
	}
	lw := labelWriter{kind: labelKind, names: classNames}
	if labelKind == schemas.LabelString && len(classNames) == 0 {
		return fmt.Errorf("shardio: writing %s: string labels need class names", path)
	}
	sc := schemas.OutputSchema(idKind, labelKind, multi, meta)
	return writeRecords(ctx, fs, path, format, sc, mem, func(b *array.RecordBuilder, emit func() error) error {
		for _, c := range sorted {
			for i := 0; i < c.Len(); i++ {
				if err := appendCleaned(b, &lw, c, i, multi); err != nil {
					return fmt.Errorf("shardio: writing %s: row %d: %w", path, c.Offset+int64(i), err)
				}
				if err := emit(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// appendCleaned appends row i of c to the output columns.
func appendCleaned(b *array.RecordBuilder, lw *labelWriter, c *schemas.Cleaned, i int, multi bool) error {
	if c.IDKind == schemas.IDString {
		b.Field(0).(*array.StringBuilder).Append(c.StrIDs[i])
	} else {
		b.Field(0).(*array.Int64Builder).Append(c.IDs[i])
	}
	given := c.Labels[c.LabelOff[i]:c.LabelOff[i+1]]
	if err := lw.appendGiven(b.Field(1), given, multi); err != nil {
		return err
	}
	if c.CleanLabel[i] == schemas.Unlabelled {
		// An unlabelled row no labelled row reached: no clean label.
		b.Field(2).AppendNull()
		b.Field(3).AppendNull()
	} else {
		if err := lw.append(b.Field(2), c.CleanLabel[i]); err != nil {
			return fmt.Errorf("clean label: %w", err)
		}
		b.Field(3).(*array.Float32Builder).Append(c.CleanProb[i])
	}
	if p := c.GivenProb[i]; math.IsNaN(float64(p)) {
		b.Field(4).AppendNull()
	} else {
		b.Field(4).(*array.Float32Builder).Append(p)
	}
	b.Field(5).(*array.BooleanBuilder).Append(c.Changed[i])
	post := b.Field(6).(*array.ListBuilder)
	post.Append(true)
	sb := post.ValueBuilder().(*array.StructBuilder)
	cb, pb := sb.FieldBuilder(0), sb.FieldBuilder(1).(*array.Float32Builder)
	for k := c.PostOff[i]; k < c.PostOff[i+1]; k++ {
		sb.Append(true)
		if err := lw.append(cb, c.PostClass[k]); err != nil {
			return fmt.Errorf("posterior class: %w", err)
		}
		pb.Append(c.PostProb[k])
	}
	return nil
}

// labelWriter writes class indices as labels of the input's type.
type labelWriter struct {
	kind  schemas.LabelKind
	names []string
}

func (w *labelWriter) append(b array.Builder, c int32) error {
	if c < 0 || (w.kind == schemas.LabelString && int(c) >= len(w.names)) {
		if w.kind == schemas.LabelString {
			return fmt.Errorf("class %d outside the %d class names", c, len(w.names))
		}
		return fmt.Errorf("class %d is negative", c)
	}
	switch w.kind {
	case schemas.LabelInt32:
		b.(*array.Int32Builder).Append(c)
	case schemas.LabelInt64:
		b.(*array.Int64Builder).Append(int64(c))
	case schemas.LabelString:
		b.(*array.StringBuilder).Append(w.names[c])
	default:
		return fmt.Errorf("label kind %v", w.kind)
	}
	return nil
}

// appendGiven writes a row's given labels as the reader read them (see
// schemas.Rows): one label, null when Unlabelled; or the list of
// annotations, null when there are none, empty for schemas.EmptyList, with a
// null for each Unlabelled entry.
func (w *labelWriter) appendGiven(b array.Builder, given []int32, multi bool) error {
	if !multi {
		if len(given) != 1 {
			return fmt.Errorf("%d labels in a single-label batch", len(given))
		}
		if given[0] == schemas.Unlabelled {
			b.AppendNull()
			return nil
		}
		return w.append(b, given[0])
	}
	lb := b.(*array.ListBuilder)
	switch {
	case len(given) == 0:
		lb.AppendNull()
		return nil
	case len(given) == 1 && given[0] == schemas.EmptyList:
		lb.Append(true)
		return nil
	}
	lb.Append(true)
	for _, g := range given {
		if g == schemas.Unlabelled {
			lb.ValueBuilder().AppendNull()
			continue
		}
		if err := w.append(lb.ValueBuilder(), g); err != nil {
			return err
		}
	}
	return nil
}

// writeRecords creates path and writes the records that fill builds, a row at
// a time: fill appends one row to the builder's columns and calls emit, which
// writes a fresh record when maxRecordRows rows have accumulated. Records are
// always built, never sliced: arrow-go v18 rewrites the first rows of a
// sliced record with a fixed_size_list column when writing it to Parquet.
func writeRecords(ctx context.Context, fs blobio.FS, path string, format Format, sc *arrow.Schema, mem memory.Allocator,
	fill func(b *array.RecordBuilder, emit func() error) error) error {
	return writeFile(ctx, fs, path, format, sc, mem, func(sink recordSink) error {
		b := array.NewRecordBuilder(mem, sc)
		defer b.Release()
		pending := 0
		flush := func() error {
			if pending == 0 {
				return nil
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			pending = 0
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := sink.Write(rec); err != nil {
				return fmt.Errorf("shardio: writing %s: %w", path, err)
			}
			return nil
		}
		err := fill(b, func() error {
			if pending++; pending == maxRecordRows {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		return err
	})
}

// WriteRecords writes recs, records of schema sc, to path in format, in
// order, through the writers the shards use (Parquet with page checksums,
// row groups of at most 65,536 rows); a failure leaves no file. For files
// beside the shards built by other io packages (annotio's).
func WriteRecords(ctx context.Context, fs blobio.FS, path string, format Format, sc *arrow.Schema, mem memory.Allocator, recs ...arrow.RecordBatch) error {
	return writeFile(ctx, fs, path, format, sc, mem, func(sink recordSink) error {
		for _, rec := range recs {
			if err := sink.Write(rec); err != nil {
				return fmt.Errorf("shardio: writing %s: %w", path, err)
			}
		}
		return nil
	})
}

// writeBufs holds the files' write buffers: an incremental run rewrites many
// small shards, and a fresh megabyte for each (allocated and cleared) cost it
// more than their bytes.
var writeBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<20) }}

// writeFile creates path, opens a record writer of format on it and hands it
// to write; the file is complete when writeFile returns nil. When anything
// fails the file is removed, leaving nothing half-written behind, and the
// first error is the one reported (write's as it returns it).
func writeFile(ctx context.Context, fs blobio.FS, path string, format Format, sc *arrow.Schema, mem memory.Allocator,
	write func(sink recordSink) error) (err error) {
	wc, err := fs.Create(ctx, path)
	if err != nil {
		return fmt.Errorf("shardio: writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			wc.Close()
			_ = fs.Remove(context.WithoutCancel(ctx), path)
		}
	}()
	bw := writeBufs.Get().(*bufio.Writer)
	bw.Reset(wc)
	defer func() {
		bw.Reset(nil)
		writeBufs.Put(bw)
	}()
	sink, err := newSink(bw, format, sc, mem)
	if err != nil {
		return fmt.Errorf("shardio: writing %s: %w", path, err)
	}
	if err := write(sink); err != nil {
		sink.Close()
		return err
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("shardio: writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("shardio: writing %s: %w", path, err)
	}
	if err := wc.Close(); err != nil {
		return fmt.Errorf("shardio: writing %s: %w", path, err)
	}
	return nil
}

type recordSink interface {
	Write(arrow.RecordBatch) error
	Close() error
}

// newSink opens a record writer of format on w. w must not be an io.Closer
// the writer could close (the Parquet writer closes a closer sink).
func newSink(w io.Writer, format Format, sc *arrow.Schema, mem memory.Allocator) (recordSink, error) {
	switch format {
	case Parquet:
		props := parquet.NewWriterProperties(
			parquet.WithAllocator(mem),
			parquet.WithCompression(compress.Codecs.Snappy),
			parquet.WithMaxRowGroupLength(maxRecordRows),
			parquet.WithCreatedBy("relabel (arrow-go parquet v18)"),
		)
		// Storing the Arrow schema keeps the types exact on reading
		// (fixed_size_list, int32 vs int64, the schema metadata).
		s := &crcSink{w: w}
		fw, err := pqarrow.NewFileWriter(sc, &s.buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
		if err != nil {
			return nil, err
		}
		s.FileWriter = fw
		return s, nil
	case ArrowFile:
		return ipc.NewFileWriter(w, ipc.WithSchema(sc), ipc.WithAllocator(mem))
	case ArrowStream:
		return ipc.NewWriter(w, ipc.WithSchema(sc), ipc.WithAllocator(mem)), nil
	}
	return nil, fmt.Errorf("format %v", format)
}

// crcSink writes a Parquet file whole in memory, then gives every page its
// checksum (pagecrc.go) as it goes out to w: the rewrite needs the footer,
// which comes last. Outputs are one input shard's rows without features.
type crcSink struct {
	*pqarrow.FileWriter
	buf bytes.Buffer
	w   io.Writer
}

func (s *crcSink) Close() error {
	if err := s.FileWriter.Close(); err != nil {
		return err
	}
	b, err := addPageCRCs(s.buf.Bytes())
	if err != nil {
		return err
	}
	s.buf = bytes.Buffer{}
	_, err = s.w.Write(b)
	return err
}

// WriteInput writes rows as an input shard in the canonical input form
// (schemas.InputSchema: features as fixed_size_list<float32>[D]), one row
// group or record batch per element of rows, in the order given: for test
// data, examples and tests of other packages. Class indices are written as
// labelKind says, through classNames for strings; schemas.Unlabelled becomes
// null. mem allocates the Arrow buffers built (nil: memory.DefaultAllocator).
func WriteInput(ctx context.Context, fs blobio.FS, path string, format Format, rows []*schemas.Rows,
	labelKind schemas.LabelKind, classNames []string, mem memory.Allocator) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if len(rows) == 0 {
		return fmt.Errorf("shardio: writing %s: no rows", path)
	}
	first := rows[0]
	for _, r := range rows {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("shardio: writing %s: %w", path, err)
		}
		if r.IDKind != first.IDKind || r.Multi != first.Multi || r.D != first.D {
			return fmt.Errorf("shardio: writing %s: batches differ in IDKind, Multi or D", path)
		}
	}
	lw := labelWriter{kind: labelKind, names: classNames}
	sc := schemas.InputSchema(first.IDKind, labelKind, first.Multi, first.D)
	// One record per batch, so that tests control the units; writeRecords
	// cuts at fixed counts instead, hence this loop of its own.
	return writeFile(ctx, fs, path, format, sc, mem, func(sink recordSink) error {
		b := array.NewRecordBuilder(mem, sc)
		defer b.Release()
		for _, r := range rows {
			fl := b.Field(1).(*array.FixedSizeListBuilder)
			vb := fl.ValueBuilder().(*array.Float32Builder)
			for i := 0; i < r.Len(); i++ {
				if r.IDKind == schemas.IDString {
					b.Field(0).(*array.StringBuilder).Append(r.StrIDs[i])
				} else {
					b.Field(0).(*array.Int64Builder).Append(r.IDs[i])
				}
				fl.Append(true)
				vb.AppendValues(r.Features[i*r.D:(i+1)*r.D], nil)
				if err := lw.appendGiven(b.Field(2), r.Labels[r.LabelOff[i]:r.LabelOff[i+1]], r.Multi); err != nil {
					return fmt.Errorf("shardio: writing %s: row %d: %w", path, r.Offset+int64(i), err)
				}
			}
			rec := b.NewRecordBatch()
			err := sink.Write(rec)
			rec.Release()
			if err != nil {
				return fmt.Errorf("shardio: writing %s: %w", path, err)
			}
		}
		return nil
	})
}
