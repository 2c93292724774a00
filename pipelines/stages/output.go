package stages

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/mixture"
)

// Calibration maps an item's final state to the probabilities and label the
// output gives.
type Calibration struct {
	// Temperature calibrates pi: the output's posterior is pi^(1/T)
	// renormalised (mixture.Temper; mixture.DefaultTemperature says why).
	// Required, > 0, unless Auto; 1 leaves pi as it is.
	Temperature float64
	// Auto fits the temperature to the run's final states
	// (mixture.AutoTemperature of their CalibrationStats, Resolve) instead.
	Auto bool
	// MinConfidence makes the relabelling conservative: a labelled row's
	// label is changed only where the calibrated clean_prob is at least
	// MinConfidence; elsewhere clean_label stays the given label (with its
	// probability) and changed is false. Optional, default 0: every row
	// takes its most probable class.
	MinConfidence float64
}

// Validate checks c.
func (c Calibration) Validate() error {
	if !c.Auto && (!(c.Temperature > 0) || math.IsInf(c.Temperature, 0)) {
		return fmt.Errorf("stages: calibration temperature %v, want > 0", c.Temperature)
	}
	if !(c.MinConfidence >= 0 && c.MinConfidence <= 1) {
		return fmt.Errorf("stages: min confidence %v outside [0, 1]", c.MinConfidence)
	}
	return nil
}

// Resolve returns c with its temperature fitted to stats when c.Auto.
func (c Calibration) Resolve(stats mixture.CalibrationStats) Calibration {
	if c.Auto {
		c.Temperature, c.Auto = mixture.AutoTemperature(stats), false
	}
	return c
}

// StatsOf adds the items of st to stats; labels(i) is item i's
// annotations (one for a single label). tOwn, when not nil, is the c x c
// transition of the given labels that the run's pooled fit estimated
// (mixture.Pooled.TOwn) where the run started from the pooled posterior:
// each item's likelihood of its given label is then added too, from which
// AutoTemperature takes the temperature (mixture.AddLabelLikelihood says
// why). The writer and the quality harness both count through here, so
// that relabel run and the harness fit the same temperature.
func StatsOf(stats *mixture.CalibrationStats, st *mixture.States, labels func(i int) []int32, tOwn []float64, c int) {
	for i := 0; i < st.Len(); i++ {
		lo, hi := st.ItemOff[i], st.ItemOff[i+1]
		l := labels(i)
		given := schemas.GivenLabel(l)
		stats.Add(st.Class[lo:hi], st.Pi[lo:hi], given, len(l))
		if tOwn != nil {
			stats.AddLabelLikelihood(tOwn, c, st.Class[lo:hi], st.Pi[lo:hi], given)
		}
	}
}

// Clean is one item's output: its clean label (Unlabelled when its state is
// empty), that label's calibrated probability, the given label's (NaN when
// unlabelled), whether the label changed, and the calibrated posterior
// entries in post (the state's order: most probable first).
func (c Calibration) Clean(st *mixture.States, i int, given int32, post []float32) (clean int32, cleanProb, givenProb float32, changed bool, out []float32) {
	if c.Auto {
		panic("stages: Calibration.Clean before Resolve") // a programmer error
	}
	lo, hi := st.ItemOff[i], st.ItemOff[i+1]
	out = mixture.Temper(post, st.Pi[lo:hi], c.Temperature)
	clean, cleanProb, givenProb = schemas.Unlabelled, 0, float32(math.NaN())
	if hi > lo {
		clean, cleanProb = st.Class[lo], out[0]
	}
	if given < 0 {
		return clean, cleanProb, givenProb, false, out
	}
	givenProb = 0
	for e := lo; e < hi; e++ {
		if st.Class[e] == given {
			givenProb = out[e-lo]
		}
	}
	if clean >= 0 && clean != given && cleanProb < float32(c.MinConfidence) {
		clean, cleanProb = given, givenProb // not sure enough to change it
	}
	return clean, cleanProb, givenProb, clean >= 0 && clean != given, out
}

// ToCleaned turns a batch's final states into output rows.
func ToCleaned(it *Items, cal Calibration) schemas.Cleaned {
	n := it.Len()
	c := schemas.Cleaned{
		Shard: it.Shard, Offset: it.Offset, IDKind: it.IDKind, IDs: it.IDs, StrIDs: it.StrIDs,
		Labels: it.Labels, LabelOff: it.LabelOff, Multi: it.Multi,
		CleanLabel: make([]int32, n), CleanProb: make([]float32, n), GivenProb: make([]float32, n),
		Changed: make([]bool, n), PostOff: make([]int32, n+1),
	}
	st := &it.State
	var post []float32
	for i := 0; i < n; i++ {
		given := schemas.GivenLabel(it.Labels[it.LabelOff[i]:it.LabelOff[i+1]])
		c.CleanLabel[i], c.CleanProb[i], c.GivenProb[i], c.Changed[i], post = cal.Clean(st, i, given, post)
		c.PostClass = append(c.PostClass, st.Class[st.ItemOff[i]:st.ItemOff[i+1]]...)
		c.PostProb = append(c.PostProb, post...)
		c.PostOff[i+1] = int32(len(c.PostClass))
	}
	return c
}

// WriteParams configures the writer stage.
type WriteParams struct {
	TmpDir     string
	Format     shardio.Format
	Meta       map[string]string
	LabelKind  schemas.LabelKind
	ClassNames []string
	IDKind     schemas.IDKind
	C          int
	// Cal calibrates the output's probabilities. Required (Temperature > 0,
	// or Auto).
	Cal Calibration
}

