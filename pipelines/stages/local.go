package stages

import (
	"context"
	"errors"
	"reflect"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// LocalParams configures Local: the parameters of the stages it runs in
// one, as Stats, Neighbours, RoundsPooled (without Features: Local takes
// the head's features from the rows it holds) and Given take them.
type LocalParams struct {
	Stats      StatsParams
	Neighbours engine.NeighbourParams
	Rounds     RoundsParams
	// Given, when set, is the given-label model's parameters (Given's);
	// nil: the rounds' states are the output.
	Given *GivenParams
}

// Validate checks every part of p, as the stages it stands for do.
func (p LocalParams) Validate() error {
	errs := []error{p.Stats.Validate(), p.Neighbours.Validate(), p.Rounds.validateRounds()}
	if p.Given != nil {
		errs = append(errs, p.Given.Validate())
	}
	return errors.Join(errs...)
}

// localFn runs the exact and sample modes' stages from the statistics to
// the given-label model on one worker, every batch in memory: the same
// calls on the same values in the same order as the stages one after
// another (statsFn, candRowsFn and candidatesFn, neighboursFn, the pooled
// start's three steps, roundsFn, givenFn), so the same output bytes.
//
// On a small input the stages' own work is a fraction of a run: the
// embedded runner encodes, copies and decodes the candidates' features
// between the statistics, the search and the rounds, and each stage waits
// for the one before it to finish and be scheduled (docs/PERFORMANCE.md,
// "Small inputs"). Where everything fits in one worker's memory (the
// rounds held every batch on one worker anyway) one stage does without
// those hand-offs.
type localFn struct {
	Stats      StatsParams
	Neighbours engine.NeighbourParams
	Rounds     int
	Mixture    mixture.Params
	Workers    int
	Device     string
	HasHead    bool
	Head       head.Params
	Keep       string
	HasGiven   bool
	Given      GivenParams
}

func (f *localFn) ProcessElement(ctx context.Context, _ int, rowsIter func(*schemas.Rows) bool, emit func(Items), emitPooled func(PooledModel)) error {
	var rows []schemas.Rows
	var r schemas.Rows
	for rowsIter(&r) {
		rows = append(rows, r)
		r = schemas.Rows{}
	}

	sf := &statsFn{Candidates: f.Stats.Candidates, Seed: f.Stats.Seed, IDColumn: f.Stats.IDColumn}
	acc := sf.CreateAccumulator()
	for i := range rows {
		acc = sf.AddInput(acc, rows[i])
	}
	st := sf.ExtractOutput(acc)
	if st.Dup != "" {
		return errors.New(st.Dup)
	}

	cands := localCandidates(rows, &st, f.Neighbours.Standardise)
	var feats *Candidates
	if f.HasHead {
		c := localCandidates(rows, &st, false)
		feats = &c
	}

	items, err := f.neighbours(ctx, rows, &st, &cands)
	if err != nil {
		return err
	}
	cands = Candidates{} // the search's copy: nothing after it reads one

	mp := f.Mixture
	if mp.PooledIters > 0 {
		g := pooledGatherFn{Seed: mp.Seed}
		ga := g.CreateAccumulator()
		for i := range items {
			ga = g.AddInput(ga, items[i])
		}
		var pm PooledModel
		var fitted bool
		fit := &pooledFitFn{Mixture: mp}
		if err := fit.ProcessElement(ctx, g.ExtractOutput(ga), func(m PooledModel) { pm, fitted = m, true }); err != nil {
			return err
		}
		if !fitted {
			return errors.New("stages: pooled start: no pooled fit")
		}
		emitPooled(pm)
		var started []Items
		start := &pooledStartFn{Mixture: mp}
		if err := start.ProcessElement(0, IterOf(items), IterOf([]PooledModel{pm}), func(it Items) { started = append(started, it) }); err != nil {
			return err
		}
		items = started
	}

	if f.Rounds > 0 {
		rf := &roundsFn{Rounds: f.Rounds, Mixture: mp, Workers: f.Workers, Device: f.Device, Keep: f.Keep}
		if f.HasHead {
			rf.Head = f.Head
		}
		if err := rf.Setup(); err != nil {
			return err
		}
		var next []Items
		if err := rf.run(ctx, items, feats, func(it Items) { next = append(next, it) }); err != nil {
			return err
		}
		items = next
	}
	if feats != nil {
		// The head's copy of the features: the given-label model reads
		// none.
		*feats = Candidates{}
	}

	if f.HasGiven {
		gf := &givenFn{C: f.Given.C, C0: f.Given.C0, Seed: f.Given.Seed, Workers: f.Given.Workers, Keep: f.Given.Keep}
		cs := candidateStates(items)
		return gf.ProcessElement(ctx, 0, IterOf(items), IterOf([]CandStates{cs}), emit)
	}
	for _, it := range items {
		emit(it)
	}
	return nil
}

// neighbours is Neighbours' last step for every batch: the batches on
// the cores, as the stage's bundles run, each goroutine with its own
// neighboursFn (its index, result and weight buffers). Each batch's items
// are its call's, wherever it ran.
func (f *localFn) neighbours(ctx context.Context, rows []schemas.Rows, st *Stats, cands *Candidates) ([]Items, error) {
	items := make([]Items, len(rows))
	var mu sync.Mutex
	var made []*neighboursFn
	defer func() {
		for _, nf := range made {
			nf.Teardown()
		}
	}()
	type worker struct{ nf *neighboursFn }
	err := pool.EachIndexWith(len(rows), f.Workers, func(w *worker, i int) error {
		if w.nf == nil {
			nf := &neighboursFn{P: f.Neighbours}
			mu.Lock()
			made = append(made, nf)
			mu.Unlock()
			if err := nf.Setup(); err != nil {
				return err
			}
			w.nf = nf
		}
		if err := w.nf.ProcessElement(ctx, rows[i], *st, *cands, func(it Items) { items[i] = it }); err != nil {
			return err
		}
		// The batch's features are in the candidates (and the head's
		// copy) now; its items keep its ids and labels.
		rows[i].Features = nil
		return nil
	})
	return items, err
}

// localCandidates is the candidate set Neighbours (standardise set) or
// CandidateFeatures (unset) builds from rows: candRowsFn's fragments merged
// by candidatesFn.
func localCandidates(rows []schemas.Rows, st *Stats, standardise bool) Candidates {
	rf := &candRowsFn{Standardise: standardise}
	var cf candidatesFn
	acc := cf.CreateAccumulator()
	for i := range rows {
		rf.ProcessElement(rows[i], *st, func(c Candidates) { acc = cf.AddInput(acc, c) })
	}
	return cf.ExtractOutput(acc)
}

// IterOf is a Beam iterator over xs, as a grouped stage reads its values:
// for calling a stage's function on values held in memory.
func IterOf[T any](xs []T) func(*T) bool {
	i := 0
	return func(v *T) bool {
		if i >= len(xs) {
			return false
		}
		*v = xs[i]
		i++
		return true
	}
}

func keyRows(r schemas.Rows) (int, schemas.Rows) { return 0, r }

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*localFn)(nil)).Elem())
	register.Function1x2(keyRows)
	register.Iter1[schemas.Rows]()
}

