package lake

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// An incremental run relabels the rows that are new since the last run, with
// neighbours searched among all rows, and leaves the other rows' stored
// posteriors as they are, except where a new row changed an old row's
// neighbourhood:
//
//  1. Every input file's rows are read once (features and labels): the
//     neighbour search needs all rows, and the standardisation is over all
//     rows, as in a full run. This is the one part of the cost that scales
//     with the table (a sequential read, O(N d)).
//  2. The new rows' K nearest neighbours are searched among all rows
//     (search.go): exactly, O(new * N * d), where a full run
//     would search exactly; where it would use ivf (N >= options.AutoIVFRows), in
//     an ivf partitioning of all rows, O(new * NProbe * partition size * d).
//     The partitioning is the one the last table run kept
//     (state.go), extended by probing the new rows, O(new * P *
//     d); without one, it is fitted as the full run fits it and every row is
//     probed, O(N * P * d).
//  3. The update spreads one hop. An old row is re-scored when a new row
//     entered its K nearest neighbours. Such a row is, in practice, among the
//     new rows' own K nearest (distance is symmetric: a new row close enough
//     to be among an old row's K nearest is usually among its K nearest too),
//     so only the old rows found in step 2, at most K per new row, have their
//     neighbours searched again (the same search as step 2, K times as many
//     queries); those with a new row among
//     their K nearest are re-scored. An old row that a new row reached only
//     asymmetrically (a hub's neighbour) is missed; so are rows two hops away,
//     whose neighbours' posteriors the re-scoring moved a little: following
//     them would spread the update over the whole connected graph, and the
//     posteriors of rows that did not gain a neighbour change little (the
//     method's states are dominated by each row's own label and its nearest
//     neighbours; METHOD.md). A periodic full run (no --incremental) resets
//     any drift.
//  4. The new and re-scored rows run the configured rounds from their
//     initial states (as in a full run; starting the re-scored rows from
//     their stored posteriors instead gives them up to twice the rounds, and
//     on the digits test drifted 0.5 point from a full run, against 0.0 this
//     way), with every other row's state fixed at its stored posterior.
//     Where the full run started its items from the pooled fit, or gave
//     them the linear head's component, the rows start from the fit it
//     kept and get the kept head's component in every round (fit.go).
//     The output stores only posteriors (pi), so an old row's
//     state is rebuilt as its posterior with the label-smoothed identity
//     transition rows of the initialisation (METHOD.md "Initialisation").
//  5. The commit adds the new rows' files and rewrites only the output files
//     holding re-scored rows: one snapshot (icebergio.Rewrite). A re-scored
//     row is rarely alone in its file (about K% of old rows are re-scored,
//     spread over the table), so a rewritten file is rewritten whole, as
//     files of at most maxRewriteRows rows written in parallel. (Iceberg
//     deletes would rewrite less, but every reader of the output table,
//     relabel's own included, would then have to apply them.)
//
// The rounds and search run in the launcher's process (they touch
// O(K new) rows, small next to a full run), on the --device kernels. Beside
// the O(N d) read and the rewrite of the output files holding re-scored
// rows, the cost grows with the table only where no partitioning was kept:
// then every row is probed (O(N P d), P = N / 500 partitions by default:
// about 10^11 flops of SGEMM at 1M rows, d = 32), as the full run does.

// incData is every input row, flattened.
type incData struct {
	n, d     int
	idKind   schemas.IDKind
	multi    bool
	keys     []int64
	strIDs   []string // IDString ids
	feats    []float32
	labels   []int32
	off      []int32
	shard    []int32 // row i's shard index
	shards   []string
	isNew    []bool
	newShard []bool
}

