package lake

import (
	"fmt"
	"sync/atomic"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

// The ivf state an output table keeps for its incremental runs.
//
// An incremental run over a table that a full run would search with ivf
// searches in an ivf partitioning of all rows (search.go).
// Fitting it (k-means on a sample) and probing every row against its P =
// N/500 centroids is O(N P d): at 1M rows the one part of an incremental run
// that grows faster than the table. So a table run with --incremental keeps
// the partitioning its pipeline fitted and used (keptio.KeepIVFDir) in a file beside
// the output table's data files (io/keptio.IVF), named in its snapshot's
// summary (icebergio.Run.State): the k-means model, the standardisation the
// rows were probed in, and every row's probes by id.
// The next incremental run probes only the new rows against the kept model
// and keeps model and probes for the run after it. The partitioning is
// refitted (as without a state) when there is no usable state: an output
// table written before states were kept, a state of another format version,
// another seed, metric, --partitions or --nprobe, a state holding a row the
// input no longer holds (or holds as new), or a table grown past twice the rows the model was
// fitted on (its partitions, sized for that many rows, would be twice as
// large and the searches twice as slow), or a kept file gone or unreadable
// (Iceberg's metadata does not reference it, so a table maintenance job
// that removes orphan files removes it). A full run without --incremental
// keeps none. A directory lake's full run keeps its partitioning beside the
// output (keptio.DirIVFFileName, named in summary.json) and its incremental
// runs read it without writing another: each probes the rows the state does
// not hold, those appended since the full run, at a cost of rows x
// partitions x d, small beside the searches.

// usable says why a kept state cannot serve a run of plan over n rows, or
// "" when it can.
func usable(s *keptio.IVF, plan *job.Job, n int) string {
	parts, np := plan.IVFGiven()
	np = min(np, s.Model.P())
	o := plan.NeighbourParams()
	switch {
	case s.Seed != plan.Seed():
		return fmt.Sprintf("it was made with seed %d", s.Seed)
	case s.Metric != o.Metric || s.Model.Metric != o.Metric:
		return "it was made with another metric"
	case parts > 0 && parts != s.Model.P():
		return fmt.Sprintf("it has %d partitions, --partitions is %d", s.Model.P(), parts)
	case s.NProbe != np:
		return fmt.Sprintf("it probes %d partitions per row, this run %d", s.NProbe, np)
	case int64(n) > 2*s.FitRows:
		return fmt.Sprintf("the table has %d rows, more than twice the %d its partitions were fitted for", n, s.FitRows)
	case (s.Mean != nil) != o.Standardise:
		return "it was made with another --standardise"
	case s.Model.D == 0:
		return "it has no model"
	}
	return ""
}

// launcherFits counts the partitionings fitted in the launcher
// (newIVFState), for the test that a full table run keeps its pipeline's
// instead of fitting another (TestLakeKeptPartitioning).
var launcherFits atomic.Int64

// newIVFState fits and assigns the partitioning of d's rows for plan:
// what an incremental run without a usable state does. (A full table run
// with --incremental keeps its pipeline's: keptio.KeepIVFDir.)
func newIVFState(d *incData, plan *job.Job, s knn.Searcher) (*keptio.IVF, *ivf.Partitioning, knn.Matrix, error) {
	launcherFits.Add(1)
	o := plan.NeighbourParams()
	feats, mean, std := standardised(d, o.Standardise)
	x := knn.Matrix{Rows: d.n, Cols: d.d, Data: feats}
	model, pt, err := fitIVF(x, d.keys, plan, s)
	if err != nil {
		return nil, nil, x, err
	}
	st := &keptio.IVF{Seed: plan.Seed(), Metric: o.Metric, NProbe: pt.NProbe, FitRows: int64(d.n), Model: model, Mean: mean, Std: std,
		Keys: append([]int64(nil), d.keys...), Probes: pt.Probe}
	return st, pt, x, nil
}

// standardised is d's features as the incremental run searches them:
// standardised over all rows when on (--standardise; a copy), with the
// moments.
func standardised(d *incData, on bool) ([]float32, []float64, []float64) {
	if !on {
		return d.feats, nil, nil
	}
	mean, std := engine.Moments(d.feats, d.n, d.d)
	feats := make([]float32, len(d.feats))
	engine.StandardiseInto(feats, d.feats, d.d, mean, std)
	return feats, mean, std
}

// extend makes the partitioning of d's rows from the kept state s: the
// probes of the rows s holds from s, the rows it does not hold (the new
// ones; in a directory lake, whose state stays its full run's, also those
// appended since) probed against s's model, in s's standardisation: the
// probes any run would make of them. It returns the partitioning and the
// state for the next run (s plus the rows probed), or ok false when s holds
// a row the input no longer holds, or holds as new.
func extend(s *keptio.IVF, d *incData, keyRow map[int64]int, sr knn.Searcher) (pt *ivf.Partitioning, next *keptio.IVF, ok bool, err error) {
	np := s.NProbe
	pt = &ivf.Partitioning{NProbe: np, Probe: make([]int32, d.n*np)}
	have := make([]bool, d.n)
	for j, key := range s.Keys {
		i, in := keyRow[key]
		if !in || d.isNew[i] || have[i] {
			// A kept row gone from the input, or one the input holds as
			// new: the state is not of this table's old rows.
			return nil, nil, false, nil
		}
		have[i] = true
		copy(pt.Probe[i*np:(i+1)*np], s.Probes[j*np:(j+1)*np])
	}
	var rest []int
	for i := range have {
		if !have[i] {
			rest = append(rest, i)
		}
	}
	q := make([]float32, 0, len(rest)*d.d)
	for _, i := range rest {
		q = append(q, d.feats[i*d.d:(i+1)*d.d]...)
	}
	if s.Mean != nil {
		engine.Standardise(q, d.d, s.Mean, s.Std)
	}
	npt, err := ivf.Assign(knn.Matrix{Rows: len(rest), Cols: d.d, Data: q}, s.Model, np, sr)
	if err != nil {
		return nil, nil, false, err
	}
	next = &keptio.IVF{Seed: s.Seed, Metric: s.Metric, NProbe: np, FitRows: s.FitRows, Model: s.Model, Mean: s.Mean, Std: s.Std,
		Keys: append(make([]int64, 0, len(s.Keys)+len(rest)), s.Keys...), Probes: append(make([]int32, 0, len(s.Probes)+len(rest)*np), s.Probes...)}
	for r, i := range rest {
		copy(pt.Probe[i*np:(i+1)*np], npt.Probe[r*np:(r+1)*np])
		next.Keys = append(next.Keys, d.keys[i])
		next.Probes = append(next.Probes, npt.Probe[r*np:(r+1)*np]...)
	}
	return pt, next, true, nil
}

// keptPartitioning is extend with its error wrapped; pt is nil when
// the state holds rows the input no longer holds, or holds as new.
func keptPartitioning(kept *keptio.IVF, d *incData, keyRow map[int64]int, s knn.Searcher) (*ivf.Partitioning, *keptio.IVF, error) {
	pt, next, ok, err := extend(kept, d, keyRow, s)
	if err != nil {
		return nil, nil, fmt.Errorf("relabel: incremental: probing the new rows in the kept ivf partitioning: %w", err)
	}
	if !ok {
		return nil, nil, nil
	}
	return pt, next, nil
}
