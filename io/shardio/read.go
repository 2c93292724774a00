package shardio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// ReadUnit reads one unit into Rows: features converted to float32, labels
// mapped to class indices (through opts.Classes or opts.ClassNames), null
// labels and null annotations of a list to schemas.Unlabelled, an empty list
// to schemas.EmptyList (see schemas.Rows). Every
// value is checked: a null id or feature row, a NaN or infinite feature, a
// row of another dimension than u.D (or opts.D), a label outside the class
// set and an id repeated within the unit are errors naming the row.
func ReadUnit(ctx context.Context, u Unit, opts ReadOptions) (r *schemas.Rows, err error) {
	defer corrupt(u.Path, &err)
	return readUnit(ctx, u, opts)
}

func readUnit(ctx context.Context, u Unit, opts ReadOptions) (*schemas.Rows, error) {
	c, err := readColumns(ctx, u, &opts, func(in schemas.Input) []int { return []int{in.ID, in.Features, in.Label} }, 1)
	if err != nil {
		return nil, err
	}
	defer c.release()
	n := c.rows()
	switch {
	case n == 0:
		return nil, fileError(u.Path, nil, "no rows")
	case u.Rows >= 0 && n != u.Rows:
		return nil, fileError(u.Path, nil, "%s unit %d has %d rows, its footer said %d", u.Format, u.Index, n, u.Rows)
	}
	classes, err := newClassMap(u.Path, c.in, &opts)
	if err != nil {
		return nil, err
	}
	r := &schemas.Rows{Shard: u.Path, Offset: u.Offset, IDKind: c.in.IDKind, Multi: c.in.Multi}
	if err := readIDs(r, u, c.in, c.chunks[0], n); err != nil {
		return nil, err
	}
	d := opts.D
	if d == 0 {
		d = u.D
	}
	if c.flat != nil && c.flat[1] != nil {
		err = flatFeatures(r, u, c.in, c.flat[1], c.rowLen[1], n, d)
	} else {
		err = readFeatures(r, u, c.in, c.chunks[1], n, d)
	}
	if err != nil {
		return nil, err
	}
	if err := checkMagnitude(r, u, c.in.FeaturesName, opts.MaxAbsFeature); err != nil {
		return nil, err
	}
	if err := readLabels(r, u, c.in, c.chunks[2], n, classes); err != nil {
		return nil, err
	}
	return r, nil
}

// columns holds some columns of one unit, each as its chunks, or, for a
// Parquet list of float32 read straight from its column chunk, as its
// values (flat; the chunks nil) with rowLen values a row.
type columns struct {
	in      schemas.Input
	chunks  [][]arrow.Array
	flat    [][]float32
	rowLen  []int
	names   []string // the picked fields' names, for errors
	release func()
}

func fieldNames(sc *arrow.Schema, fields []int) []string {
	names := make([]string, len(fields))
	for k, fi := range fields {
		names[k] = sc.Field(fi).Name
	}
	return names
}

func (c *columns) rows() int64 {
	n := int64(0)
	for _, a := range c.chunks[0] {
		n += int64(a.Len())
	}
	return n
}

// readColumns reads the fields that pick chooses of unit u (after checking
// the schema against the item columns' contract), and only those where the
// format allows (Parquet).
// flat is the position in pick's fields of a list of float32 to read as
// flat values where it can be (-1: none).
func readColumns(ctx context.Context, u Unit, opts *ReadOptions, pick func(schemas.Input) []int, flat int) (c *columns, err error) {
	defer corrupt(u.Path, &err)
	var in schemas.Input
	resolve := func(sc *arrow.Schema) ([]int, error) {
		var err error
		if in, err = schemas.ResolveInput(sc, opts.Columns); err != nil {
			var ce *schemas.ColumnError
			if errors.As(err, &ce) {
				return nil, &InputError{Path: u.Path, Row: -1, Column: ce.Column, Msg: ce.Msg, Err: err}
			}
			return nil, fileError(u.Path, err, "schema")
		}
		return pick(in), nil
	}
	c, err = readPicked(ctx, u, opts.mem(), resolve, flat)
	if err != nil {
		return nil, err
	}
	c.in = in
	return c, nil
}