// flatten lays rows out in the order of their units' first ids, not in the
// order their files were listed: a table's data files are listed by name,
// and iceberg-go names them by random UUIDs, so a table whose files were
// written again (or the same rows appended to another table) would sum the
// standardisation's moments in another order and round them otherwise. Ids
// are unique, so the order is total.
func flatten(rows []*schemas.Rows, isNewShard func(string) bool) *incData {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b *schemas.Rows) int { return cmp.Compare(firstKey(a), firstKey(b)) })
	// Sized up front: a lake's input is often hundreds of small units, and
	// growing the features by appending copied them over and over.
	var n, labels, feats int
	for _, r := range rows {
		n += r.Len()
		labels += len(r.Labels)
		feats += len(r.Features)
	}
	d := &incData{off: make([]int32, 1, n+1), keys: make([]int64, 0, n), labels: make([]int32, 0, labels),
		shard: make([]int32, 0, n), isNew: make([]bool, 0, n), feats: make([]float32, 0, feats)}
	shardIdx := map[string]int32{}
	for _, r := range rows {
		si, ok := shardIdx[r.Shard]
		if !ok {
			si = int32(len(d.shards))
			shardIdx[r.Shard] = si
			d.shards = append(d.shards, r.Shard)
			d.newShard = append(d.newShard, isNewShard(r.Shard))
		}
		d.d, d.idKind, d.multi = r.D, r.IDKind, r.Multi
		for i := 0; i < r.Len(); i++ {
			d.keys = append(d.keys, r.IDs[i])
			if r.StrIDs != nil {
				d.strIDs = append(d.strIDs, r.StrIDs[i])
			}
			d.labels = append(d.labels, r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]...)
			d.off = append(d.off, int32(len(d.labels)))
			d.shard = append(d.shard, si)
			d.isNew = append(d.isNew, d.newShard[si])
		}
		d.feats = append(d.feats, r.Features...)
	}
	d.n = len(d.keys)
	return d
}

// firstKey is a unit's first id key (the largest key for an empty unit,
// which adds no rows).
func firstKey(r *schemas.Rows) int64 {
	if len(r.IDs) == 0 {
		return math.MaxInt64
	}
	return r.IDs[0]
}

func (d *incData) labelsOf(i int) []int32 { return d.labels[d.off[i]:d.off[i+1]] }

// incResult is what the update computed.
type incResult struct {
	// affected rows (new, then re-scored) and their final states, packed
	// in the same order; itemRounds the item-rounds run (engine.Update).
	affected   []int
	states     mixture.States
	itemRounds int64
	pos        map[int]int // row -> index in affected
	rescored   int
	// timings of the phases, in seconds: "index" (standardise and
	// index or partition every row), "search" (both searches and their
	// weights), "rounds".
	timings  map[string]float64
	searched int
	// state is the ivf partitioning the next incremental run can keep
	// (state.go); nil where the search was exact. kept: it
	// extends the one the last run kept.
	state *keptio.IVF
	kept  bool
	// keptFit: the kept fits (fit.go) were applied to the affected rows.
	keptFit bool
}

// update is a finished incremental update and what it started from.
type update struct {
	stored      *storedPosts
	keyRow      map[int64]int // id key -> row of d
	res         *incResult
	tPlan, tRun time.Duration
}

// storedPosts are the old rows' stored posteriors where they lie: row i's
// is row row[i] of posts[file[i]] (file -1: a new row). A row's state is
// rebuilt from it only where it is needed (the neighbours of the rows the
// update touches, and the rows written), not for every row up front: at 1M
// rows that was a million small allocations, which the garbage collector
// then scanned through the rounds.
type storedPosts struct {
	posts     []*resultio.Posteriors
	file, row []int32
	// invT undoes the stored posteriors' calibration; smooth and c rebuild
	// the transition rows (fixedStates).
	invT   float64
	smooth float64
	c      int
}

// raw is row i's stored posterior, uncalibrated (the state's pi: q^T
// renormalised), into buf, and its classes.
func (s *storedPosts) raw(buf []float32, i int) ([]float32, []int32) {
	p, j := s.posts[s.file[i]], s.row[i]
	return mixture.Temper(buf, p.Prob[p.Off[j]:p.Off[j+1]], s.invT), p.Class[p.Off[j]:p.Off[j+1]]
}

// smoothedRow is the transition row a stored class gets (step 4 above): its
// own category with probability p, the label smoothing rem spread over the
// others (none with one class).
func (s *storedPosts) smoothedRow() (rem, p float64) {
	if s.c > 1 {
		return s.smooth, 1 - s.smooth
	}
	return 0, 1
}

// appendPacked packs row i's stored state onto ss: the state fixedStates
// builds, packed as ss.Append packs it, without the State in between.
func (s *storedPosts) appendPacked(ss *mixture.States, i int, buf []float32) []float32 {
	buf, class := s.raw(buf, i)
	rem, p := s.smoothedRow()
	for e, cl := range class {
		ss.Class = append(ss.Class, cl)
		ss.Pi = append(ss.Pi, buf[e])
		ss.Rem = append(ss.Rem, float32(rem))
		ss.Cat = append(ss.Cat, cl)
		ss.P = append(ss.P, float32(p))
		ss.RowOff = append(ss.RowOff, int32(len(ss.Cat)))
	}
	ss.ItemOff = append(ss.ItemOff, int32(len(ss.Class)))
	return buf
}

