package lake

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/options"
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
// the partitioning its pipeline fitted and used (fullIVFState) in a file beside the output table's data files,
// named in its snapshot's summary (icebergio.Run.State): the k-means model,
// the standardisation the rows were probed in, and every row's probes by id.
// The next incremental run probes only the new rows against the kept model
// and keeps model and probes for the run after it. The partitioning is
// refitted (as without a state) when there is no usable state: an output
// table written before states were kept, a state of another format version,
// another seed, metric, --partitions or --nprobe, a state that does not
// cover every old row, or a table grown past twice the rows the model was
// fitted on (its partitions, sized for that many rows, would be twice as
// large and the searches twice as slow), or a kept file gone or unreadable
// (Iceberg's metadata does not reference it, so a table maintenance job
// that removes orphan files removes it). A full run without --incremental
// keeps none; directory lakes keep none (they refit every run).

// ivfStateMagic starts a state file; the version after it changes with the
// layout (2: the model in ivf's one encoding, transforms/ivf/codec.go).
const (
	ivfStateMagic   = "relabel ivf-state\n"
	ivfStateVersion = uint32(2)
)

// ivfState is a kept partitioning.
type ivfState struct {
	seed   uint64
	metric knn.Metric
	nprobe int
	// fitRows is the row count the model was fitted for.
	fitRows int64
	model   *ivf.Model
	// mean and std standardised the rows the probes were computed on; nil
	// when the run did not standardise.
	mean, std []float64
	// keys are the rows' id keys, probes their nprobe partitions each,
	// nearest first.
	keys   []int64
	probes []int32
}

// ivfStateHeader is the fixed part of the file, after the magic. The
// model's encoding (ModelBytes long) follows it, then the moments (when
// Standardised), the keys and the probes.
type ivfStateHeader struct {
	Version      uint32
	Metric       int32
	Seed         uint64
	NProbe       int32
	Standardised uint8
	_            [3]byte
	FitRows      int64
	Rows         int64
	ModelBytes   int64
}

func (s *ivfState) encode() []byte {
	var b bytes.Buffer
	// A model's encoding does not fail.
	model, _ := s.model.AppendBinary(nil)
	b.WriteString(ivfStateMagic)
	h := ivfStateHeader{Version: ivfStateVersion, Seed: s.seed, Metric: int32(s.metric), NProbe: int32(s.nprobe), FitRows: s.fitRows,
		Rows: int64(len(s.keys)), ModelBytes: int64(len(model))}
	if s.mean != nil {
		h.Standardised = 1
	}
	// Writes to a bytes.Buffer do not fail.
	binary.Write(&b, binary.LittleEndian, &h)
	b.Write(model)
	if s.mean != nil {
		binary.Write(&b, binary.LittleEndian, s.mean)
		binary.Write(&b, binary.LittleEndian, s.std)
	}
	binary.Write(&b, binary.LittleEndian, s.keys)
	binary.Write(&b, binary.LittleEndian, s.probes)
	return b.Bytes()
}

// errStateVersion says a state file is of another layout version: the run
// refits instead of reading it.
type errStateVersion struct{ version uint32 }

func (e errStateVersion) Error() string {
	return fmt.Sprintf("state format version %d, this relabel reads version %d", e.version, ivfStateVersion)
}

