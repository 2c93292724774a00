package shardio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// ReadOptions configures Scan, ReadUnit and the label scans. Apart from Mem it
// is plain data, so that it can be a DoFn's serialized configuration.
type ReadOptions struct {
	// Columns names the input columns. Optional, default id, features and
	// label (or labels, a list of annotations, when there is no label column).
	Columns schemas.Columns
	// D is the feature dimension every row must have. Optional, default 0:
	// the dimension of the first shard (Scan records it in every Unit.D).
	D int
	// Classes is the number of classes C of integer labels, which must lie in
	// [0, C). Required to read integer labels (ScanNumClasses finds one).
	Classes int
	// ClassNames is the class set of string labels, sorted and distinct;
	// class i is ClassNames[i]. Required to read string labels
	// (ScanClassNames collects it).
	ClassNames []string
	// Mem allocates the Arrow buffers read. Optional, default
	// memory.DefaultAllocator. Not serialized.
	Mem memory.Allocator `json:"-"`
	// MaxAbsFeature, when > 0, is the largest absolute feature value
	// ReadUnit accepts; a larger one is an error naming the row. Optional,
	// default 0: any finite value. Features used unscaled in float32
	// distances set it to MaxAbsForDistances(D), so that no squared
	// distance overflows.
	MaxAbsFeature float32 `json:",omitempty"`
}

// MaxAbsForDistances is the largest feature magnitude for which every
// squared Euclidean distance (and every squared norm and dot product) of
// d-dimensional float32 vectors stays finite in float32: d terms of at
// most (2m)^2 each sum to at most MaxFloat32.
func MaxAbsForDistances(d int) float32 {
	return float32(math.Sqrt(math.MaxFloat32 / (4 * float64(max(d, 1)))))
}

func (o *ReadOptions) mem() memory.Allocator {
	if o.Mem == nil {
		return memory.DefaultAllocator
	}
	return o.Mem
}

// Shard is one input file, its schema checked.
type Shard struct {
	Path   string
	Format Format
	// Rows is the number of rows (of an Arrow IPC stream too: Scan walks
	// its message headers). A shard of 0 rows has no Units.
	Rows int64
	// Input is where the columns are and how they are typed.
	Input schemas.Input
	// D is the feature dimension of all shards.
	D     int
	Units []Unit
}

// Unit is one unit of work: a Parquet row group, an Arrow IPC record batch,
// or a whole Arrow IPC stream. It is plain data (a PCollection element).
// Units of 0 rows are never made.
type Unit struct {
	Path   string
	Format Format
	// Index is the row group or record batch number (0 for a stream).
	Index int
	// Offset is the row number of its first row within the shard.
	Offset int64
	// Rows is its number of rows; -1 when unknown (ReadUnit then takes
	// what the unit holds).
	Rows int64
	// D is the feature dimension its rows must have (0: its first row's).
	D int
}

// Scan expands pattern (a blobio glob, such as data/*.parquet or
// gs://bucket/part-*.arrow), opens each file's footer and schema, checks the
// columns against the data contract and that all shards agree (id, label and
// feature types, dimension), and returns the shards with their units of work.
// It reads no data, except, for variable-size list features with no
// ReadOptions.D, the first unit's features to learn the dimension.
//
// A file of 0 rows is left out, not an error (a writer that had nothing for
// one partition leaves such files), though its schema is checked like the
// others'; ScanFiles also says which files were left out, for the caller to
// report. When every file is empty, Scan fails.
func Scan(ctx context.Context, pattern string, opts ReadOptions) ([]Shard, error) {
	shards, _, err := ScanFiles(ctx, pattern, opts)
	return shards, err
}

// Skipped is an input file that Scan left out, and why.
type Skipped struct {
	Path string
	Why  string
}

func (s Skipped) String() string { return s.Path + ": " + s.Why }

// ScanFiles is Scan that also returns the files it left out (those of 0
// rows), in path order, so that the caller can tell the user.
func ScanFiles(ctx context.Context, pattern string, opts ReadOptions) ([]Shard, []Skipped, error) {
	fs, err := blobio.For(pattern)
	if err != nil {
		return nil, nil, fmt.Errorf("shardio: %w", err)
	}
	paths, err := fs.Glob(ctx, pattern)
	if err != nil {
		return nil, nil, fmt.Errorf("shardio: %w", err)
	}
	if len(paths) == 0 {
		if isLocalDir(pattern) {
			return nil, nil, fmt.Errorf("shardio: %s is a directory: give its files, as a glob such as %s", pattern, filepath.Join(pattern, "*.parquet"))
		}
		return nil, nil, fmt.Errorf("shardio: no files match %s", pattern)
	}
	return scanPaths(ctx, fs, paths, pattern, opts)
}