// packedLen is the class and transition-row entries row i's state takes
// when packed.
func (u *update) packedLen(i int) (classes, cats int) {
	if a, ok := u.res.pos[i]; ok {
		return u.res.states.Sizes(a, a+1)
	}
	p, j := u.stored.posts[u.stored.file[i]], u.stored.row[i]
	n := int(p.Off[j+1] - p.Off[j])
	return n, n
}

// appendState packs row i's final state onto ss: its updated one where the
// update touched it, else its stored one.
func (u *update) appendState(ss *mixture.States, i int, buf []float32) []float32 {
	if a, ok := u.res.pos[i]; ok {
		ss.AppendFrom(&u.res.states, a)
		return buf
	}
	return u.stored.appendPacked(ss, i, buf)
}

// storedRows maps the rows of a stored output file p, in its order, to rows
// of the input, and says whether the update touched any of them (the file
// is then rewritten).
func (u *update) storedRows(p *resultio.Posteriors) (rs []int, touched bool) {
	for j := 0; j < p.Len(); j++ {
		i := u.keyRow[p.Key(j)]
		rs = append(rs, i)
		if _, ok := u.res.pos[i]; ok {
			touched = true
		}
	}
	return rs, touched
}

// storedUpdate rebuilds the old rows' states from their stored posteriors
// (posts) and runs the update (search, then rounds over the affected rows):
// the part that the table and the directory lake share. It fills lake's
// counts; tPlan is the time since t0 until the update starts.
// kept is the ivf state the last run kept, nil when none; fit the fits it
// kept (fit.go), nil when none.
// cal is the calibration the stored posteriors were made with
// (calibration, plan.go).
func storedUpdate(d *incData, posts []*resultio.Posteriors, kept *keptio.IVF, fit *keptio.Fit, plan *job.Job, cal resultio.Calibration, input string, t0 time.Time, lake *resultio.LakeSummary) (*update, error) {
	stored, keyRow, err := storedStates(d, posts, plan, cal, input)
	if err != nil {
		return nil, err
	}
	u := &update{stored: stored, keyRow: keyRow, tPlan: time.Since(t0)}
	progress.StageStarted("neighbours")
	kern, err := gpu.Resolve(plan.Kernels())
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	be := engine.Backends{Searcher: kern.Searcher, Coder: kern.Coder, Rounder: kern.Rounder}
	if u.res, err = updateIncremental(d, stored, kept, fit, keyRow, plan, be); err != nil {
		return nil, err
	}
	lake.NewRows, lake.Rescored, lake.Searched = int64(len(u.res.affected)-u.res.rescored), int64(u.res.rescored), int64(u.res.searched)
	lake.KeptPartitioning, lake.KeptFit = u.res.kept, u.res.keptFit
	u.tRun = time.Since(t1)
	faults.Point("pipeline-done")
	return u, nil
}

