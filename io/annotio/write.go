package annotio

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// AnnotatorRow is one row of the annotators output.
type AnnotatorRow struct {
	// Key is the annotator's id (int64 ids) or key (string ids, Name).
	// Anonymous marks the labels no annotation named: a null id.
	Key       int64
	Name      string
	Anonymous bool
	Labels    int64
	Accuracy  float64
	Lift      float64
	Misdir    float64
	Diagonal  []float64
	Spammer   bool
	Adversary bool
}

// Columns of the annotators output.
const (
	ColLabels      = "labels"
	ColAccuracy    = "accuracy"
	ColLift        = "lift"
	ColMisdirected = "misdirected"
	ColDiagonal    = "diagonal"
	ColSpammer     = "spammer"
	ColAdversary   = "adversary"
)

// AnnotatorsSchema is the annotators output's schema: annotator (int64 or
// utf8, null for labels no annotation named), labels (how many it gave),
// accuracy, lift, misdirected, diagonal (fixed_size_list<float64>[C]: its
// matrix's diagonal), spammer, adversary (see transforms/crowd Summary).
func AnnotatorsSchema(kind schemas.IDKind, c int) *arrow.Schema {
	var id arrow.DataType = arrow.PrimitiveTypes.Int64
	if kind == schemas.IDString {
		id = arrow.BinaryTypes.String
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: ColAnnotator, Type: id, Nullable: true},
		{Name: ColLabels, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColAccuracy, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColLift, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColMisdirected, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColDiagonal, Type: arrow.FixedSizeListOf(int32(c), arrow.PrimitiveTypes.Float64)},
		{Name: ColSpammer, Type: arrow.FixedWidthTypes.Boolean},
		{Name: ColAdversary, Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
}

// WriteAnnotators writes the annotators output to path in format, one
// record batch (row group) for all rows.
func WriteAnnotators(ctx context.Context, fs blobio.FS, path string, format shardio.Format, kind schemas.IDKind, c int, rows []AnnotatorRow) error {
	mem := memory.DefaultAllocator
	sc := AnnotatorsSchema(kind, c)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, r := range rows {
		switch {
		case r.Anonymous:
			b.Field(0).AppendNull()
		case kind == schemas.IDString:
			b.Field(0).(*array.StringBuilder).Append(r.Name)
		default:
			b.Field(0).(*array.Int64Builder).Append(r.Key)
		}
		b.Field(1).(*array.Int64Builder).Append(r.Labels)
		b.Field(2).(*array.Float64Builder).Append(r.Accuracy)
		b.Field(3).(*array.Float64Builder).Append(r.Lift)
		b.Field(4).(*array.Float64Builder).Append(r.Misdir)
		lb := b.Field(5).(*array.FixedSizeListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.Float64Builder)
		if len(r.Diagonal) != c {
			return fmt.Errorf("annotio: writing %s: a diagonal of %d classes, want %d", path, len(r.Diagonal), c)
		}
		vb.AppendValues(r.Diagonal, nil)
		b.Field(6).(*array.BooleanBuilder).Append(r.Spammer)
		b.Field(7).(*array.BooleanBuilder).Append(r.Adversary)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeRecord(ctx, fs, path, format, sc, rec)
}

// WriteAnnotations writes long-format annotations (id, annotator, label
// int32; string ids or annotators where strIDs or names are not nil), one
// row group per rowsPerGroup rows: for tests and examples.
func WriteAnnotations(ctx context.Context, fs blobio.FS, path string, format shardio.Format, ids []int64, strIDs []string, annotators []int64, names []string, labels []int32, rowsPerGroup int) error {
	mem := memory.DefaultAllocator
	idType, annType := arrow.DataType(arrow.PrimitiveTypes.Int64), arrow.DataType(arrow.PrimitiveTypes.Int64)
	if strIDs != nil {
		idType = arrow.BinaryTypes.String
	}
	if names != nil {
		annType = arrow.BinaryTypes.String
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: ColID, Type: idType}, {Name: ColAnnotator, Type: annType}, {Name: ColLabel, Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	n := len(labels)
	if rowsPerGroup <= 0 {
		rowsPerGroup = max(n, 1)
	}
	for lo := 0; lo < n; lo += rowsPerGroup {
		for k := lo; k < min(n, lo+rowsPerGroup); k++ {
			if strIDs != nil {
				b.Field(0).(*array.StringBuilder).Append(strIDs[k])
			} else {
				b.Field(0).(*array.Int64Builder).Append(ids[k])
			}
			if names != nil {
				b.Field(1).(*array.StringBuilder).Append(names[k])
			} else {
				b.Field(1).(*array.Int64Builder).Append(annotators[k])
			}
			b.Field(2).(*array.Int32Builder).Append(labels[k])
		}
		recs = append(recs, b.NewRecordBatch())
	}
	return writeRecord(ctx, fs, path, format, sc, recs...)
}

// writeRecord writes recs to path through shardio's writers (Parquet with
// page checksums, as every Parquet file relabel writes).
func writeRecord(ctx context.Context, fs blobio.FS, path string, format shardio.Format, sc *arrow.Schema, recs ...arrow.RecordBatch) error {
	return shardio.WriteRecords(ctx, fs, path, format, sc, memory.DefaultAllocator, recs...)
}