// MetaCalibratedTemperature is the output files' metadata key (after
// schemas.MetaOptionPrefix) of the temperature their probabilities were
// made with, next to the options: with --temperature auto the option says
// "auto" and this the fitted value.
const MetaCalibratedTemperature = "calibrated-temperature"

// calStatsFn is a batch's CalibrationStats; pooled is the pooled start's
// outcome (one PooledModel: the transition its items' likelihood is read
// through where the start was taken, Open).
func calStatsFn(it Items, pooled func(*PooledModel) bool) mixture.CalibrationStats {
	var s mixture.CalibrationStats
	var pm PooledModel
	pooled(&pm)
	StatsOf(&s, &it.State, func(i int) []int32 { return it.Labels[it.LabelOff[i]:it.LabelOff[i+1]] }, pm.labelTransition(), pm.C)
	return s
}

func mergeCalStats(a, b mixture.CalibrationStats) mixture.CalibrationStats { return a.Merge(b) }

// sumStats sums an iterable side input of CalibrationStats (the combined
// value: one element, none when there are no items).
func sumStats(iter func(*mixture.CalibrationStats) bool) mixture.CalibrationStats {
	var tot, s mixture.CalibrationStats
	for iter(&s) {
		tot = tot.Merge(s)
	}
	return tot
}

type keyByShardFn struct{ Cal Calibration }

func (f *keyByShardFn) ProcessElement(it Items, stats func(*mixture.CalibrationStats) bool) (string, schemas.Cleaned) {
	return it.Shard, ToCleaned(&it, f.Cal.Resolve(sumStats(stats)))
}

// writeFn writes one shard's rows to the temporary directory and a report
// beside it (resultio.WriteShard); the launcher renames them into place once
// every shard is written.
type writeFn struct {
	P WriteParams
}

func (f *writeFn) ProcessElement(ctx context.Context, shard string, iter func(*schemas.Cleaned) bool, stats func(*mixture.CalibrationStats) bool) error {
	var batches []*schemas.Cleaned
	var c schemas.Cleaned
	for iter(&c) {
		cc := c
		batches = append(batches, &cc)
		c = schemas.Cleaned{}
	}
	name := resultio.OutputName(shard, f.P.Format)
	rep := resultio.Report(shard, name, batches, f.P.C)
	rep.Temperature = f.P.Cal.Resolve(sumStats(stats)).Temperature
	meta := make(map[string]string, len(f.P.Meta)+1)
	for k, v := range f.P.Meta {
		meta[k] = v
	}
	meta[schemas.MetaOptionPrefix+MetaCalibratedTemperature] = strconv.FormatFloat(rep.Temperature, 'g', -1, 64)
	err := resultio.WriteShard(ctx, f.P.TmpDir, name, batches, rep, resultio.ShardOptions{
		Format: f.P.Format, Meta: meta, LabelKind: f.P.LabelKind, ClassNames: f.P.ClassNames, IDKind: f.P.IDKind,
	})
	if err != nil {
		return err
	}
	rowsWritten.Inc(ctx, rep.Rows)
	labelsChanged.Inc(ctx, rep.Changed)
	return nil
}

var (
	rowsWritten   = beam.NewCounter("relabel", "rows_written")
	labelsChanged = beam.NewCounter("relabel", "labels_changed")
)

func init() {
	register.DoFn2x2[Items, func(*mixture.CalibrationStats) bool, string, schemas.Cleaned](&keyByShardFn{})
	register.DoFn4x1[context.Context, string, func(*schemas.Cleaned) bool, func(*mixture.CalibrationStats) bool, error](&writeFn{})
	register.Iter1[schemas.Cleaned]()
	register.Iter1[mixture.CalibrationStats]()
	register.Function2x1(calStatsFn)
	register.Function2x1(mergeCalStats)
}

// Write writes items (PCollection<Items>) as one output file per input shard
// under p.TmpDir, with a report per shard, for runs that did not start from
// the pooled posterior (WritePooled).
func Write(s beam.Scope, items beam.PCollection, p WriteParams) {
	WritePooled(s, items, p, beam.PCollection{})
}

// WritePooled is Write for items that Rounds started from the pooled fit
// (pooled: RoundsPooled's outcome, one PooledModel; invalid: none): where
// the fit's gate opened, --temperature auto is fitted from the given
// labels' likelihood through the fit's own transition (StatsOf).
func WritePooled(s beam.Scope, items beam.PCollection, p WriteParams, pooled beam.PCollection) {
	s = s.Scope("relabel.Write")
	if !pooled.IsValid() {
		pooled = beam.Create(s, PooledModel{})
	} else {
		pooled = beam.ParDo(s, PooledTransitionOnly, pooled)
	}
	if err := p.Cal.Validate(); err != nil {
		panic(err) // Build's callers validate options first: a programmer error
	}
	// The calibration statistics of every item, summed (integers: the same
	// in any order), reach both stages as a side input; with a fixed
	// temperature they go unused. Both stages are short, so Prism's
	// rescheduling of side-input stages (ARCHITECTURE.md) costs little here.
	stats := beam.Combine(s, mergeCalStats, beam.ParDo(s, calStatsFn, items, beam.SideInput{Input: pooled}))
	keyed := beam.ParDo(s, &keyByShardFn{Cal: p.Cal}, items, beam.SideInput{Input: stats})
	grouped := beam.GroupByKey(s, keyed)
	beam.ParDo0(s, &writeFn{P: p}, grouped, beam.SideInput{Input: stats})
}
