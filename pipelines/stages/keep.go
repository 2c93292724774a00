package stages

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// Keeping what the rounds fitted (RoundsParams.Keep, KeepPooled).
//
// An incremental lake run relabels a few rows among many with the stored
// posteriors of the others fixed (the lake package). Where the full run
// that made those posteriors started its items from the pooled fit, or gave
// them the linear head's component, the rows it relabels must be given the
// same, or rows relabelled under two models would sit side by side.
// Refitting either over every row would cost what the full run cost, so the
// stages that fit them write them down where the run says (one file each,
// the same bytes should a bundle be retried: io/keptio), and
// keptio.ReadFitDir gathers them.

// KeepHead writes h's fit after the last round into dir: what the exact
// path's rounds (roundsFn) and ivf mode's local rounds
// (pipelines/ivfstages) keep of their head.
func KeepHead(ctx context.Context, dir string, h *head.Head) error {
	return keptio.WriteHead(ctx, dir, h.Fit())
}

// KeepGiven writes the given-label model's fit into dir: what Given (and
// ivf mode's given-label stage) keep.
func KeepGiven(ctx context.Context, dir string, f *mixture.GivenFit) error {
	return keptio.WriteGiven(ctx, dir, f)
}

// keepPooledFn writes the pooled fit's outcome into Dir.
type keepPooledFn struct {
	Dir string
}

func (f *keepPooledFn) ProcessElement(ctx context.Context, m PooledModel) error {
	return keptio.WritePooled(ctx, f.Dir, m.Kept())
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*keepPooledFn)(nil)).Elem())
}

// KeepPooled writes the pooled fit's outcome (pooled: RoundsPooled's or
// ivfstages.PooledStart's, one PooledModel) into dir.
func KeepPooled(s beam.Scope, pooled beam.PCollection, dir string) {
	s = s.Scope("relabel.KeepPooled")
	beam.ParDo0(s, &keepPooledFn{Dir: dir}, pooled)
}