// ReadColumns reads the fields that pick chooses from unit u's schema, each
// as its chunks, with every guard relabel's item reader has (a Parquet
// chunk's bounds and page checksums, an Arrow stream's end marker, a corrupt
// file's decoder panic turned into an error naming it). release frees the
// chunks. io/annotio reads annotation shards with it.
func ReadColumns(ctx context.Context, u Unit, mem memory.Allocator, pick func(*arrow.Schema) ([]int, error)) (cols [][]arrow.Array, release func(), err error) {
	defer corrupt(u.Path, &err)
	c, err := readPicked(ctx, u, mem, pick, -1)
	if err != nil {
		return nil, nil, err
	}
	return c.chunks, c.release, nil
}

func readPicked(ctx context.Context, u Unit, mem memory.Allocator, resolve func(*arrow.Schema) ([]int, error), flat int) (*columns, error) {
	fs, err := blobio.For(u.Path)
	if err != nil {
		return nil, fmt.Errorf("shardio: %w", err)
	}
	f, err := fs.Open(ctx, u.Path)
	if err != nil {
		return nil, fileError(u.Path, err, "open")
	}
	defer f.Close()
	c := &columns{}
	where := fmt.Sprintf("%s unit %d (rows %d..)", u.Format, u.Index, u.Offset)

	switch u.Format {
	case Parquet:
		pr, fr, err := openParquet(f, u.Path, mem, pqarrow.ArrowReadProperties{})
		if err != nil {
			return nil, err
		}
		defer pr.Close()
		sc, err := fr.Schema()
		if err != nil {
			return nil, fileError(u.Path, err, "Parquet schema")
		}
		fields, err := resolve(sc)
		if err != nil {
			return nil, err
		}
		c.names = fieldNames(sc, fields)
		if u.Index >= pr.NumRowGroups() {
			return nil, fileError(u.Path, nil, "no row group %d (the file changed since Scan?)", u.Index)
		}
		if err := checkChunks(pr, u.Index, f.Size()); err != nil {
			return nil, fileError(u.Path, err, "corrupt Parquet")
		}
		// ReadRowGroups takes leaf column indices: a list column is one leaf
		// below its field.
		var leaves []int
		for _, fi := range fields {
			leaves = appendLeaves(leaves, &fr.Manifest.Fields[fi])
		}
		if err := checkPageCRCs(pr, u.Index, leaves, f); err != nil {
			return nil, fileError(u.Path, err, "corrupt Parquet (%s)", where)
		}
		c.flat, c.rowLen = make([][]float32, len(fields)), make([]int, len(fields))
		if flat >= 0 {
			vals, rowLen, err := readFlatFloat32(pr, u.Index, &fr.Manifest.Fields[fields[flat]])
			if err != nil {
				return nil, fileError(u.Path, err, "reading %s", where)
			}
			c.flat[flat], c.rowLen[flat] = vals, rowLen
		}
		leaves = leaves[:0]
		for k, fi := range fields {
			if c.flat[k] == nil {
				leaves = appendLeaves(leaves, &fr.Manifest.Fields[fi])
			}
		}
		tbl, err := fr.ReadRowGroups(ctx, leaves, []int{u.Index})
		if err != nil {
			return nil, fileError(u.Path, err, "reading %s", where)
		}
		c.release = tbl.Release
		for k, fi := range fields {
			if c.flat[k] != nil {
				c.chunks = append(c.chunks, nil)
				continue
			}
			idx := tbl.Schema().FieldIndices(sc.Field(fi).Name)
			if len(idx) != 1 {
				tbl.Release()
				return nil, fileError(u.Path, nil, "reading %s: column %q not read", where, sc.Field(fi).Name)
			}
			c.chunks = append(c.chunks, tbl.Column(idx[0]).Data().Chunks())
		}

	case ArrowFile:
		r, err := ipc.NewFileReader(blobio.Section(f), ipc.WithAllocator(mem))
		if err != nil {
			return nil, fileError(u.Path, err, "corrupt or truncated Arrow IPC file")
		}
		defer r.Close()
		fields, err := resolve(r.Schema())
		if err != nil {
			return nil, err
		}
		c.names = fieldNames(r.Schema(), fields)
		rec, err := r.RecordBatchAt(u.Index)
		if err != nil {
			return nil, fileError(u.Path, err, "reading %s", where)
		}
		c.release = rec.Release
		for _, fi := range fields {
			c.chunks = append(c.chunks, []arrow.Array{rec.Column(fi)})
		}

	case ArrowStream:
		src := &eofSpy{r: bufio.NewReaderSize(blobio.Section(f), 1<<20)}
		// The limits keep a corrupt length from allocating more than the
		// file could hold.
		r, err := ipc.NewReader(src, ipc.WithAllocator(mem), ipc.WithMetadataSizeLimit(f.Size()), ipc.WithBodySizeLimit(f.Size()))
		if err != nil {
			return nil, fileError(u.Path, err, "corrupt or truncated Arrow IPC stream")
		}
		defer r.Release()
		fields, err := resolve(r.Schema())
		if err != nil {
			return nil, err
		}
		c.names = fieldNames(r.Schema(), fields)
		var recs []arrow.RecordBatch
		c.release = func() {
			for _, rec := range recs {
				rec.Release()
			}
		}
		c.chunks = make([][]arrow.Array, len(fields))
		for {
			rec, err := r.Read()
			if err == io.EOF && src.eof {
				c.release()
				return nil, fileError(u.Path, nil, "no end-of-stream marker after %d record batches (truncated Arrow IPC stream?)", len(recs))
			}
			if err == io.EOF {
				if n, _ := src.r.Read(make([]byte, 1)); n > 0 {
					c.release()
					return nil, fileError(u.Path, nil, "bytes after the end-of-stream marker of the Arrow IPC stream")
				}
				break
			}
			if err != nil {
				c.release()
				return nil, fileError(u.Path, err, "corrupt or truncated Arrow IPC stream after %d record batches", len(recs))
			}
			rec.Retain()
			recs = append(recs, rec)
			for i, fi := range fields {
				c.chunks[i] = append(c.chunks[i], rec.Column(fi))
			}
		}

	default:
		return nil, fileError(u.Path, nil, "unit of unknown format %v", u.Format)
	}
	if err := c.check(); err != nil {
		c.release()
		return nil, fileError(u.Path, err, "corrupt %s", where)
	}
	return c, nil
}