func decodeIVFState(b []byte) (*ivfState, error) {
	if !bytes.HasPrefix(b, []byte(ivfStateMagic)) {
		return nil, fmt.Errorf("not an ivf state file (no %q header)", ivfStateMagic[:len(ivfStateMagic)-1])
	}
	r := bytes.NewReader(b[len(ivfStateMagic):])
	var h ivfStateHeader
	if err := binary.Read(r, binary.LittleEndian, &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if h.Version != ivfStateVersion {
		return nil, errStateVersion{h.Version}
	}
	if h.ModelBytes < 0 || h.ModelBytes > int64(r.Len()) {
		return nil, fmt.Errorf("header: a model of %d bytes, %d bytes after the header", h.ModelBytes, r.Len())
	}
	mb := make([]byte, h.ModelBytes)
	r.Read(mb)
	model := &ivf.Model{}
	if err := model.UnmarshalBinary(mb); err != nil {
		return nil, err
	}
	p, d := int64(model.P()), int64(model.D)
	if p <= 0 || d <= 0 || h.NProbe <= 0 || int64(h.NProbe) > p || h.Rows < 0 {
		return nil, fmt.Errorf("header: %d partitions, d = %d, nprobe %d, %d rows", p, d, h.NProbe, h.Rows)
	}
	want := h.Rows * (8 + int64(h.NProbe)*4)
	if h.Standardised != 0 {
		want += 2 * d * 8
	}
	if int64(r.Len()) != want {
		return nil, fmt.Errorf("%d bytes after the header and model, want %d", r.Len(), want)
	}
	s := &ivfState{seed: h.Seed, metric: knn.Metric(h.Metric), nprobe: int(h.NProbe), fitRows: h.FitRows, model: model,
		keys: make([]int64, h.Rows), probes: make([]int32, h.Rows*int64(h.NProbe))}
	var parts []any
	if h.Standardised != 0 {
		s.mean, s.std = make([]float64, d), make([]float64, d)
		parts = append(parts, s.mean, s.std)
	}
	parts = append(parts, s.keys, s.probes)
	for _, part := range parts {
		if err := binary.Read(r, binary.LittleEndian, part); err != nil {
			return nil, err
		}
	}
	if r.Len() != 0 {
		return nil, io.ErrUnexpectedEOF // unreachable: the length was checked
	}
	for _, q := range s.probes {
		if int64(q) < 0 || int64(q) >= p {
			return nil, fmt.Errorf("a probe of partition %d, of %d", q, p)
		}
	}
	return s, nil
}

// readIVFState reads the state file at path.
func readIVFState(ctx context.Context, path string) (*ivfState, error) {
	fs, err := blobio.For(path)
	if err != nil {
		return nil, err
	}
	b, err := blobio.ReadFile(ctx, fs, path)
	if err != nil {
		return nil, err
	}
	s, err := decodeIVFState(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// usable says why a kept state cannot serve a run over n rows with options
// o, or "" when it can.
func (s *ivfState) usable(o *options.Options, n int) string {
	np := min(o.NProbe.Or(ivf.DefaultNProbe), s.model.P())
	switch {
	case s.seed != o.Seed:
		return fmt.Sprintf("it was made with seed %d", s.seed)
	case s.metric != o.Metric || s.model.Metric != o.Metric:
		return "it was made with another metric"
	case o.Partitions.Set && o.Partitions.V > 0 && o.Partitions.V != s.model.P():
		return fmt.Sprintf("it has %d partitions, --partitions is %d", s.model.P(), o.Partitions.V)
	case s.nprobe != np:
		return fmt.Sprintf("it probes %d partitions per row, this run %d", s.nprobe, np)
	case int64(n) > 2*s.fitRows:
		return fmt.Sprintf("the table has %d rows, more than twice the %d its partitions were fitted for", n, s.fitRows)
	case (s.mean != nil) != o.Standardise:
		return "it was made with another --standardise"
	case s.model.D == 0:
		return "it has no model"
	}
	return ""
}

// launcherFits counts the partitionings fitted in the launcher
// (newIVFState), for the test that a full table run keeps its pipeline's
// instead of fitting another (TestLakeKeptPartitioning).
var launcherFits atomic.Int64

// newIVFState fits and assigns the partitioning of d's rows for options o:
// what an incremental run without a usable state does. (A full table run
// with --incremental keeps its pipeline's: fullIVFState.)
func newIVFState(d *incData, o *options.Options, s knn.Searcher) (*ivfState, *ivf.Partitioning, knn.Matrix, error) {
	launcherFits.Add(1)
	feats, mean, std := standardised(d, o)
	x := knn.Matrix{Rows: d.n, Cols: d.d, Data: feats}
	model, pt, err := fitIVF(x, d.keys, o, s)
	if err != nil {
		return nil, nil, x, err
	}
	st := &ivfState{seed: o.Seed, metric: o.Metric, nprobe: pt.NProbe, fitRows: int64(d.n), model: model, mean: mean, std: std,
		keys: append([]int64(nil), d.keys...), probes: pt.Probe}
	return st, pt, x, nil
}

// standardised is d's features as the incremental run searches them:
// standardised over all rows when o says so (a copy), with the moments.
func standardised(d *incData, o *options.Options) ([]float32, []float64, []float64) {
	if !o.Standardise {
		return d.feats, nil, nil
	}
	feats := append([]float32(nil), d.feats...)
	mean, std := engine.Moments(feats, d.n, d.d)
	engine.Standardise(feats, d.d, mean, std)
	return feats, mean, std
}

// extend makes the partitioning of d's rows from the kept state s: the old
// rows' probes from s, the rows s does not hold (the new ones) probed
// against s's model, in s's standardisation. It returns the partitioning
// and the state for the next run (s plus the new rows), or ok false when s
// does not hold every old row.
func (s *ivfState) extend(d *incData, keyRow map[int64]int, sr knn.Searcher) (pt *ivf.Partitioning, next *ivfState, ok bool, err error) {
	np := s.nprobe
	pt = &ivf.Partitioning{NProbe: np, Probe: make([]int32, d.n*np)}
	have := make([]bool, d.n)
	for j, key := range s.keys {
		i, in := keyRow[key]
		if !in || d.isNew[i] || have[i] {
			// A kept row gone from the input, or one the input holds as
			// new: the state is not of this table's old rows.
			return nil, nil, false, nil
		}
		have[i] = true
		copy(pt.Probe[i*np:(i+1)*np], s.probes[j*np:(j+1)*np])
	}
	var rest []int
	for i := range have {
		if !have[i] {
			if !d.isNew[i] {
				return nil, nil, false, nil
			}
			rest = append(rest, i)
		}
	}
	q := make([]float32, 0, len(rest)*d.d)
	for _, i := range rest {
		q = append(q, d.feats[i*d.d:(i+1)*d.d]...)
	}
	if s.mean != nil {
		engine.Standardise(q, d.d, s.mean, s.std)
	}
	npt, err := ivf.Assign(knn.Matrix{Rows: len(rest), Cols: d.d, Data: q}, s.model, np, sr)
	if err != nil {
		return nil, nil, false, err
	}
	next = &ivfState{seed: s.seed, metric: s.metric, nprobe: np, fitRows: s.fitRows, model: s.model, mean: s.mean, std: s.std,
		keys: append(make([]int64, 0, len(s.keys)+len(rest)), s.keys...), probes: append(make([]int32, 0, len(s.probes)+len(rest)*np), s.probes...)}
	for r, i := range rest {
		copy(pt.Probe[i*np:(i+1)*np], npt.Probe[r*np:(r+1)*np])
		next.keys = append(next.keys, d.keys[i])
		next.probes = append(next.probes, npt.Probe[r*np:(r+1)*np]...)
	}
	return pt, next, true, nil
}

// keptPartitioning is kept.extend with its error wrapped; pt is nil when
// the state does not hold every old row.
func keptPartitioning(kept *ivfState, d *incData, keyRow map[int64]int, s knn.Searcher) (*ivf.Partitioning, *ivfState, error) {
	pt, next, ok, err := kept.extend(d, keyRow, s)
	if err != nil {
		return nil, nil, fmt.Errorf("relabel: incremental: probing the new rows in the kept ivf partitioning: %w", err)
	}
	if !ok {
		return nil, nil, nil
	}
	return pt, next, nil
}

// ivfStateName is the state file's name in a run's directory.
const ivfStateName = "ivf.state"

// keepIVFState writes s into the run directory dir and returns its path,
// for the run's snapshot to name.
func keepIVFState(ctx context.Context, fs blobio.FS, dir string, s *ivfState) (string, error) {
	p := blobio.Join(dir, ivfStateName)
	if err := blobio.WriteFile(ctx, fs, p, s.encode()); err != nil {
		return "", fmt.Errorf("relabel: keeping the ivf partitioning: %w", err)
	}
	return p, nil
}