// updateIncremental runs steps 2-4 on d, with old rows' states rebuilt from
// their stored posteriors (stored), the ivf partitioning the last run
// kept (nil: none; state.go) and the fits it kept (nil: none; fit.go).
// keyRow is the row of each id key; be the kernels (nil fields: the CPU's).
func updateIncremental(d *incData, stored *storedPosts, kept *keptio.IVF, fit *keptio.Fit, keyRow map[int64]int, plan *job.Job, be engine.Backends) (*incResult, error) {
	eo, err := plan.Engine()
	if err != nil {
		return nil, err
	}
	if be.Searcher == nil {
		be.Searcher = knn.CPU{}
	}
	if be.Coder == nil {
		be.Coder = llc.CPU{}
	}
	t0 := time.Now()
	timings := map[string]float64{}
	lap := func(name string) {
		timings[name] = time.Since(t0).Seconds()
		t0 = time.Now()
	}
	ix, cm, state, err := newIncIndex(d, plan, kept, keyRow, be.Searcher, eo.Workers)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	lap("index")
	k, weighting := plan.K(), plan.NeighbourParams().Weighting
	search := func(rows []int) ([]int32, []float64, error) {
		var res knn.Result
		if err := ix.search(&res, rows, k); err != nil {
			return nil, nil, fmt.Errorf("relabel: incremental: kNN: %w", err)
		}
		wt, err := neighbourWeights(cm, rows, &res, weighting, eo.LLC, be.Coder, 1)
		if err != nil {
			return nil, nil, fmt.Errorf("relabel: incremental: neighbour weights: %w", err)
		}
		return res.Index, wt, nil
	}
	var newRows []int
	for i := 0; i < d.n; i++ {
		if d.isNew[i] {
			newRows = append(newRows, i)
		}
	}
	nbNew, wtNew, err := search(newRows)
	if err != nil {
		return nil, err
	}
	// Old rows the new rows reached: candidates for re-scoring.
	seen := map[int32]bool{}
	var cands []int
	for _, c := range nbNew {
		if c >= 0 && !d.isNew[c] && !seen[c] {
			seen[c] = true
			cands = append(cands, int(c))
		}
	}
	sort.Ints(cands)
	nbC, wtC, err := search(cands)
	if err != nil {
		return nil, err
	}
	lap("search")
	r := &incResult{affected: newRows, pos: map[int]int{}, searched: len(cands), timings: timings, state: state, kept: kept != nil && state != nil && state.Model == kept.Model}
	nb, wt := nbNew, wtNew
	for ci, i := range cands {
		hit := false
		for _, c := range nbC[ci*k : (ci+1)*k] {
			if c >= 0 && d.isNew[c] {
				hit = true
			}
		}
		if hit {
			r.affected = append(r.affected, i)
			nb = append(nb, nbC[ci*k:(ci+1)*k]...)
			wt = append(wt, wtC[ci*k:(ci+1)*k]...)
			r.rescored++
		}
	}
	for a, i := range r.affected {
		r.pos[i] = a
	}
	fixed, src := packFixed(d.n, nb, r.pos, stored)
	up := engine.Update{N: len(r.affected), K: k, Src: src, Weight: wt, Fixed: fixed,
		Labels:   func(a int) []int32 { return d.labelsOf(r.affected[a]) },
		Key:      func(a int) uint64 { return uint64(d.keys[r.affected[a]]) },
		Progress: func(round int) { progress.RoundStarted(round, eo.Rounds) },
		Rounder:  be.Rounder,
	}
	r.keptFit = applyFit(&up, fit, d, r.affected, nb, &eo.Mixture)
	if r.states, r.itemRounds, err = up.Run(eo.Rounds, eo.Workers, nil, &eo.Mixture); err != nil {
		return nil, fmt.Errorf("relabel: incremental: %w", err)
	}
	if plan.Given == engine.GivenBayes {
		if fit == nil || fit.Given == nil {
			return nil, errors.New("relabel: incremental: the last run's given-label fit is not kept")
		}
		r.states = givenUpdate(d, r, k, src, wt, fixed, fit.Given, eo.Mixture.C0, eo.Workers)
		r.keptFit = true
	}
	lap("rounds")
	return r, nil
}

// givenUpdate reads the affected rows' given labels through the given-label
// model against their neighbours' evidence: the affected neighbours' states
// after the update's rounds, the fixed ones' stored posteriors (src and wt
// as engine.Update reads them). The transition is the full run's kept fit
// (f) updated with the affected rows (mixture.FitGivenPrior: f's counts
// as a prior worth the items it read), at f's temperature: a 1% append
// moves it little, an append as large as the table half way. As in the
// full run, the result replaces the rows' final states in the output.
func givenUpdate(d *incData, r *incResult, k int, src []int32, wt []float64, fixed *mixture.States, f *mixture.GivenFit, c0, workers int) mixture.States {
	gb := engine.GivenBatch{N: len(r.affected), K: k, Own: &r.states,
		Neighbour: func(a, j int) (*mixture.States, int, float64) {
			e := a*k + j
			switch s := src[e]; {
			case s == engine.NoNeighbour:
				return nil, 0, 0
			case s >= 0:
				return &r.states, int(s), wt[e]
			default:
				return fixed, int(-s - 1), wt[e]
			}
		},
		Key:   func(a int) int64 { return d.keys[r.affected[a]] },
		Given: func(a int) int32 { return schemas.GivenLabel(d.labelsOf(r.affected[a])) },
	}
	ev, given := engine.GivenEvidence(gb, f.T, workers)
	if nf, err := mixture.FitGivenPrior(ev, given, f.C, f.T, f.EvidencePower(), f); err == nil {
		f = nf
	}
	return engine.GivenStates(gb, f, c0, workers)
}

// packFixed packs the fixed states of an update (engine.Update.Fixed): the
// affected rows' neighbours nb (rows of d's n) that are not affected
// themselves (pos: affected row -> its index), from their stored
// posteriors, each once. src is nb as engine.Update reads it: an affected
// neighbour's index, a fixed one's -(1-based position), or
// engine.NoNeighbour.
func packFixed(n int, nb []int32, pos map[int]int, stored *storedPosts) (*mixture.States, []int32) {
	fixedAt := make([]int32, n)
	var fixed mixture.States
	fixed.Reset()
	var buf []float32
	for _, c := range nb {
		if c < 0 || fixedAt[c] != 0 {
			continue
		}
		if _, ok := pos[int(c)]; ok {
			continue
		}
		buf = stored.appendPacked(&fixed, int(c), buf)
		fixedAt[c] = int32(fixed.Len()) // 1-based: 0 is "not packed"
	}
	src := make([]int32, len(nb))
	for e, c := range nb {
		switch {
		case c < 0:
			src[e] = engine.NoNeighbour
		case fixedAt[c] > 0:
			src[e] = -fixedAt[c]
		default:
			src[e] = int32(pos[int(c)])
		}
	}
	return &fixed, src
}