// ScanPaths is ScanFiles over a list of files instead of a glob: the data
// files an Iceberg table's scan planned (io/icebergio), in the order given.
// Every path must be of one file system (all local, or all gs://).
func ScanPaths(ctx context.Context, paths []string, opts ReadOptions) ([]Shard, []Skipped, error) {
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("shardio: no files to scan")
	}
	fs, err := blobio.For(paths[0])
	if err != nil {
		return nil, nil, fmt.Errorf("shardio: %w", err)
	}
	return scanPaths(ctx, fs, paths, fmt.Sprintf("the %d planned files", len(paths)), opts)
}

func scanPaths(ctx context.Context, fs blobio.FS, paths []string, pattern string, opts ReadOptions) ([]Shard, []Skipped, error) {
	var err error
	all := make([]Shard, len(paths))
	for i, p := range paths {
		if all[i], err = scanShard(ctx, fs, p, &opts); err != nil {
			return nil, nil, err
		}
	}
	var shards []Shard
	var skipped []Skipped
	for _, s := range all {
		if len(s.Units) == 0 {
			skipped = append(skipped, Skipped{Path: s.Path, Why: "no rows, skipped"})
		} else {
			shards = append(shards, s)
		}
	}
	if len(shards) == 0 {
		if len(all) == 1 {
			return nil, nil, fileError(all[0].Path, nil, "no rows")
		}
		return nil, nil, fmt.Errorf("shardio: no rows in any of the %d files matching %s", len(all), pattern)
	}
	if err := agree(ctx, all, shards, &opts); err != nil {
		return nil, nil, err
	}
	return shards, skipped, nil
}

// agree checks that the shards (all, empty ones included) have one layout
// and one dimension, and records the dimension in every shard and unit of
// shards (those with rows). Integer labels of int32 and int64 shards are
// both read as int64: a run may mix them (the writer of one partition chose
// another width), and the output, of one type for all shards, is int64.
func agree(ctx context.Context, all, shards []Shard, opts *ReadOptions) error {
	first := all[0].Input
	widen := false
	for _, s := range all[1:] {
		in := s.Input
		switch {
		case in.IDKind != first.IDKind:
			return &InputError{Path: s.Path, Row: -1, Column: in.IDName,
				Msg: fmt.Sprintf("ids are %s, but %s has %s ids", in.IDKind, all[0].Path, first.IDKind)}
		case in.Multi != first.Multi:
			return &InputError{Path: s.Path, Row: -1, Column: in.LabelName,
				Msg: fmt.Sprintf("the label column %q of %s is of another form (one label or a list of annotations)", first.LabelName, all[0].Path)}
		case in.LabelKind != first.LabelKind && (in.LabelKind == schemas.LabelString || first.LabelKind == schemas.LabelString):
			return &InputError{Path: s.Path, Row: -1, Column: in.LabelName,
				Msg: fmt.Sprintf("labels are %s, but %s has %s labels", in.LabelKind, all[0].Path, first.LabelKind)}
		case in.LabelKind != first.LabelKind:
			widen = true
		}
	}
	if widen {
		for i := range shards {
			shards[i].Input.LabelKind = schemas.LabelInt64
		}
	}
	d, from := opts.D, "ReadOptions.D"
	for _, s := range all {
		if s.Input.D == 0 {
			continue
		}
		if d == 0 {
			d, from = s.Input.D, s.Path
		} else if s.Input.D != d {
			return &InputError{Path: s.Path, Row: -1, Column: s.Input.FeaturesName,
				Msg: fmt.Sprintf("dimension %d, want %d (from %s)", s.Input.D, d, from)}
		}
	}
	if d == 0 {
		// Only variable-size lists: the first row says.
		var err error
		if d, err = firstDim(ctx, shards[0], opts); err != nil {
			return err
		}
	}
	for i := range shards {
		shards[i].D = d
		for j := range shards[i].Units {
			shards[i].Units[j].D = d
		}
	}
	return nil
}

// scanShard reads one file's schema and its units.
func scanShard(ctx context.Context, fs blobio.FS, path string, opts *ReadOptions) (s Shard, err error) {
	defer corrupt(path, &err)
	return scanShardUnguarded(ctx, fs, path, opts)
}

