package resultio

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// ReportSuffix names the report relabel run's writer leaves beside each
// output shard in its temporary directory: the shard's name + ReportSuffix.
const ReportSuffix = ".report.json"

// ShardOptions says how WriteShard writes an output shard (see
// shardio.WriteShard).
type ShardOptions struct {
	Format     shardio.Format
	Meta       map[string]string
	LabelKind  schemas.LabelKind
	ClassNames []string
	IDKind     schemas.IDKind
	// Mem allocates the Arrow buffers. Optional: nil is shardio.WriteShard's
	// default (a worker's DoFn has no allocator to pass).
	Mem memory.Allocator
}

// WriteShard writes batches as the output shard name in dir (local or any
// blobio path) and report, as JSON, beside it (name + ReportSuffix): what
// relabel run's writer stage leaves for the commit to rename into place.
func WriteShard(ctx context.Context, dir, name string, batches []*schemas.Cleaned, report any, o ShardOptions) error {
	fsys, err := blobio.For(dir)
	if err != nil {
		return fmt.Errorf("resultio: %w", err)
	}
	if err := shardio.WriteShard(ctx, fsys, blobio.Join(dir, name), o.Format, batches, o.Meta, o.LabelKind, o.ClassNames, o.IDKind, o.Mem); err != nil {
		return err
	}
	b, err := json.Marshal(report)
	if err != nil {
		return fmt.Errorf("resultio: report of %s: %w", name, err)
	}
	if err := blobio.WriteFile(ctx, fsys, blobio.Join(dir, name+ReportSuffix), b); err != nil {
		return fmt.Errorf("resultio: %w", err)
	}
	return nil
}
