package pipelines

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
	"github.com/relabel/relabel/transforms/crowdstages"
	"github.com/relabel/relabel/transforms/stages"
)

// GroupCrowd is the flag group of annotator-aware relabelling.
const GroupCrowd = "Annotators (who gave each label)"

// annotationsPerBucket sizes the buckets annotations are joined in: the
// join holds one bucket's annotations at a time.
const annotationsPerBucket = 1 << 18

func init() {
	Groups = append(Groups, GroupCrowd)
	Flags = append(Flags, crowdFlags...)
}

var crowdFlags = []Flag{
	{Name: "annotations", Group: GroupCrowd, Usage: "long-format annotation shards (one row per annotation: item id, annotator, label), a glob of Parquet or Arrow IPC files; without --input: label-only mode",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.Annotations) }},
	{Name: "annotation-id-column", Group: GroupCrowd, Usage: "item id column of the annotation shards (int64 or string, as the items' ids)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.AnnotationColumns.ID) }, check: nonEmpty(func(o *Options) string { return o.AnnotationColumns.ID })},
	{Name: "annotator-column", Group: GroupCrowd, Usage: "annotator column of the annotation shards (int64 or string)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.AnnotationColumns.Annotator) }, check: nonEmpty(func(o *Options) string { return o.AnnotationColumns.Annotator })},
	{Name: "annotation-label-column", Group: GroupCrowd, Usage: "label column of the annotation shards (int32 or int64)",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.AnnotationColumns.Label) }, check: nonEmpty(func(o *Options) string { return o.AnnotationColumns.Label })},
	{Name: "annotators-column", Group: GroupCrowd, Usage: "list column of the input aligned with its labels list, naming who gave each label (int64 or string); used when present",
		bind: func(o *Options) flag.Value { return (*stringValue)(&o.AnnotatorsColumn) }, check: nonEmpty(func(o *Options) string { return o.AnnotatorsColumn })},
	{Name: "crowd-iters", Group: GroupCrowd, Usage: "EM iterations of the annotators' matrices and the items' posteriors",
		bind: func(o *Options) flag.Value { return (*intValue)(&o.CrowdIters) }, check: intAtLeast(1, func(o *Options) int { return o.CrowdIters })},
	{Name: "annotator-prior", Group: GroupCrowd, Usage: "weight, in labels, of the prior pulling each annotator's matrix rows toward the pooled rows (adjusted to its accuracy), > 0", Default: "from the data (empirical Bayes), every iteration",
		bind: func(o *Options) flag.Value { return &optFloat{p: &o.AnnotatorPrior} },
		check: func(o *Options) error {
			if o.AnnotatorPrior.Set && !(o.AnnotatorPrior.V > 0) {
				return fmt.Errorf("%s: want > 0", fmtF(o.AnnotatorPrior.V))
			}
			return nil
		}},
	{Name: "neighbour-prior", Group: GroupCrowd, Usage: "with features: share of an item's class prior taken from its neighbours' posteriors, in [0,1)",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.NeighbourPrior) }, check: inRange(0, 1, false, func(o *Options) float64 { return o.NeighbourPrior })},
	{Name: "class-balance", Group: GroupCrowd, Usage: "share of the class prior that is uniform (the rest estimated), in [0,1]",
		bind: func(o *Options) flag.Value { return (*floatValue)(&o.ClassBalance) }, check: inRange(0, 1, true, func(o *Options) float64 { return o.ClassBalance })},
}

type optFloat struct{ p *Opt[float64] }

func (v *optFloat) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f {
		return errors.New("want a number")
	}
	*v.p = Some(f)
	return nil
}

func (v *optFloat) String() string {
	if v.p == nil || !v.p.Set {
		return ""
	}
	return fmtF(v.p.V)
}

// CrowdPlan is the annotator-aware part of a plan: where the annotations
// come from and the crowd stages' parameters.
type CrowdPlan struct {
	// LabelOnly: annotations without --input.
	LabelOnly bool
	// Units are the long-format annotation shards' units (nil when the
	// annotations are the input's annotators column, Column).
	Units  []annotio.Unit
	Read   annotio.Options
	Column string
	Files  []string
	Params crowdstages.Params
}

// crowdParams is the model's configuration from the options.
func (o *Options) crowdParams(c int) crowd.Params {
	p := crowd.Params{C: c, Iterations: o.CrowdIters, Strength: o.AnnotatorPrior.Or(0), NeighbourWeight: o.NeighbourPrior, ClassBalance: o.ClassBalance}
	// crowd.Params reads 0 as "default": ask for 0 explicitly.
	if p.NeighbourWeight == 0 {
		p.NeighbourWeight = -1
	}
	if p.ClassBalance == 0 {
		p.ClassBalance = -1
	}
	return p
}

func buckets(annotations int64) int {
	return int(min(1024, max(1, (annotations+annotationsPerBucket-1)/annotationsPerBucket)))
}

