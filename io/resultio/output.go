package resultio

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// Output is an output directory of relabel run read whole: one entry per row,
// rows in file order (the shards by name, .arrow before .parquet), labels as
// class indices.
type Output struct {
	// Paths are the shards read.
	Paths []string
	// IDs are the rows' int64 ids, nil when the ids are strings (StrIDs).
	IDs    []int64
	StrIDs []string
	// Given, GivenOff are the given labels: row i's are
	// Given[GivenOff[i]:GivenOff[i+1]], none for an unlabelled row, several
	// (the annotations) when Multi. Null annotations are left out.
	Given, GivenOff []int32
	// Multi says the given labels are a list column (labels).
	Multi bool
	// Clean is the clean label, CleanProb its probability.
	Clean     []int32
	CleanProb []float32
	// GivenProb is the probability of the given label, NaN where null.
	GivenProb []float32
	// Changed says the clean label differs from the given one.
	Changed []bool
	// ClassNames is the class set of string labels, nil for integer labels.
	ClassNames []string
	// Classes is the number of classes: len(ClassNames) for string labels,
	// else the run's classes option from the metadata, 0 where not recorded.
	Classes int
}

// Len is the number of rows.
func (o *Output) Len() int { return len(o.Clean) }

// AnnotatorsBase is the name, before its extension, of the annotators file
// an annotator-aware run writes beside its shards (pipelines/crowdstages):
// not a shard, so ReadOutput passes it by.
const AnnotatorsBase = "annotators"

// AnnotatorsName is the annotators file's name in format f.
func AnnotatorsName(f shardio.Format) string { return AnnotatorsBase + f.Ext() }

// BucketName is the name label-only mode gives bucket b's output shard
// (before the format's extension): its rows come from the annotations, not
// from an input shard.
func BucketName(b int) string { return fmt.Sprintf("items-%05d", b) }

// ReadOutput reads every output shard (*.arrow, *.parquet) of dir, a local or
// blobio path, with mem allocating the Arrow buffers while each is decoded.
// Every shard must carry the same class names.
func ReadOutput(ctx context.Context, dir string, mem memory.Allocator) (*Output, error) {
	fsys, err := blobio.For(dir)
	if err != nil {
		return nil, fmt.Errorf("resultio: %w", err)
	}
	var paths []string
	for _, ext := range []string{".arrow", ".parquet"} {
		m, err := fsys.Glob(ctx, blobio.Join(dir, "*"+ext))
		if err != nil {
			return nil, fmt.Errorf("resultio: %w", err)
		}
		for _, p := range m {
			if blobio.Base(p) != AnnotatorsBase+ext {
				paths = append(paths, p)
			}
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("resultio: no output shards (*.arrow, *.parquet) in %s", dir)
	}
	o := &Output{Paths: paths, GivenOff: []int32{0}}
	for fi, path := range paths {
		f, err := Open(ctx, path, mem)
		if err != nil {
			return nil, err
		}
		if err := o.add(ctx, f, fi == 0); err != nil {
			return nil, err
		}
	}
	if o.ClassNames != nil {
		o.Classes = len(o.ClassNames)
	}
	return o, nil
}

// add appends one output file's rows.
func (o *Output) add(ctx context.Context, f *File, first bool) error {
	path := f.Path
	md := f.Schema.Metadata()
	names, err := schemas.ClassNamesFromMetadata(md.ToMap())
	if err != nil {
		return fmt.Errorf("resultio: %s: %w", path, err)
	}
	if first {
		o.ClassNames = names
		_, o.Multi = f.Column(schemas.ColLabels)
		if v, ok := md.GetValue(schemas.MetaOptionPrefix + "classes"); ok {
			o.Classes, _ = strconv.Atoi(v)
		}
	} else if !slices.Equal(names, o.ClassNames) {
		return fmt.Errorf("resultio: %s: other class names than the first output file", path)
	}
	classes, err := shardio.NewClassMap(o.ClassNames, o.Classes)
	if err != nil {
		return fmt.Errorf("resultio: %s: %w", path, err)
	}
	givenName := schemas.ColLabel
	if o.Multi {
		givenName = schemas.ColLabels
	}
	for _, name := range []string{schemas.ColID, givenName, schemas.ColCleanLabel, schemas.ColCleanProb, schemas.ColGivenLabelProb, schemas.ColChanged} {
		if _, ok := f.Column(name); !ok {
			return fmt.Errorf("resultio: %s: no column %q: not an output of relabel run", path, name)
		}
	}
	return f.Scan(ctx, func(rec arrow.RecordBatch, row int64) error {
		get := func(name string) arrow.Array { a, _ := col(rec, name); return a }
		var err error
		if o.IDs, o.StrIDs, err = appendIDs(o.IDs, o.StrIDs, get(schemas.ColID), path, row, schemas.ColID); err != nil {
			return err
		}
		if o.Given, o.GivenOff, err = appendGiven(o.Given, o.GivenOff, get(givenName), classes, path, row, givenName); err != nil {
			return err
		}
		if o.Clean, err = appendLabels(o.Clean, get(schemas.ColCleanLabel), classes, path, row, schemas.ColCleanLabel); err != nil {
			return err
		}
		if o.CleanProb, err = appendFloats(o.CleanProb, get(schemas.ColCleanProb), path, row, schemas.ColCleanProb); err != nil {
			return err
		}
		if o.GivenProb, err = appendFloats(o.GivenProb, get(schemas.ColGivenLabelProb), path, row, schemas.ColGivenLabelProb); err != nil {
			return err
		}
		o.Changed, err = appendBools(o.Changed, get(schemas.ColChanged), path, row, schemas.ColChanged)
		return err
	})
}