// Local is the exact and sample modes' relabelling in one stage: rows
// (PCollection<schemas.Rows>) grouped under one key, and on that one
// worker the statistics, the neighbours, the pooled start, the rounds
// (with the head where p.Rounds.Head is set) and the given-label model
// (p.Given), as ComputeStats, Neighbours, RoundsPooled and Given give
// them in stages, with the same output. Returns PCollection<Items>, after a
// fusion break (as RoundsPooled's: the writer reads side inputs), and the
// pooled fit's PCollection<PooledModel> (invalid where
// p.Rounds.Mixture.PooledIters is 0). It holds the whole input in
// memory: for inputs one worker holds (job.Job.LocalExact). It panics on
// invalid p, while the pipeline is built.
func Local(s beam.Scope, rows beam.PCollection, p LocalParams) (beam.PCollection, beam.PCollection) {
	s = s.Scope("relabel.Local")
	if err := p.Validate(); err != nil {
		panic(err)
	}
	fn := &localFn{Stats: p.Stats, Neighbours: p.Neighbours, Rounds: p.Rounds.Rounds, Mixture: p.Rounds.Mixture, Workers: p.Rounds.Workers,
		Device: p.Rounds.Device, Keep: p.Rounds.Keep}
	if p.Rounds.Head != nil {
		fn.HasHead, fn.Head = true, *p.Rounds.Head
	}
	if p.Given != nil {
		fn.HasGiven, fn.Given = true, *p.Given
	}
	items, pooled := beam.ParDo2(s, fn, beam.GroupByKey(s, beam.ParDo(s, keyRows, rows)))
	if p.Rounds.Mixture.PooledIters <= 0 {
		pooled = beam.PCollection{}
	}
	return beam.Reshuffle(s, items), pooled
}