// scanAnnotations scans the --annotations shards.
func scanAnnotations(ctx context.Context, cfg *Options, classes int) (*CrowdPlan, annotio.Layout, error) {
	ro := annotio.Options{Columns: cfg.AnnotationColumns, Classes: classes}
	units, lay, err := annotio.Scan(ctx, cfg.Annotations, ro)
	if err != nil {
		return nil, lay, err
	}
	cp := &CrowdPlan{Units: units, Read: ro}
	seen := map[string]bool{}
	for _, u := range units {
		if !seen[u.Path] {
			seen[u.Path] = true
			cp.Files = append(cp.Files, u.Path)
		}
	}
	return cp, lay, nil
}

// makeLabelOnlyPlan plans label-only mode: the annotations are the input.
func makeLabelOnlyPlan(ctx context.Context, cfg Options) (*Plan, error) {
	cp, lay, err := scanAnnotations(ctx, &cfg, 0)
	if err != nil {
		return nil, err
	}
	p := &Plan{Options: cfg, LabelKind: schemas.LabelInt32, IDKind: lay.IDKind, Rows: lay.Rows, Mode: "none", Device: "none"}
	if cfg.Classes.Set {
		p.C = cfg.Classes.V
	} else {
		top, err := annotio.MaxLabel(ctx, cp.Units, cp.Read)
		if err != nil {
			return nil, err
		}
		p.C = int(top) + 1
	}
	if p.C < 2 {
		return nil, fmt.Errorf("relabel: %s: labels of %d class(es): label-only mode needs at least 2 (give --classes)", cfg.Annotations, p.C)
	}
	if cfg.ClassNames != nil {
		return nil, &OptionError{Flag: "class-names", Err: errors.New("label-only mode reads integer labels")}
	}
	cp.Read.Classes = p.C
	cp.LabelOnly = true
	if p.Mixture, err = cfg.Mixture(p.C); err != nil {
		return nil, err
	}
	cp.Params = crowdstages.Params{Crowd: cfg.crowdParams(p.C), Buckets: buckets(lay.Rows), C0: p.Mixture.C0,
		IDKind: lay.IDKind, AnnotatorKind: lay.AnnotatorKind, Format: cfg.Format}
	if err := cp.Params.WithDefaults().Validate(); err != nil {
		return nil, err
	}
	p.Crowd = cp
	return p, nil
}

// planCrowd adds the annotator-aware part to a plan with features: from
// --annotations, or from the input's annotators column when present.
func planCrowd(ctx context.Context, cfg *Options, p *Plan) error {
	var cp *CrowdPlan
	var annKind schemas.IDKind
	rows := p.Rows
	if cfg.Annotations != "" {
		var lay annotio.Layout
		var err error
		if p.ClassNames != nil {
			return &OptionError{Flag: "annotations", Err: errors.New("annotation shards carry integer labels; the input's are strings")}
		}
		if cp, lay, err = scanAnnotations(ctx, cfg, p.C); err != nil {
			return err
		}
		if lay.IDKind != p.IDKind {
			return fmt.Errorf("relabel: %s: item ids are %v, the input's are %v", cfg.Annotations, kindName(lay.IDKind), kindName(p.IDKind))
		}
		annKind, rows = lay.AnnotatorKind, lay.Rows
	} else {
		if len(p.Units) == 0 {
			return nil
		}
		ok, err := annotio.HasColumn(ctx, p.Units[0].Path, cfg.AnnotatorsColumn)
		if err != nil || !ok {
			return err
		}
		cp = &CrowdPlan{Column: cfg.AnnotatorsColumn}
		// The column's type: from its first unit.
		ia, err := annotio.ReadItemAnnotators(ctx, p.Units[0], cfg.AnnotatorsColumn, nil)
		if err != nil {
			return err
		}
		annKind = ia.Kind
	}
	if p.Mode == NeighboursIVF {
		return &OptionError{Flag: "neighbours", Err: errors.New("ivf: annotator-aware relabelling runs with exact or sample neighbours (give --neighbours exact or sample)")}
	}
	cp.Params = crowdstages.Params{Crowd: cfg.crowdParams(p.C), Buckets: buckets(rows), C0: p.Mixture.C0,
		IDKind: p.IDKind, AnnotatorKind: annKind, Format: cfg.Format}
	if err := cp.Params.WithDefaults().Validate(); err != nil {
		return err
	}
	p.Crowd = cp
	return nil
}

func kindName(k schemas.IDKind) string {
	if k == schemas.IDString {
		return "strings"
	}
	return "int64"
}

// annotations reads the plan's annotations into PCollection<KV<int,
// crowdstages.AnnRows>>.
func (cp *CrowdPlan) annotations(s beam.Scope, p *Plan, units beam.PCollection) beam.PCollection {
	if cp.Units != nil {
		return crowdstages.ReadAnnotations(s, beam.CreateList(s, cp.Units), cp.Read, cp.Params.Buckets)
	}
	return crowdstages.ReadItemAnnotators(s, units, p.Read, cp.Column, cp.Params.Buckets)
}

