package crowdstages

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
)

// Params configures the crowd stages.
type Params struct {
	// Crowd is the model's configuration, complete (crowd.DefaultParams
	// with the caller's changes). Required.
	Crowd crowd.Params
	// Buckets is the number of buckets items are joined in (and, label-only,
	// of output shards), >= 1. Required.
	Buckets int
	// C0 is how many classes of each item's posterior the output keeps, in
	// [1, C]. Required (pipelines gives the plan's, mixture.DefaultC0(C) by
	// default, as in a run with features).
	C0 int
	// IDKind is how item ids are typed (label-only mode: in the annotations).
	// Required for string ids.
	IDKind schemas.IDKind
	// AnnotatorKind is how annotator ids are typed. Required for string ids.
	AnnotatorKind schemas.IDKind
	// TmpDir is where the annotators file and its report are written.
	// Optional: none is written when empty.
	TmpDir string
	// Format of the annotators file. Required with TmpDir.
	Format shardio.Format
	// Spill keeps the iterations' batches in local files instead of the
	// runner's memory (the embedded runner). Optional, default off.
	Spill spillio.Dir
}

// Validate checks p, every field as given; called while the pipeline is
// built.
func (p Params) Validate() error {
	if err := p.Crowd.Validate(); err != nil {
		return err
	}
	if p.C0 < 1 || p.C0 > p.Crowd.C {
		return fmt.Errorf("crowdstages: C0 = %d, want in [1, C = %d]", p.C0, p.Crowd.C)
	}
	if p.Buckets < 1 {
		return fmt.Errorf("crowdstages: %d buckets, want >= 1", p.Buckets)
	}
	if p.TmpDir != "" && p.Format == 0 {
		return fmt.Errorf("crowdstages: no format for the annotators file")
	}
	return nil
}

// ReadAnnotations reads annotation units (PCollection<annotio.Unit>) into
// PCollection<KV<int, AnnRows>>, keyed by bucket among buckets.
func ReadAnnotations(s beam.Scope, units beam.PCollection, opts annotio.Options, buckets int) beam.PCollection {
	s = s.Scope("crowd.ReadAnnotations")
	return beam.ParDo(s, &readAnnFn{Columns: opts.Columns, Classes: opts.Classes, Buckets: max(buckets, 1)}, units)
}

// ReadItemAnnotators reads the annotators list column of item units
// (PCollection<shardio.Unit>) with their labels into
// PCollection<KV<int, AnnRows>>, keyed by bucket among buckets. opts are
// the items' read options (stages.Read's), MaxAbsFeature included: a unit
// is checked as the items' read checks it.
func ReadItemAnnotators(s beam.Scope, units beam.PCollection, opts shardio.ReadOptions, column string, buckets int) beam.PCollection {
	s = s.Scope("crowd.ReadItemAnnotators")
	return beam.ParDo(s, &itemAnnFn{Columns: opts.Columns, D: opts.D, Classes: opts.Classes, ClassNames: opts.ClassNames, MaxAbs: opts.MaxAbsFeature,
		Column: column, Buckets: max(buckets, 1)}, units)
}

// LabelOnly relabels from annotations alone. anns: PCollection<KV<int,
// AnnRows>> (ReadAnnotations). Returns PCollection<stages.Items>: one batch
// per non-empty bucket (Shard = resultio.BucketName(bucket)), one item per id seen, in
// id order, its given label the majority of its annotations; and writes the
// annotators file when p.TmpDir is set. Cost: one shuffle of the
// annotations, then per iteration one combine of the annotators' counts
// (O(annotations x classes with posterior mass)) and one E step
// (O(annotations x C)).
func LabelOnly(s beam.Scope, anns beam.PCollection, p Params) beam.PCollection {
	s = s.Scope("crowd.LabelOnly")
	if err := p.Validate(); err != nil {
		panic(err) // programmer error: pipelines validates options before building
	}
	grouped := beam.GroupByKey(s, anns)
	batches := beam.ParDo(s, &bucketBatchFn{C: p.Crowd.C, IDKind: p.IDKind, Spill: p.Spill}, grouped)
	return finish(s, batches, anns, p, false)
}

// WithFeatures relabels items with neighbours (PCollection<stages.Items>
// from stages.Neighbours: exact or sample mode) from their annotations
// (PCollection<KV<int, AnnRows>>): the annotations are joined to the items
// by id, in buckets; an annotation of an id that is not an item is an
// error naming its file and row. Returns PCollection<stages.Items> with the
// final posteriors, and writes the annotators file when p.TmpDir is set.
func WithFeatures(s beam.Scope, items, anns beam.PCollection, p Params) beam.PCollection {
	s = s.Scope("crowd.WithFeatures")
	if err := p.Validate(); err != nil {
		panic(err)
	}
	refs := beam.ParDo(s, &itemRefsFn{Buckets: p.Buckets}, items)
	matched := beam.ParDo(s, &matchFn{}, beam.CoGroupByKey(s, refs, anns))
	keyed := beam.ParDo(s, &keyItemsFn{}, items)
	batches := beam.ParDo(s, &attachFn{C: p.Crowd.C, Spill: p.Spill}, beam.CoGroupByKey(s, keyed, matched))
	return finish(s, batches, anns, p, true)
}

func finish(s beam.Scope, batches, anns beam.PCollection, p Params, withNeighbours bool) beam.PCollection {
	final, model, ev := rounds(s, batches, p.Crowd, withNeighbours, p.Spill)
	if p.TmpDir != "" {
		names := beam.Combine(s, &namesFn{}, beam.DropKey(s, anns))
		beam.ParDo0(s, &writeAnnotatorsFn{TmpDir: p.TmpDir, Format: p.Format, Kind: p.AnnotatorKind, Params: p.Crowd}, model, beam.SideInput{Input: names}, beam.SideInput{Input: ev})
	}
	return beam.ParDo(s, &toItemsFn{C0: p.C0}, final)
}
