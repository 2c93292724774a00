package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/crowd"
)

// annotationsPerBucket sizes the buckets annotations are joined in: the
// join holds one bucket's annotations at a time.
const annotationsPerBucket = 1 << 18

// Crowd is the annotator-aware part of a job: where the annotations come
// from and the annotator model's parameters, complete.
type Crowd struct {
	// LabelOnly: annotations without --input.
	LabelOnly bool
	// Units are the long-format annotation shards' units (nil when the
	// annotations are the input's annotators column, Column).
	Units  []annotio.Unit
	Read   annotio.Options
	Column string
	Files  []string
	// Model is the annotator model's configuration, complete
	// (crowd.DefaultParams with the options' values).
	Model crowd.Params
	// Buckets is how many buckets items are joined in (and, label-only,
	// how many output shards), >= 1.
	Buckets int
	// C0 is how many classes of each item's posterior the output keeps,
	// the mixture's.
	C0 int
	// IDKind and AnnotatorKind type the item and annotator ids.
	IDKind, AnnotatorKind schemas.IDKind
}

// check checks the model's parameters as the crowd stages will while the
// graph is built: here an error before anything runs, not a panic.
func (cp *Crowd) check() error {
	if err := cp.Model.Validate(); err != nil {
		return err
	}
	if cp.C0 < 1 || cp.C0 > cp.Model.C {
		return fmt.Errorf("relabel: annotators: C0 = %d, want in [1, C = %d]", cp.C0, cp.Model.C)
	}
	if cp.Buckets < 1 {
		return fmt.Errorf("relabel: annotators: %d buckets, want >= 1", cp.Buckets)
	}
	return nil
}

// crowdParams is the model's configuration: crowd.DefaultParams with the
// options' values, each used as given (0 is 0).
func crowdParams(o *options.Options, c int) crowd.Params {
	p := crowd.DefaultParams(c)
	p.Iterations, p.NeighbourWeight, p.ClassBalance = o.CrowdIters, o.NeighbourPrior, o.ClassBalance
	p.Strength = o.AnnotatorPrior.Or(crowd.FromData)
	return p
}

func buckets(annotations int64) int {
	return int(min(1024, max(1, (annotations+annotationsPerBucket-1)/annotationsPerBucket)))
}

// scanAnnotations scans the --annotations shards.
func scanAnnotations(ctx context.Context, cfg *options.Options, classes int) (*Crowd, annotio.Layout, error) {
	ro := annotio.Options{Columns: cfg.AnnotationColumns, Classes: classes}
	units, lay, err := annotio.Scan(ctx, cfg.Annotations, ro)
	if err != nil {
		return nil, lay, err
	}
	cp := &Crowd{Units: units, Read: ro}
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
func makeLabelOnlyPlan(ctx context.Context, cfg options.Options) (*Job, error) {
	cp, lay, err := scanAnnotations(ctx, &cfg, 0)
	if err != nil {
		return nil, err
	}
	p := &Job{opts: cfg, LabelKind: schemas.LabelInt32, IDKind: lay.IDKind, Rows: lay.Rows, Mode: "none", Device: "none"}
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
		return nil, &options.Error{Flag: "class-names", Err: errors.New("label-only mode reads integer labels")}
	}
	cp.Read.Classes = p.C
	cp.LabelOnly = true
	if p.Mixture, err = cfg.Mixture(p.C); err != nil {
		return nil, err
	}
	cp.Model, cp.Buckets, cp.C0, cp.IDKind, cp.AnnotatorKind = crowdParams(&cfg, p.C), buckets(lay.Rows), p.Mixture.C0, lay.IDKind, lay.AnnotatorKind
	if err := cp.check(); err != nil {
		return nil, err
	}
	p.Crowd = cp
	return p, nil
}

// planCrowd adds the annotator-aware part to a plan with features: from
// --annotations, or from the input's annotators column when present.
func planCrowd(ctx context.Context, cfg *options.Options, p *Job) error {
	var cp *Crowd
	var annKind schemas.IDKind
	rows := p.Rows
	if cfg.Annotations != "" {
		var lay annotio.Layout
		var err error
		if p.ClassNames != nil {
			return &options.Error{Flag: "annotations", Err: errors.New("annotation shards carry integer labels; the input's are strings")}
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
		cp = &Crowd{Column: cfg.AnnotatorsColumn}
		// The column's type: from its first unit.
		ia, err := annotio.ReadItemAnnotators(ctx, p.Units[0], cfg.AnnotatorsColumn, nil)
		if err != nil {
			return err
		}
		annKind = ia.Kind
	}
	if p.Mode == options.NeighboursIVF {
		return &options.Error{Flag: "neighbours", Err: errors.New("ivf: annotator-aware relabelling runs with exact or sample neighbours (give --neighbours exact or sample)")}
	}
	cp.Model, cp.Buckets, cp.C0, cp.IDKind, cp.AnnotatorKind = crowdParams(cfg, p.C), buckets(rows), p.Mixture.C0, p.IDKind, annKind
	if err := cp.check(); err != nil {
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

// OutputNames are the files a run may write beside summary.json: one per
// input shard (label-only: per bucket; an empty bucket writes none), and
// the annotators file of an annotator-aware run.
func (p *Job) OutputNames() []string {
	var names []string
	if p.Crowd != nil && p.Crowd.LabelOnly {
		for b := 0; b < p.Crowd.Buckets; b++ {
			names = append(names, resultio.OutputName(resultio.BucketName(b), p.opts.Format))
		}
	} else {
		for _, s := range p.Shards {
			names = append(names, resultio.OutputName(s.Path, p.opts.Format))
		}
	}
	if p.Crowd != nil {
		names = append(names, resultio.AnnotatorsName(p.opts.Format))
	}
	return names
}

// InputPaths are every file the run reads.
func (p *Job) InputPaths() []string {
	var in []string
	for _, s := range p.Shards {
		in = append(in, s.Path)
	}
	if p.Crowd != nil {
		in = append(in, p.Crowd.Files...)
	}
	return in
}

// ShardFiles are the output shards' names and the inputs they come from
// (label-only: the bucket's name).
func (p *Job) ShardFiles() (names, inputs []string) {
	if p.Crowd != nil && p.Crowd.LabelOnly {
		for b := 0; b < p.Crowd.Buckets; b++ {
			names = append(names, resultio.OutputName(resultio.BucketName(b), p.opts.Format))
		}
		return names, names
	}
	for _, s := range p.Shards {
		names = append(names, resultio.OutputName(s.Path, p.opts.Format))
		inputs = append(inputs, s.Path)
	}
	return names, inputs
}

// Written are the files of OutputNames the pipeline wrote into tmp: all of
// them, but in label-only mode, where an empty bucket writes no shard.
func (p *Job) Written(ctx context.Context, fs blobio.FS, tmp string, files []string) []string {
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

// calibration is the writer's calibration of an annotator-aware run: the
// crowd model's posteriors are written as they are (temperature 1;
// --temperature calibrates relabel's mixture posteriors, docs/QUALITY.md),
// --min-confidence applies.
func (cp *Crowd) calibration(o *options.Options) resultio.Calibration {
	return resultio.Calibration{Temperature: 1, MinConfidence: o.MinConfidence}
}