// buildLabelOnly is Build for label-only mode.
func buildLabelOnly(s beam.Scope, plan *Plan, tmpDir string) {
	cp := plan.Crowd
	params := cp.Params
	params.TmpDir = tmpDir
	params.Spill = crowdstages.Spill{Dir: plan.Spill}
	items := crowdstages.LabelOnly(s, cp.annotations(s, plan, beam.PCollection{}), params)
	stages.Write(s, items, plan.writeParams(tmpDir))
}

// buildCrowdFeatures runs the crowd stages on the items with neighbours.
func buildCrowdFeatures(s beam.Scope, plan *Plan, units, items beam.PCollection, tmpDir string) beam.PCollection {
	cp := plan.Crowd
	params := cp.Params
	params.TmpDir = tmpDir
	params.Spill = crowdstages.Spill{Dir: plan.Spill}
	return crowdstages.WithFeatures(s, items, cp.annotations(s, plan, units), params)
}

// OutputNames are the files a run may write beside summary.json: one per
// input shard (label-only: per bucket; an empty bucket writes none), and
// the annotators file of an annotator-aware run.
func (p *Plan) OutputNames() []string {
	var names []string
	if p.Crowd != nil && p.Crowd.LabelOnly {
		for b := 0; b < p.Crowd.Params.WithDefaults().Buckets; b++ {
			names = append(names, stages.OutputName(crowdstages.ShardName(b), p.Options.Format))
		}
	} else {
		for _, s := range p.Shards {
			names = append(names, stages.OutputName(s.Path, p.Options.Format))
		}
	}
	if p.Crowd != nil {
		names = append(names, crowdstages.AnnotatorsName(p.Options.Format))
	}
	return names
}

// inputPaths are every file the run reads.
func (p *Plan) inputPaths() []string {
	var in []string
	for _, s := range p.Shards {
		in = append(in, s.Path)
	}
	if p.Crowd != nil {
		in = append(in, p.Crowd.Files...)
	}
	return in
}

// crowdOptions adds the crowd options to an option map (annotator-aware
// runs only: other runs' metadata stays as it was).
func (p *Plan) crowdOptions(m map[string]string) {
	if p.Crowd == nil {
		return
	}
	o := &p.Options
	cp := p.Crowd.Params.WithDefaults()
	m["annotations"] = o.Annotations
	m["annotators-column"] = p.Crowd.Column
	m["crowd-iters"] = strconv.Itoa(cp.Crowd.Iterations)
	m["annotator-prior"] = "data"
	if o.AnnotatorPrior.Set {
		m["annotator-prior"] = fmtF(o.AnnotatorPrior.V)
	}
	m["neighbour-prior"] = fmtF(o.NeighbourPrior)
	m["class-balance"] = fmtF(o.ClassBalance)
}

// writeParams configures stages.Write for the plan, as Build does.
func (p *Plan) writeParams(tmpDir string) stages.WriteParams {
	return stages.WriteParams{
		TmpDir: tmpDir, Format: p.Options.Format,
		Meta:      schemas.Metadata(Version, p.Options.Seed, p.OptionMap(), p.ClassNames),
		LabelKind: p.LabelKind, ClassNames: p.ClassNames, IDKind: p.IDKind, C: p.C,
		Cal: p.Calibration(),
	}
}

// shardFiles are the output shards' names and the inputs they come from
// (label-only: the bucket's name).
func (p *Plan) shardFiles() (names, inputs []string) {
	if p.Crowd != nil && p.Crowd.LabelOnly {
		for b := 0; b < p.Crowd.Params.WithDefaults().Buckets; b++ {
			names = append(names, stages.OutputName(crowdstages.ShardName(b), p.Options.Format))
		}
		return names, names
	}
	for _, s := range p.Shards {
		names = append(names, stages.OutputName(s.Path, p.Options.Format))
		inputs = append(inputs, s.Path)
	}
	return names, inputs
}

// written are the files of OutputNames the pipeline wrote into tmp: all of
// them, but in label-only mode, where an empty bucket writes no shard.
func (p *Plan) written(ctx context.Context, fs blobio.FS, tmp string, files []string) []string {
	if p.Crowd == nil || !p.Crowd.LabelOnly {
		return files
	}
	var out []string
	for _, name := range files {
		if ok, err := fs.Exists(ctx, blobio.Join(tmp, name)); err == nil && ok {
			out = append(out, name)
		}
	}
	return out
}

var _ = shardio.Parquet

// calibration is the writer's calibration of an annotator-aware run: the
// crowd model's posteriors are written as they are (temperature 1;
// --temperature calibrates relabel's mixture posteriors, docs/QUALITY.md),
// --min-confidence applies.
func (cp *CrowdPlan) calibration(o *Options) stages.Calibration {
	return stages.Calibration{Temperature: 1, MinConfidence: o.MinConfidence}
}
