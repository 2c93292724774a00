package stages

import (
	"context"
	"fmt"
	"reflect"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/io/spillio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/mixture"
)

// ToCleaned turns a batch's final states into output rows.
func ToCleaned(it *Items, cal resultio.Calibration) schemas.Cleaned {
	c := schemas.Cleaned{
		Shard: it.Shard, Offset: it.Offset, IDKind: it.IDKind, IDs: it.IDs, StrIDs: it.StrIDs,
		Labels: it.Labels, LabelOff: it.LabelOff, Multi: it.Multi,
	}
	cal.Fill(&c, &it.State)
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
	Cal resultio.Calibration
}

// calStatsFn is a batch's CalibrationStats; pooled is the pooled start's
// outcome (one PooledModel: the transition its items' likelihood is read
// through where the start was taken, Open).
func calStatsFn(it Items, pooled func(*PooledModel) bool) mixture.CalibrationStats {
	var s mixture.CalibrationStats
	var pm PooledModel
	pooled(&pm)
	resultio.StatsOf(&s, &it.State, func(i int) []int32 { return it.Labels[it.LabelOff[i]:it.LabelOff[i+1]] }, pm.labelTransition(), pm.C)
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

type keyByShardFn struct{ Cal resultio.Calibration }

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
	return f.P.writeShard(ctx, shard, batches, f.P.Cal.Resolve(sumStats(stats)))
}

// writeShard writes one shard's batches, calibrated by cal (resolved).
func (p *WriteParams) writeShard(ctx context.Context, shard string, batches []*schemas.Cleaned, cal resultio.Calibration) error {
	name := resultio.OutputName(shard, p.Format)
	rep := resultio.Report(shard, name, batches, p.C)
	rep.Temperature = cal.Temperature
	meta := make(map[string]string, len(p.Meta)+1)
	for k, v := range p.Meta {
		meta[k] = v
	}
	meta[schemas.MetaOptionPrefix+resultio.MetaCalibratedTemperature] = strconv.FormatFloat(rep.Temperature, 'g', -1, 64)
	err := resultio.WriteShard(ctx, p.TmpDir, name, batches, rep, resultio.ShardOptions{
		Format: p.Format, Meta: meta, LabelKind: p.LabelKind, ClassNames: p.ClassNames, IDKind: p.IDKind,
	})
	if err != nil {
		return err
	}
	rowsWritten.Inc(ctx, rep.Rows)
	labelsChanged.Inc(ctx, rep.Changed)
	return nil
}

// SpilledItems is one batch's Items waiting in a spill file (io/spillio)
// for the writer: ivf mode's writer input where it spills. The embedded
// runner holds a shuffle's whole input in memory (ivfstages.Spill says
// why), and the writer's input waits twice, for the calibration statistics
// of every batch and for the grouping by shard: inline, every row's
// posterior was held there, the largest part of a big run's peak memory.
// Spilled, the runner holds about a hundred bytes per batch.
type SpilledItems struct {
	Shard string
	Ref   spillio.Ref
}

func encodeSpilledItems(s SpilledItems) []byte {
	var w wire.Writer
	w.String(s.Shard)
	spillio.PutRef(&w, s.Ref)
	return w.B
}

func decodeSpilledItems(b []byte) (SpilledItems, error) {
	r := wire.Reader{B: b}
	s := SpilledItems{Shard: r.String(), Ref: spillio.GetRef(&r)}
	return s, r.Err()
}

// Load reads the batch back.
func (s SpilledItems) Load() (Items, error) {
	it, err := spillio.Load(s.Ref, DecodeItems)
	if err != nil {
		return it, fmt.Errorf("stages: the writer's input of %s: %w", s.Shard, err)
	}
	return it, nil
}

// spilledCalStatsFn is calStatsFn of a spilled batch.
func spilledCalStatsFn(s SpilledItems, pooled func(*PooledModel) bool) (mixture.CalibrationStats, error) {
	it, err := s.Load()
	if err != nil {
		return mixture.CalibrationStats{}, err
	}
	return calStatsFn(it, pooled), nil
}

func loadSpilledItems(s SpilledItems) (Items, error) { return s.Load() }

// Unspilled is items as PCollection<Items>, read back from the spill
// files where items is PCollection<SpilledItems>.
func Unspilled(s beam.Scope, items beam.PCollection) beam.PCollection {
	if items.Type().Type() != reflect.TypeOf(SpilledItems{}) {
		return items
	}
	return beam.ParDo(s.Scope("relabel.Unspilled"), loadSpilledItems, items)
}

func keySpilledByShard(s SpilledItems) (string, SpilledItems) { return s.Shard, s }

// writeSpilledFn is writeFn of spilled batches: each is read back and
// turned into output rows here, one shard at a time.
type writeSpilledFn struct {
	P WriteParams
}

func (f *writeSpilledFn) ProcessElement(ctx context.Context, shard string, iter func(*SpilledItems) bool, stats func(*mixture.CalibrationStats) bool) error {
	cal := f.P.Cal.Resolve(sumStats(stats))
	var batches []*schemas.Cleaned
	var s SpilledItems
	for iter(&s) {
		it, err := s.Load()
		if err != nil {
			return err
		}
		c := ToCleaned(&it, cal)
		batches = append(batches, &c)
	}
	return f.P.writeShard(ctx, shard, batches, cal)
}

var (
	rowsWritten   = beam.NewCounter("relabel", "rows_written")
	labelsChanged = beam.NewCounter("relabel", "labels_changed")
)

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*keyByShardFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*writeFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*writeSpilledFn)(nil)).Elem())
	beam.RegisterCoder(reflect.TypeOf(SpilledItems{}), encodeSpilledItems, decodeSpilledItems)
	register.Iter1[SpilledItems]()
	register.Function2x2(spilledCalStatsFn)
	register.Function1x2(keySpilledByShard)
	register.Function1x2(loadSpilledItems)
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
// labels' likelihood through the fit's own transition (StatsOf). items may
// be PCollection<SpilledItems> instead: the same output, read back from
// the spill files.
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
	if items.Type().Type() == reflect.TypeOf(SpilledItems{}) {
		stats := beam.Combine(s, mergeCalStats, beam.ParDo(s, spilledCalStatsFn, items, beam.SideInput{Input: pooled}))
		grouped := beam.GroupByKey(s, beam.ParDo(s, keySpilledByShard, items))
		beam.ParDo0(s, &writeSpilledFn{P: p}, grouped, beam.SideInput{Input: stats})
		return
	}
	stats := beam.Combine(s, mergeCalStats, beam.ParDo(s, calStatsFn, items, beam.SideInput{Input: pooled}))
	keyed := beam.ParDo(s, &keyByShardFn{Cal: p.Cal}, items, beam.SideInput{Input: stats})
	grouped := beam.GroupByKey(s, keyed)
	beam.ParDo0(s, &writeFn{P: p}, grouped, beam.SideInput{Input: stats})
}