func scanShardUnguarded(ctx context.Context, fs blobio.FS, path string, opts *ReadOptions) (Shard, error) {
	s := Shard{Path: path}
	sc, format, rows, err := fileLayout(ctx, fs, path, opts.mem())
	if err != nil {
		return s, err
	}
	s.Format = format
	if s.Input, err = schemas.ResolveInput(sc, opts.Columns); err != nil {
		var ce *schemas.ColumnError
		if errors.As(err, &ce) && sc.FieldIndices(schemas.ColCleanLabel) != nil {
			// A glob that also matches an earlier run's output (say
			// data/*.parquet with the output in data/): say so, rather
			// than that a column is missing.
			return s, &InputError{Path: path, Row: -1, Msg: fmt.Sprintf("an output of relabel run (it has a %q column), not an input: the input glob matches relabel's own output files; narrow it to the input files", schemas.ColCleanLabel), Err: err}
		}
		if errors.As(err, &ce) {
			return s, &InputError{Path: path, Row: -1, Column: ce.Column, Msg: ce.Msg, Err: err}
		}
		return s, fileError(path, err, "schema")
	}
	s.Units = unitsOf(path, format, rows)
	for _, u := range s.Units {
		s.Rows += u.Rows
	}
	return s, nil
}

// FileUnits opens path (local or gs://), checks its footer the way Scan does
// (for Arrow IPC, relabel's own walk bounds the schema before arrow-go
// decodes it) and returns its Arrow schema, format and units of work, those
// of 0 rows left out. Unlike Scan it knows nothing of the item columns'
// contract: io/annotio cuts annotation shards with it, so that every file
// relabel reads gets the same guards.
func FileUnits(ctx context.Context, path string, mem memory.Allocator) (sc *arrow.Schema, format Format, units []Unit, err error) {
	defer corrupt(path, &err)
	fs, err := blobio.For(path)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("shardio: %w", err)
	}
	sc, format, rows, err := fileLayout(ctx, fs, path, mem)
	if err != nil {
		return nil, 0, nil, err
	}
	return sc, format, unitsOf(path, format, rows), nil
}

// unitsOf cuts a file of units of rows rows each into Units, leaving out
// those of 0 rows (an empty row group or batch is no work).
func unitsOf(path string, format Format, rows []int64) []Unit {
	var units []Unit
	off := int64(0)
	for i, n := range rows {
		if n == 0 {
			continue
		}
		units = append(units, Unit{Path: path, Format: format, Index: i, Offset: off, Rows: n})
		off += n
	}
	return units
}

// fileLayout reads one file's format, schema and rows per unit (row group,
// record batch, or the whole stream).
func fileLayout(ctx context.Context, fs blobio.FS, path string, mem memory.Allocator) (sc *arrow.Schema, format Format, rows []int64, err error) {
	f, err := fs.Open(ctx, path)
	if err != nil {
		return nil, 0, nil, fileError(path, err, "open")
	}
	defer f.Close()
	head := make([]byte, min(f.Size(), 8))
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, 0, nil, fileError(path, err, "read")
	}
	if format, err = detect(head); err != nil {
		return nil, 0, nil, fileError(path, nil, "%v", err)
	}
	switch format {
	case Parquet:
		pr, fr, err := openParquet(f, path, mem, pqarrow.ArrowReadProperties{})
		if err != nil {
			return nil, 0, nil, err
		}
		defer pr.Close()
		if sc, err = fr.Schema(); err != nil {
			return nil, 0, nil, fileError(path, err, "Parquet schema")
		}
		for i := 0; i < pr.NumRowGroups(); i++ {
			rows = append(rows, pr.MetaData().RowGroup(i).NumRows())
		}
	case ArrowFile:
		// relabel's own footer walk first: it bounds the schema arrow-go
		// will decode (checkSchema).
		if rows, err = ipcBatchRows(f, f.Size()); err != nil {
			return nil, 0, nil, fileError(path, err, "corrupt or truncated Arrow IPC file")
		}
		r, err := ipc.NewFileReader(blobio.Section(f), ipc.WithAllocator(mem))
		if err != nil {
			return nil, 0, nil, fileError(path, err, "corrupt or truncated Arrow IPC file")
		}
		defer r.Close()
		sc = r.Schema()
		if len(rows) != r.NumRecords() {
			return nil, 0, nil, fileError(path, nil, "corrupt Arrow IPC file: %d record batches in the footer, %d read", r.NumRecords(), len(rows))
		}
	case ArrowStream:
		batches, err := streamBatchRows(f, f.Size()) // first: it bounds the schema (checkSchema)
		if err != nil {
			return nil, 0, nil, fileError(path, err, "corrupt or truncated Arrow IPC stream")
		}
		r, err := ipc.NewReader(bufio.NewReader(blobio.Section(f)), ipc.WithAllocator(mem), ipc.WithMetadataSizeLimit(f.Size()))
		if err != nil {
			return nil, 0, nil, fileError(path, err, "corrupt or truncated Arrow IPC stream")
		}
		sc = r.Schema()
		r.Release()
		// A stream is read whole (it has no footer to seek by): one unit.
		n := int64(0)
		for _, b := range batches {
			n += b
		}
		rows = []int64{n}
	}
	return sc, format, rows, nil
}