// check validates every chunk read against its buffers (arrow-go's
// array.Validate: each buffer holds what the length needs, a list's first
// and last offsets lie within its values; not ValidateFull, whose UTF-8
// check would quote a string's raw bytes where relabel names the row
// instead) and that every column has as many rows as the first: a decoder
// builds each array from the lengths a file states, and an Arrow record
// batch may give its columns lengths that disagree with one another or with
// the bytes behind them (arrow-go's record checks only that no column is
// shorter than the batch). A Parquet list read straight from its column
// chunk (flat) has no chunks and is checked as it is read.
func (c *columns) check() error {
	rows, first := int64(-1), 0
	for k, chunks := range c.chunks {
		if chunks == nil {
			continue
		}
		n := int64(0)
		for _, a := range chunks {
			if err := array.Validate(a); err != nil {
				return fmt.Errorf("column %q: %w", c.names[k], err)
			}
			n += int64(a.Len())
		}
		if rows >= 0 && n != rows {
			return fmt.Errorf("column %q has %d rows, column %q %d", c.names[k], n, c.names[first], rows)
		}
		if rows < 0 {
			rows, first = n, k
		}
	}
	return nil
}

// eofSpy records whether its reader came to the end of the file. arrow-go's
// ipc.Reader returns io.EOF both at the end-of-stream marker and when the
// bytes simply stop between two messages (a stream cut at a batch boundary);
// only in the second case has it asked for bytes past the end. r is a
// bufio.Reader, which returns io.EOF only with no data, so the flag is not
// set by a read that merely reaches the last byte.
type eofSpy struct {
	r   *bufio.Reader
	eof bool
}

func (s *eofSpy) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.eof = true
	}
	return n, err
}

