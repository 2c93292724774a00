package lake

import (
	"context"
	"fmt"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// The fits an output keeps for its incremental runs.
//
// An incremental run relabels the new rows and the old rows they became
// neighbours of, with every other row's stored posterior fixed
// (update.go). The full run that made those posteriors may have started
// its items from the pooled fit of the labels' class-level noise, and given
// them the linear head's component round after round; rows relabelled
// without them beside rows relabelled with them would be under two models.
// Refitting either means every row's neighbours (the pooled fit) or every
// row's features and states through every round (the head): a full run. So
// a full run with --incremental keeps what its rounds fitted
// (job.Dirs.KeepFit: the head's fit after the last round, each fold's
// weights with the standardisation and the component's weight, the pooled
// start's transition and gate, the given-label model's fit) in one file
// beside its output (keptio.FitFileName: in the output directory, committed
// with the shards; in a table's run directory, named in its snapshot
// summary, icebergio.SummaryFit), and the incremental runs after it start the rows
// they relabel from the kept transition and give them the kept head's
// component in every round. Each incremental run names the same file: the
// fits are the full run's until the next full run. An output whose last run
// needed a fit (resultio.MetaPooledStart, MetaHeadLast) and kept none (one
// written before fits were kept, or whose file is gone) is relabelled in
// full once, which keeps them.

// keepFit writes what the pipeline's rounds kept in the directory kept
// (keptio.ReadFitDir) as the fit file in dir, and returns its name in dir:
// none where no kept fit applies (no head, or one that switched itself
// off; no pooled fit, or one its gate did not take; no given-label model),
// as the posteriors then depend on none of them.
func keepFit(ctx context.Context, kept, dir string) ([]string, error) {
	k, err := keptio.ReadFitDir(ctx, kept)
	if err != nil {
		return nil, fmt.Errorf("relabel: --incremental: %w", err)
	}
	if keptHead(k) == nil && k.Transition() == nil && k.Given == nil {
		return nil, nil
	}
	b, err := keptio.EncodeFitFile(k)
	if err != nil {
		return nil, err
	}
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	if err := blobio.WriteFile(ctx, fs, blobio.Join(dir, keptio.FitFileName), b); err != nil {
		return nil, fmt.Errorf("relabel: keeping the rounds' fits: %w", err)
	}
	return []string{keptio.FitFileName}, nil
}

// Why an incremental run is a full one: the stored posteriors were made
// with a fit that is not kept (fit.go's comment).
const (
	pooledFull = "the last run started from the pooled fit of the labels' class-level noise (pair-structured noise), and that fit is not kept beside its output (an output written by an older relabel, or its fit file gone): this run relabels every row again, and keeps the fit for the next runs"
	headFull   = "the last run's linear head still weighed in at its last round, and its fit is not kept beside its output (an output written by an older relabel, or its fit file gone): this run relabels every row again, and keeps the fit for the next runs"
	givenFull  = "the last run read the given labels through its fitted label transition (--given-label bayes), and that fit is not kept beside its output (an output written by an older relabel, or its fit file gone): this run relabels every row again, and keeps the fit for the next runs"
)

// fullAgain returns why the run whose recorded options are last, and
// whose kept fits are k (nil: none kept, or unreadable), must be followed
// by a full run rather than an incremental one ("" for none), for input of
// dimension d and c classes.
func fullAgain(last map[string]string, k *keptio.Fit, d, c int) string {
	if last["given-label"] == engine.GivenBayes.String() {
		if k == nil || k.Given == nil {
			return givenFull
		}
		if k.Given.C != c {
			return fmt.Sprintf("the given-label fit the last run kept is of %d classes, the input has %d: this run relabels every row again", k.Given.C, c)
		}
	}
	if last[resultio.MetaPooledStart] == resultio.PooledStartOpen {
		if k.Transition() == nil {
			return pooledFull
		}
		if k.Pooled.C != c {
			return fmt.Sprintf("the pooled fit the last run kept is of %d classes, the input has %d: this run relabels every row again", k.Pooled.C, c)
		}
	}
	if last[resultio.MetaHeadLast] == resultio.HeadLastOn && (k == nil || k.Head == nil || k.Head.Off) {
		return headFull
	}
	if h := keptHead(k); h != nil && (h.D != d || h.C != c) {
		return fmt.Sprintf("the linear head the last run kept is of dimension %d and %d classes, the input's %d and %d: this run relabels every row again", h.D, h.C, d, c)
	}
	return ""
}

// carryFit records, in an incremental run's options (opts), how the
// stored posteriors were made (last, the last run's): what the next
// incremental run checks its kept fits against.
func carryFit(last, opts map[string]string) {
	for _, key := range []string{resultio.MetaPooledStart, resultio.MetaHeadLast} {
		if v, ok := last[key]; ok {
			opts[key] = v
		}
	}
}

// keptHead is k's head where it gives a component (nil: none).
func keptHead(k *keptio.Fit) *head.Fit {
	if k == nil || k.Head == nil || k.Head.Off {
		return nil
	}
	return k.Head
}

// applyFit gives an update (u: its items are rows affected of d, their
// neighbour slots nb, rows of d or negative for none) the kept fits k: the
// pooled start, and the head's component, as the full run gave its items.
// It reports whether either applies.
func applyFit(u *engine.Update, k *keptio.Fit, d *incData, affected []int, nb []int32, m *mixture.Params) bool {
	applied := false
	if t := k.Transition(); t != nil {
		u.Start = engine.NewPooledStarter(t, m)
		u.NeighbourLabels = func(a, j int) ([]int32, bool) {
			if c := nb[a*u.K+j]; c >= 0 {
				return d.labelsOf(int(c)), true
			}
			return nil, false
		}
		applied = true
	}
	if h := keptHead(k); h != nil {
		x := make([]float32, 0, len(affected)*d.d)
		keys := make([]int64, len(affected))
		for a, i := range affected {
			x = append(x, d.feats[i*d.d:(i+1)*d.d]...)
			keys[a] = d.keys[i]
		}
		u.Extra, u.ExtraWeight = h.States(x, keys, m.C0, m.Smooth), h.Weight
		applied = true
	}
	return applied
}