// firstDim reads the first unit's features to find the dimension of its first
// non-null row.
func firstDim(ctx context.Context, s Shard, opts *ReadOptions) (int, error) {
	u := s.Units[0]
	if u.Format == Parquet {
		if d, err := firstDimParquet(ctx, s, opts); d > 0 || err != nil {
			return d, err
		}
	}
	c, err := readColumns(ctx, u, opts, func(in schemas.Input) []int { return []int{in.Features} }, 0)
	if err != nil {
		return 0, err
	}
	defer c.release()
	if c.flat != nil && c.flat[0] != nil {
		return c.rowLen[0], nil
	}
	for _, chunk := range c.chunks[0] {
		l := chunk.(array.ListLike)
		for i := 0; i < l.Len(); i++ {
			if l.IsValid(i) {
				start, end := l.ValueOffsets(i)
				if end == start {
					return 0, rowError(u.Path, u.Offset+int64(i), s.Input.FeaturesName, "empty feature vector")
				}
				return int(end - start), nil
			}
		}
	}
	return 0, fileError(u.Path, nil, "no non-null features in its first unit to take the dimension from")
}

// firstDim's batch: the rows firstDimParquet decodes at a time.
const firstDimBatch = 64

// firstDimParquet is firstDim of a Parquet shard read a batch of rows at a
// time, its pages decoded as far as its first non-null row: reading the
// whole unit for one row's length decoded every page of a table's 60,000-row
// data file before an incremental run had read anything. 0 and no error:
// not found this way (the whole read then says why).
func firstDimParquet(ctx context.Context, s Shard, opts *ReadOptions) (d int, err error) {
	u := s.Units[0]
	defer corrupt(u.Path, &err)
	fs, err := blobio.For(u.Path)
	if err != nil {
		return 0, nil
	}
	f, err := fs.Open(ctx, u.Path)
	if err != nil {
		return 0, nil
	}
	defer f.Close()
	mem := opts.mem()
	pr, fr, err := openParquet(f, u.Path, mem, pqarrow.ArrowReadProperties{BatchSize: firstDimBatch})
	if err != nil {
		return 0, nil
	}
	defer pr.Close()
	if u.Index >= pr.NumRowGroups() || checkChunks(pr, u.Index, f.Size()) != nil {
		return 0, nil
	}
	fi := s.Input.Features
	if fi < 0 || fi >= len(fr.Manifest.Fields) {
		return 0, nil
	}
	rr, err := fr.GetRecordReader(ctx, appendLeaves(nil, &fr.Manifest.Fields[fi]), []int{u.Index})
	if err != nil {
		return 0, nil
	}
	defer rr.Release()
	row := u.Offset
	for rr.Next() {
		l, ok := rr.Record().Column(0).(array.ListLike)
		if !ok {
			return 0, nil
		}
		for i := 0; i < l.Len(); i++ {
			if l.IsValid(i) {
				start, end := l.ValueOffsets(i)
				if end == start {
					return 0, rowError(u.Path, row+int64(i), s.Input.FeaturesName, "empty feature vector")
				}
				return int(end - start), nil
			}
		}
		row += int64(l.Len())
	}
	return 0, nil
}

// corrupt turns a panic inside a third-party decoder into an error naming
// the file: arrow-go's flatbuffers and Thrift decoding index bytes they never
// bounds-checked, and fuzzing (FuzzArrowFile) found footers that make them
// panic. A corrupt shard must fail the run with its name, not crash it.
func corrupt(path string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("shardio: %s: corrupt file (%v)", path, r)
	}
}

// isLocalDir reports whether pattern names a local directory (no scheme, no
// glob characters).
func isLocalDir(pattern string) bool {
	if strings.Contains(pattern, "://") && !strings.HasPrefix(pattern, "file://") {
		return false
	}
	st, err := os.Stat(strings.TrimPrefix(pattern, "file://"))
	return err == nil && st.IsDir()
}