// openParquet opens f's Parquet footer and the Arrow schema pqarrow makes
// of it, every Parquet read's one way in: the footer is read with readProps'
// bound, and the Arrow schema a writer stored in it is checked
// (storedArrowSchema) before pqarrow decodes it. The caller closes pr.
func openParquet(f blobio.File, path string, mem memory.Allocator, props pqarrow.ArrowReadProperties) (pr *file.Reader, fr *pqarrow.FileReader, err error) {
	pr, err = file.NewParquetReader(blobio.Section(f), file.WithReadProps(readProps(mem, f.Size())))
	if err != nil {
		return nil, nil, fileError(path, err, "corrupt or truncated Parquet")
	}
	if err := storedArrowSchema(pr.MetaData().KeyValueMetadata()); err != nil {
		pr.Close()
		return nil, nil, fileError(path, err, "the Parquet footer's Arrow schema")
	}
	if fr, err = pqarrow.NewFileReader(pr, props, mem); err != nil {
		pr.Close()
		return nil, nil, fileError(path, err, "Parquet schema")
	}
	return pr, fr, nil
}

// readProps are the Parquet reader properties: no page may claim more
// compressed bytes than the file holds (arrow-go allocates what a page header
// says before reading it).
func readProps(mem memory.Allocator, size int64) *parquet.ReaderProperties {
	p := parquet.NewReaderProperties(mem)
	p.MaxCompressedPageSize = max(1, min(p.GetMaxCompressedPageSize(), size))
	return p
}

// checkPageCRCs verifies the page checksums (where the writer stored them) of
// the column chunks of row group rg that will be read (pagecrc.go). It reads
// those chunks' bytes once more: the price of catching bit-rot in relabel's
// own process, since arrow-go's reader does not look at the checksums.
func checkPageCRCs(pr *file.Reader, rg int, leaves []int, r io.ReaderAt) error {
	md := pr.MetaData().RowGroup(rg)
	for _, j := range leaves {
		c, err := md.ColumnChunk(j)
		if err != nil {
			return fmt.Errorf("row group %d column chunk %d: %w", rg, j, err)
		}
		if err := verifyPageCRCs(r, chunkStart(c), c.TotalCompressedSize()); err != nil {
			return fmt.Errorf("row group %d column %q: %w", rg, c.PathInSchema().String(), err)
		}
	}
	return nil
}

// chunkStart is where a column chunk's first page lies: its dictionary page
// when it has one, else its first data page (a chunk of 0 rows may have a
// dictionary page and no data page, whose offset is then 0).
func chunkStart(c *metadata.ColumnChunkMetaData) int64 {
	start := c.DataPageOffset()
	if d := c.DictionaryPageOffset(); c.HasDictionaryPage() && d > 0 && (d < start || start == 0) {
		start = d
	}
	return start
}