// storedStates finds the old rows' stored posteriors among the output files
// posts (their states are rebuilt from them, step 4 above), and returns
// the row of each key. Every old row of d must have exactly one stored
// posterior, and no new row any: otherwise the output does not match the
// input (rows deleted or rewritten in place), and only a full run can say
// what the output should be. input names the input in messages.
func storedStates(d *incData, posts []*resultio.Posteriors, plan *job.Job, cal resultio.Calibration, input string) (*storedPosts, map[int64]int, error) {
	keyRow := make(map[int64]int, d.n)
	for i, key := range d.keys {
		keyRow[key] = i
	}
	s := &storedPosts{posts: posts, file: make([]int32, d.n), row: make([]int32, d.n), invT: 1 / cal.Temperature, smooth: plan.Mixture.Smooth, c: plan.C}
	for i := range s.file {
		s.file[i] = -1
	}
	for f, p := range posts {
		for j := 0; j < p.Len(); j++ {
			i, ok := keyRow[p.Key(j)]
			switch {
			case !ok:
				return nil, nil, fmt.Errorf("relabel: %s row %d: its id is not in %s any more; run without --incremental", p.Path, j, input)
			case d.isNew[i]:
				return nil, nil, fmt.Errorf("relabel: %s row %d: already holds the id of a row that is new in %s (file %s); run without --incremental", p.Path, j, input, d.shards[d.shard[i]])
			case s.file[i] >= 0:
				return nil, nil, fmt.Errorf("relabel: %s row %d: a second stored posterior for the id of %s's row in %s; run without --incremental", p.Path, j, input, d.shards[d.shard[i]])
			}
			// The stored posterior is calibrated (pi^(1/T), renormalised):
			// the state's pi is its inverse, q^T renormalised (raw).
			s.file[i], s.row[i] = int32(f), int32(j)
		}
	}
	for i := range s.file {
		if s.file[i] < 0 && !d.isNew[i] {
			return nil, nil, fmt.Errorf("relabel: %s: the row of %s with key %d has no stored posterior; run without --incremental", input, d.shards[d.shard[i]], d.keys[i])
		}
	}
	return s, keyRow, nil
}

// checkUniqueIDs refuses rows whose ids repeat, naming both files and rows
// (shardio.DuplicateError), as the full run's stats stage does. The ids are
// copied and sorted (equal neighbours are duplicates); only when one is found
// are its two rows looked for.
func checkUniqueIDs(rows []*schemas.Rows, column string) error {
	var dupInt *int64
	var dupStr *string
	if len(rows) > 0 && rows[0].StrIDs != nil {
		dupStr = firstRepeat(rows, func(r *schemas.Rows) []string { return r.StrIDs })
	} else {
		dupInt = firstRepeat(rows, func(r *schemas.Rows) []int64 { return r.IDs })
	}
	if dupInt == nil && dupStr == nil {
		return nil
	}
	var at [][2]int // (rows index, row) of the duplicate's first two rows
	for r, rs := range rows {
		for i := range rs.Len() {
			if (dupStr != nil && rs.StrIDs[i] == *dupStr) || (dupInt != nil && rs.StrIDs == nil && rs.IDs[i] == *dupInt) {
				at = append(at, [2]int{r, i})
			}
		}
	}
	id := ""
	if dupStr != nil {
		id = *dupStr
	} else {
		id = fmt.Sprint(*dupInt)
	}
	rf, rd := rows[at[0][0]], rows[at[1][0]]
	return shardio.DuplicateError(column, id, rd.Shard, rd.Offset+int64(at[1][1]), rf.Shard, rf.Offset+int64(at[0][1]))
}

// firstRepeat returns an id that occurs twice among the rows' ids (of), or
// nil: a sorted copy's equal neighbours.
func firstRepeat[T cmp.Ordered](rows []*schemas.Rows, of func(*schemas.Rows) []T) *T {
	var ids []T
	for _, r := range rows {
		ids = append(ids, of(r)...)
	}
	slices.Sort(ids)
	for k := 1; k < len(ids); k++ {
		if ids[k] == ids[k-1] {
			return &ids[k]
		}
	}
	return nil
}
