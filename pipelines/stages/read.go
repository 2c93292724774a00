package stages

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// readFn reads one unit of work (a Parquet row group, an Arrow record batch)
// into a batch of rows; validation errors name file, row and column.
type readFn struct {
	// The serializable part of shardio.ReadOptions (its allocator is not).
	Columns    schemas.Columns
	D, Classes int
	ClassNames []string
	MaxAbs     float32
	// Again marks a second read of the same units (ReadAgain): not counted
	// in rows_read, not logged.
	Again bool
}

func (f *readFn) ProcessElement(ctx context.Context, u shardio.Unit, emit func(schemas.Rows)) error {
	opts := shardio.ReadOptions{Columns: f.Columns, D: f.D, Classes: f.Classes, ClassNames: f.ClassNames, MaxAbsFeature: f.MaxAbs}
	r, err := shardio.ReadUnit(ctx, u, opts)
	if err != nil {
		return err
	}
	if !f.Again {
		rowsRead.Inc(ctx, int64(r.Len()))
		progress.ReadRows(u.Path, r.Offset, r.Offset+int64(r.Len()))
	}
	emit(*r)
	return nil
}

var rowsRead = beam.NewCounter("relabel", "rows_read")

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*readFn)(nil)).Elem())
	register.Emitter1[schemas.Rows]()
}

// Read reads the units (PCollection<shardio.Unit>) into PCollection<schemas.Rows>.
func Read(s beam.Scope, units beam.PCollection, opts shardio.ReadOptions) beam.PCollection {
	s = s.Scope("relabel.Read")
	return beam.ParDo(s, &readFn{Columns: opts.Columns, D: opts.D, Classes: opts.Classes, ClassNames: opts.ClassNames, MaxAbs: opts.MaxAbsFeature}, units)
}

// ReadAgain is Read for a second pass over the same units, for a stage that
// can only start once the whole first pass is done (ivf's probe waits for
// the k-means model): reading the shards again costs less than a runner
// holding every row until then, which the embedded runner does in memory,
// several copies over.
func ReadAgain(s beam.Scope, units beam.PCollection, opts shardio.ReadOptions) beam.PCollection {
	s = s.Scope("relabel.ReadAgain")
	return beam.ParDo(s, &readFn{Columns: opts.Columns, D: opts.D, Classes: opts.Classes, ClassNames: opts.ClassNames, MaxAbs: opts.MaxAbsFeature, Again: true}, units)
}