// checkChunks checks that every column chunk of row group rg lies within the
// file: arrow-go allocates a chunk's length, as the footer gives it, before
// reading it, so a corrupt footer could otherwise ask for any amount.
func checkChunks(pr *file.Reader, rg int, size int64) error {
	md := pr.MetaData().RowGroup(rg)
	for j := 0; j < md.NumColumns(); j++ {
		c, err := md.ColumnChunk(j)
		if err != nil {
			return fmt.Errorf("row group %d column chunk %d: %w", rg, j, err)
		}
		start := chunkStart(c)
		if n := c.TotalCompressedSize(); start < int64(len(magicParquet)) || n < 0 || n > size-start {
			return fmt.Errorf("row group %d column chunk %d: %d bytes at %d, outside the file of %d bytes", rg, j, n, start, size)
		}
	}
	return nil
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

// A unit's row count is what its header says (an Arrow record batch's
// length), and a corrupt header can say billions over a few bytes of
// buffers: a 1 KB fuzzed Arrow stream sized 11 GB of features before its
// first row was read. So the readers size what they allocate by the
// buffers the chunks hold, which the file's size bounds, not by the count.

// presentBytes is the bytes of the chunks' buffers, children included: an
// upper bound on the rows they can hold (every id and label takes a byte
// or more, a dictionary-encoded one its index).
func presentBytes(chunks []arrow.Array) int64 {
	var n int64
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, c := range chunks {
		walk(c.Data())
	}
	return n
}

// presentValues is the float values the list chunks' value buffers hold.
func presentValues(chunks []arrow.Array) int {
	n := 0
	for _, c := range chunks {
		l, ok := c.(array.ListLike)
		if !ok {
			continue
		}
		d := l.ListValues().Data()
		if bufs := d.Buffers(); len(bufs) > 1 && bufs[1] != nil {
			if w := d.DataType().(arrow.FixedWidthDataType).BitWidth() / 8; w > 0 {
				n += bufs[1].Len() / w
			}
		}
	}
	return n
}

// readIDs fills r.IDs (and r.StrIDs), rejecting nulls and ids repeated
// within the unit.
func readIDs(r *schemas.Rows, u Unit, in schemas.Input, chunks []arrow.Array, n int64) error {
	n = min(n, presentBytes(chunks))
	r.IDs = make([]int64, 0, n)
	row := u.Offset
	switch in.IDKind {
	case schemas.IDInt64:
		seen := make(map[int64]int64, n)
		for _, chunk := range chunks {
			a := chunk.(*array.Int64)
			for i, v := range a.Int64Values() {
				if a.IsNull(i) {
					return rowError(u.Path, row, in.IDName, "null id")
				}
				if first, dup := seen[v]; dup {
					return DuplicateError(in.IDName, fmt.Sprint(v), u.Path, row, u.Path, first)
				}
				seen[v] = row
				r.IDs = append(r.IDs, v)
				row++
			}
		}
	case schemas.IDString:
		r.StrIDs = make([]string, 0, n)
		seen := make(map[string]int64, n)
		for _, chunk := range chunks {
			a := chunk.(array.StringLike)
			for i := 0; i < a.Len(); i++ {
				if a.IsNull(i) {
					return rowError(u.Path, row, in.IDName, "null id")
				}
				// Value points into an Arrow buffer released after reading.
				v := strings.Clone(a.Value(i))
				if !utf8.ValidString(v) {
					return rowError(u.Path, row, in.IDName, "id %q is not valid UTF-8", v)
				}
				if first, dup := seen[v]; dup {
					return DuplicateError(in.IDName, fmt.Sprintf("%q", v), u.Path, row, u.Path, first)
				}
				seen[v] = row
				r.StrIDs = append(r.StrIDs, v)
				r.IDs = append(r.IDs, schemas.Key(v))
				row++
			}
		}
	}
	return nil
}

// readFeatures fills r.Features and r.D; d is the required dimension, 0 for
// the unit's first row's.
func readFeatures(r *schemas.Rows, u Unit, in schemas.Input, chunks []arrow.Array, n int64, d int) error {
	row := u.Offset
	col := in.FeaturesName
	for _, chunk := range chunks {
		l := chunk.(array.ListLike)
		child := l.ListValues()
		for i := 0; i < l.Len(); i++ {
			if l.IsNull(i) {
				return rowError(u.Path, row, col, "null feature row")
			}
			start, end := l.ValueOffsets(i)
			if d == 0 {
				if d = int(end - start); d == 0 {
					return rowError(u.Path, row, col, "empty feature vector")
				}
			}
			if int(end-start) != d {
				return rowError(u.Path, row, col, "%d values, want dimension %d", end-start, d)
			}
			if r.Features == nil {
				r.Features = make([]float32, 0, min(int(n)*d, presentValues(chunks)))
			}
			if child.NullN() > 0 {
				for j := start; j < end; j++ {
					if child.IsNull(int(j)) {
						return rowError(u.Path, row, col, "null at dimension %d", j-start)
					}
				}
			}
			var bad int64 = -1
			switch c := child.(type) {
			case *array.Float32:
				vals := c.Float32Values()[start:end]
				r.Features = append(r.Features, vals...)
				bad = firstNonFinite(vals)
			case *array.Float64:
				for _, v := range c.Float64Values()[start:end] {
					r.Features = append(r.Features, float32(v))
				}
				if bad = firstNonFinite(r.Features[len(r.Features)-d:]); bad >= 0 {
					if v := c.Value(int(start + bad)); !math.IsNaN(v) && !math.IsInf(v, 0) {
						return rowError(u.Path, row, col, "%g at dimension %d overflows float32", v, bad)
					}
				}
			default:
				return rowError(u.Path, row, col, "values of type %s", child.DataType())
			}
			if bad >= 0 {
				v := r.Features[len(r.Features)-d+int(bad)]
				what := "NaN"
				if !math.IsNaN(float64(v)) {
					what = fmt.Sprint(v) // +Inf or -Inf
				}
				return rowError(u.Path, row, col, "%s at dimension %d", what, bad)
			}
			row++
		}
	}
	r.D = d
	return nil
}

// checkMagnitude is an error naming the first feature of r larger than max
// in absolute value (none when max <= 0): a finite value that would still
// make a float32 distance overflow, which the neighbour search could only
// report without naming the file or row.
func checkMagnitude(r *schemas.Rows, u Unit, col string, max float32) error {
	if max <= 0 {
		return nil
	}
	for i, x := range r.Features {
		if x > max || x < -max {
			return rowError(u.Path, u.Offset+int64(i/r.D), col, "%g at dimension %d: features are used unscaled (--no-standardise) and must lie within ±%.3g at dimension %d, or squared distances overflow float32", x, i%r.D, max, r.D)
		}
	}
	return nil
}

// firstNonFinite is the index of the first NaN or ±Inf of v, or -1: the
// exponent bits all set, checked without a conversion per value.
func firstNonFinite(v []float32) int64 {
	for i, x := range v {
		if math.Float32bits(x)&0x7f800000 == 0x7f800000 {
			return int64(i)
		}
	}
	return -1
}

// readLabels fills r.Labels and r.LabelOff.
func readLabels(r *schemas.Rows, u Unit, in schemas.Input, chunks []arrow.Array, n int64, m *ClassMap) error {
	n = min(n, presentBytes(chunks))
	r.LabelOff = make([]int32, 1, n+1)
	r.Labels = make([]int32, 0, n)
	row := u.Offset
	col := in.LabelName
	for _, chunk := range chunks {
		vals := chunk
		var list array.ListLike
		if in.Multi {
			list = chunk.(array.ListLike)
			vals = list.ListValues()
		}
		label, err := m.Labeler(vals)
		if err != nil {
			return &InputError{Path: u.Path, Row: -1, Column: col, Msg: err.Error()}
		}
		for i := 0; i < chunk.Len(); i++ {
			switch {
			case !in.Multi && chunk.IsNull(i):
				r.Labels = append(r.Labels, schemas.Unlabelled)
			case !in.Multi:
				c, bad := label(i)
				if bad != "" {
					return rowError(u.Path, row, col, "%s", bad)
				}
				r.Labels = append(r.Labels, c)
			case list.IsValid(i):
				start, end := list.ValueOffsets(i)
				if start == end {
					r.Labels = append(r.Labels, schemas.EmptyList)
				}
				for j := int(start); j < int(end); j++ {
					if vals.IsNull(j) {
						// A missing annotation, kept so that the
						// output gives the list back as it came.
						r.Labels = append(r.Labels, schemas.Unlabelled)
						continue
					}
					c, bad := label(j)
					if bad != "" {
						return rowError(u.Path, row, col, "annotation %d: %s", j-int(start), bad)
					}
					r.Labels = append(r.Labels, c)
				}
			}
			if len(r.Labels) > math.MaxInt32 {
				return rowError(u.Path, row, col, "more than 2^31 annotations in one unit")
			}
			r.LabelOff = append(r.LabelOff, int32(len(r.Labels)))
			row++
		}
	}
	return nil
}

// sortedKeys returns the keys of set, sorted.
func sortedKeys(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readFlatFloat32 reads column field of row group rg, where it is a list
// (list, large_list or fixed_size_list) of float32 with no null and no
// empty list in it, straight from its column chunk: its values in order and
// the length of every row. Anything else (another type, a null list or
// value, an empty or ragged row) returns nil values, for the caller to read
// the column through pqarrow, whose arrays say where and what it is.
//
// pqarrow's list reader was most of reading an embedding shard: it grows
// its level and value buffers by doubling, converts every dictionary value
// through its validity checks and builds the Arrow list arrays, which the
// reader then copies into one slice. The column chunk reader (the same
// decoders, dictionary pages included) fills that slice directly.
func readFlatFloat32(pr *file.Reader, rg int, field *pqarrow.SchemaField) ([]float32, int, error) {
	switch field.Field.Type.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST:
	default:
		return nil, 0, nil
	}
	if len(field.Children) != 1 || len(field.Children[0].Children) != 0 || field.Children[0].Field.Type.ID() != arrow.FLOAT32 {
		return nil, 0, nil
	}
	leaf := field.Children[0].ColIndex
	md, err := pr.MetaData().RowGroup(rg).ColumnChunk(leaf)
	if err != nil {
		return nil, 0, err
	}
	col, err := pr.RowGroup(rg).Column(leaf)
	if err != nil {
		return nil, 0, err
	}
	defer col.Close()
	cr, ok := col.(*file.Float32ColumnChunkReader)
	if !ok || col.Descriptor().MaxRepetitionLevel() != 1 {
		return nil, 0, nil
	}
	total := md.NumValues() // levels: one a value, null or empty list
	if total <= 0 {
		return nil, 0, nil
	}
	// The levels are decoded a batch at a time into buffers reused for
	// every batch, each row's length checked as it ends; the values go
	// straight into vals, sized first for a chunk of twice the values its
	// compressed bytes hold as plain floats (checkChunks bounds those by the
	// file) and grown with what the pages decode, not with the footer's
	// count, which a damaged file could make as large as it likes.
	batchLen := min(total, flatBatch)
	def, rep := make([]int16, batchLen), make([]int16, batchLen)
	vals := make([]float32, min(total, max(batchLen, md.TotalCompressedSize()/flatBytesPerValue)))
	var levels, values int64
	rowLen, cur := 0, 0 // the first row's values; the current row's so far
	for levels < total {
		batch := min(total-levels, batchLen)
		if need := values + batch; need > int64(len(vals)) {
			vals = append(vals, make([]float32, max(need, 2*int64(len(vals)))-int64(len(vals)))...)
		}
		n, v, err := cr.ReadBatch(batch, vals[values:values+batch], def, rep)
		if err != nil {
			return nil, 0, err
		}
		if n == 0 {
			break
		}
		// Every level a value: no null list, empty list or null value.
		if int64(v) != n {
			return nil, 0, nil
		}
		for j, r := range rep[:n] {
			switch first := levels == 0 && j == 0; {
			case first && r != 0:
				return nil, 0, nil // the first level continues no row
			case first || r != 0:
			case rowLen == 0: // a level starting a row ends the one before
				rowLen, cur = cur, 0
			case cur != rowLen:
				return nil, 0, nil
			default:
				cur = 0
			}
			cur++
		}
		levels += n
		values += int64(v)
	}
	if levels != total || (rowLen != 0 && cur != rowLen) {
		return nil, 0, nil
	}
	if rowLen == 0 {
		rowLen = cur
	}
	return vals[:values], rowLen, nil
}

// flatBatch is the levels readFlatFloat32 decodes at a time (a variable
// for the test of its growing buffers).
var flatBatch int64 = 1 << 16

// flatBytesPerValue: readFlatFloat32 first sizes its values for a chunk's
// compressed bytes / flatBytesPerValue (a variable for the same test).
var flatBytesPerValue int64 = 2

// flatFeatures is readFeatures for a column readFlatFloat32 read: n rows of
// rowLen values each, the same checks and errors.
func flatFeatures(r *schemas.Rows, u Unit, in schemas.Input, vals []float32, rowLen int, n int64, d int) error {
	col := in.FeaturesName
	if int64(len(vals)) != n*int64(rowLen) {
		return fileError(u.Path, nil, "column %q holds %d values, not %d rows of %d", col, len(vals), n, rowLen)
	}
	if d == 0 {
		d = rowLen
	}
	if rowLen != d {
		return rowError(u.Path, u.Offset, col, "%d values, want dimension %d", rowLen, d)
	}
	if bad := firstNonFinite(vals); bad >= 0 {
		v := vals[bad]
		what := "NaN"
		if !math.IsNaN(float64(v)) {
			what = fmt.Sprint(v) // +Inf or -Inf
		}
		return rowError(u.Path, u.Offset+bad/int64(d), col, "%s at dimension %d", what, bad%int64(d))
	}
	r.Features, r.D = vals, d
	return nil
}
