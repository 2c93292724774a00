package annotio

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
	// Rows is its number of rows (a stream's too: shardio walks its
	// message headers).
	Rows int64
}

// scanFile reads path's schema and cuts it into units (those of 0 rows left
// out), through shardio's guarded footer walk.
func scanFile(ctx context.Context, path string, mem memory.Allocator) (*arrow.Schema, []Unit, error) {
	sc, _, us, err := shardio.FileUnits(ctx, path, mem)
	if err != nil {
		return nil, nil, tag(err)
	}
	units := make([]Unit, len(us))
	for i, u := range us {
		units[i] = Unit{Path: u.Path, Format: u.Format, Index: u.Index, Offset: u.Offset, Rows: u.Rows}
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
// format allows (Parquet), through shardio's reader: annotation shards get
// the item shards' guards (chunk bounds, page checksums, stream end marker).
func readColumns(ctx context.Context, u Unit, names []string, mem memory.Allocator) (*chunks, error) {
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
	su := shardio.Unit{Path: u.Path, Format: u.Format, Index: u.Index, Offset: u.Offset, Rows: u.Rows}
	cols, release, err := shardio.ReadColumns(ctx, su, mem, pick)
	if err != nil {
		return nil, tag(err)
	}
	return &chunks{cols: cols, release: release}, nil
}

// tag names annotio in the message of an InputError that shardio's shared
// reader made.
func tag(err error) error {
	var ie *InputError
	if errors.As(err, &ie) && ie.Pkg == "" {
		ie.Pkg = Pkg
	}
	return err
}
