package resultio

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
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
// an annotator-aware run writes beside its shards (transforms/crowdstages):
// not a shard, so ReadOutput passes it by.
const AnnotatorsBase = "annotators"

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
		tbl, err := readTable(ctx, path, mem)
		if err != nil {
			return nil, err
		}
		err = o.add(path, tbl, fi == 0)
		tbl.Release()
		if err != nil {
			return nil, err
		}
	}
	if o.ClassNames != nil {
		o.Classes = len(o.ClassNames)
	}
	return o, nil
}

// add appends one output file's rows.
func (o *Output) add(path string, tbl arrow.Table, first bool) error {
	sc := tbl.Schema()
	names, err := schemas.ClassNamesFromMetadata(sc.Metadata().ToMap())
	if err != nil {
		return fmt.Errorf("resultio: %s: %w", path, err)
	}
	if first {
		o.ClassNames = names
		_, o.Multi = column(tbl, schemas.ColLabels)
		if v, ok := sc.Metadata().GetValue(schemas.MetaOptionPrefix + "classes"); ok {
			o.Classes, _ = strconv.Atoi(v)
		}
	} else if !slices.Equal(names, o.ClassNames) {
		return fmt.Errorf("resultio: %s: other class names than the first output file", path)
	}
	classes := classIndex(o.ClassNames)
	need := func(name string) ([]arrow.Array, error) {
		a, ok := column(tbl, name)
		if !ok {
			return nil, fmt.Errorf("resultio: %s: no column %q: not an output of relabel run", path, name)
		}
		return a, nil
	}
	ids, err := need(schemas.ColID)
	if err != nil {
		return err
	}
	if o.IDs, o.StrIDs, err = appendIDs(o.IDs, o.StrIDs, ids, path, schemas.ColID); err != nil {
		return err
	}
	givenName := schemas.ColLabel
	if o.Multi {
		givenName = schemas.ColLabels
	}
	given, err := need(givenName)
	if err != nil {
		return err
	}
	if o.Given, o.GivenOff, err = appendGiven(o.Given, o.GivenOff, given, classes, path, givenName); err != nil {
		return err
	}
	clean, err := need(schemas.ColCleanLabel)
	if err != nil {
		return err
	}
	if o.Clean, err = appendLabels(o.Clean, clean, classes, path, schemas.ColCleanLabel); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		dst  *[]float32
	}{{schemas.ColCleanProb, &o.CleanProb}, {schemas.ColGivenLabelProb, &o.GivenProb}} {
		a, err := need(f.name)
		if err != nil {
			return err
		}
		if *f.dst, err = appendFloats(*f.dst, a, path, f.name); err != nil {
			return err
		}
	}
	ch, err := need(schemas.ColChanged)
	if err != nil {
		return err
	}
	if o.Changed, err = appendBools(o.Changed, ch, path, schemas.ColChanged); err != nil {
		return err
	}
	return nil
}
