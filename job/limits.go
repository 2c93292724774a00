package job

import (
	"context"
	"fmt"
	"math"

	"github.com/relabel/relabel/options"

	"github.com/relabel/relabel/internal/budget"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// Bounds on what options may ask of an input: each refused value
// is an options.Error naming its flag (exit 2), before anything runs, instead
// of a run that grows for minutes and dies out of memory.
const (
	// MaxClasses is the most classes: labels are int32 class indices.
	MaxClasses = math.MaxInt32
	// classSlack: --classes may leave room for classes the data lacks, up to
	// twice the classes its labels name or classSlack more; beyond that a
	// class can never be a clean label (clean labels come from neighbours'
	// labels), costs memory and output, and is taken for a mistake.
	classSlack = 64
	// nFactor bounds --n at nFactor x (2 c0 - 1): the identifiability bound
	// 2 c0 - 1 is what N is for (METHOD.md); far more trials per count
	// vector sharpen nothing the EM uses and cost L x N per item.
	nFactor = 8
)

// CheckBounds refuses option values that no input can use, before the input
// is read.
func CheckBounds(o *options.Options) error {
	if o.Classes.Set && int64(o.Classes.V) > MaxClasses {
		return &options.Error{Flag: "classes", Err: fmt.Errorf("%d: more than the %d classes an int32 label can name", o.Classes.V, int64(MaxClasses))}
	}
	return nil
}

// maxClassesFor is the most classes --classes may give for input whose
// labels name seen classes (one more than the largest label).
func maxClassesFor(seen int) int { return max(2*seen, seen+classSlack) }

// checkPlan refuses a plan whose options do not fit its input (K, N, C by
// what the input holds) or whose estimated peak memory does not fit this
// machine (internal/budget), naming the flag.
func checkPlan(ctx context.Context, p *Job) error {
	o := &p.opts
	if err := CheckBounds(o); err != nil {
		return err
	}
	if o.Classes.Set && p.LabelKind != schemas.LabelString && p.C > maxClassesFor(1) {
		seen, err := shardio.ScanNumClasses(ctx, p.Shards, p.Read)
		if err != nil {
			return err
		}
		if lim := maxClassesFor(seen); p.C > lim {
			return &options.Error{Flag: "classes", Err: fmt.Errorf("%d, but the input's largest label is %d: a class beyond the labels can never be a clean label (clean labels come from neighbours' labels), so at most %d (twice the labels' classes, or %d more)",
				p.C, seen-1, lim, classSlack)}
		}
	}
	if err := checkK(ctx, p); err != nil {
		return err
	}
	if o.N.Set && p.Mixture.C0 > 0 {
		if lim := nFactor * (2*p.Mixture.C0 - 1); o.N.V > lim {
			return &options.Error{Flag: "n", Err: fmt.Errorf("%d trials: at most %d (%d x the identifiability bound 2 c0 - 1 = %d, c0 = %d); more sharpen nothing the EM uses and cost time and memory",
				o.N.V, lim, nFactor, 2*p.Mixture.C0-1, p.Mixture.C0)}
		}
	}
	est := budget.Of(p.Sizes())
	if err := budget.Fit(est, budget.Memory()); err != nil {
		be := err.(*budget.Error)
		val := map[string]any{"k": o.K, "n": p.Mixture.N, "c0": p.Mixture.C0, "classes": p.C, "input": o.Input, "annotations": o.Annotations, "local-rounds-mib": o.LocalMiB}[be.Flag]
		return &options.Error{Flag: be.Flag, Err: fmt.Errorf("%v: %s", val, be.Msg)}
	}
	if o.Output != "" {
		if free := budget.FreeDisk(o.Output); free > 0 && est.Output > free {
			return &options.Error{Flag: "output", Err: fmt.Errorf("%s: the output would take about %s, more than the %s free there", o.Output, budget.Bytes(est.Output), budget.Bytes(free))}
		}
	}
	return nil
}

// checkK refuses a --k that is not below the input's labelled rows, the
// default as much as a given value (an explicit or default option is used
// as it is or refused, never replaced): an item's kNN-generated labels come
// from its labelled neighbours, so with K at or beyond them every item's
// neighbourhood is the whole labelled set and the generated labels say
// nothing about the item. The refusal says which --k would fit. Labelled
// rows are counted in the label-column pass that finds the class set
// (Plan.Labelled), or here when none was made; runs whose labels come from
// --annotations are bounded by the input's rows.
func checkK(ctx context.Context, p *Job) error {
	o := &p.opts
	if p.Rows <= 0 || p.Crowd != nil && p.Crowd.LabelOnly {
		return nil
	}
	labelled, of := p.Rows, " rows"
	if o.Annotations == "" && (p.Labelled > 0 || int64(o.K) < p.Rows) {
		if p.Labelled <= 0 { // not counted while planning (class names given)
			n, err := shardio.CountLabelled(ctx, p.Shards, p.Read)
			if err != nil {
				return err
			}
			p.Labelled = n
		}
		labelled, of = p.Labelled, fmt.Sprintf(" labelled rows (of %d)", p.Rows)
	}
	if int64(o.K) < labelled {
		return nil
	}
	given := ""
	if o.K == options.Defaults().K {
		given = " (the default)"
	}
	fit := "no --k fits: label at least 2 rows"
	if labelled > 1 {
		fit = fmt.Sprintf("give --k %d or less", labelled-1)
	}
	return &options.Error{Flag: "k", Err: fmt.Errorf("%d neighbours%s, but the input has %d%s: want fewer neighbours than labelled rows (an item's labels come from its labelled neighbours); %s",
		o.K, given, labelled, of, fit)}
}

// Sizes are the plan's quantities for internal/budget.
func (p *Job) Sizes() budget.Sizes {
	s := p.sizes()
	_, s.LocalExact = p.LocalExactSize()
	if size, local := p.LocalRoundsSize(p.HeadParams() != nil); local {
		s.Local = size
	} else if size, streamed := p.StreamedRoundsSize(); streamed {
		s.Local, s.Streamed = size, true
	}
	return s
}

// sizes is Sizes without the rounds in one stage (Sizes.Local 0).
func (p *Job) sizes() budget.Sizes {
	o := &p.opts
	s := budget.Sizes{Rows: p.Rows, D: p.Read.D, C: p.C, C0: p.Mixture.C0, K: o.K, L: p.Mixture.L, N: p.Mixture.N}
	s.IVF = p.Mode == options.NeighboursIVF
	s.Spilled = s.IVF && p.SpillDir() != ""
	if p.Crowd != nil {
		for _, u := range p.Crowd.Units {
			s.Annotations += max(u.Rows, 0)
		}
	}
	return s
}
