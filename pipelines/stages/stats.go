package stages

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/engine"
)

// Stats is the global pass over the input, one value for the whole dataset:
// row count, per-feature moments for standardisation, the candidate set's keys,
// and the first duplicate id, if any. It is accumulated per input batch and
// finished in a fixed (shard, offset) order, so it is identical on every runner
// and for every bundling.
type Stats struct {
	N int64
	D int
	// Batches are the input batches seen (shard, offset, rows); Mean and M2
	// are their per-feature moments (batch b's at [b*D, (b+1)*D)); after
	// ExtractOutput they are the global mean and standard deviation.
	Shards  []string
	Offsets []int64
	Counts  []int64
	Mean    []float64
	M2      []float64
	// Keys and Pos: every item's key and its batch (high 32 bits) and row
	// within the batch (low 32 bits). After ExtractOutput Keys holds the
	// candidate keys ascending and Pos is nil.
	Keys []int64
	Pos  []int64
	// Dup describes the first duplicate id found ("" when none).
	Dup string
}

func encodeStats(s Stats) []byte {
	var w wire.Writer
	w.Varint(s.N)
	w.Uvarint(uint64(s.D))
	w.Strings(s.Shards)
	wire.Slice(&w, s.Offsets)
	wire.Slice(&w, s.Counts)
	wire.Slice(&w, s.Mean)
	wire.Slice(&w, s.M2)
	wire.Slice(&w, s.Keys)
	wire.Slice(&w, s.Pos)
	w.String(s.Dup)
	return w.B
}

func decodeStats(b []byte) (Stats, error) {
	r := wire.Reader{B: b}
	var s Stats
	s.N = r.Varint()
	s.D = int(r.Uvarint())
	s.Shards = r.Strings()
	s.Offsets = wire.ReadSlice[int64](&r)
	s.Counts = wire.ReadSlice[int64](&r)
	s.Mean = wire.ReadSlice[float64](&r)
	s.M2 = wire.ReadSlice[float64](&r)
	s.Keys = wire.ReadSlice[int64](&r)
	s.Pos = wire.ReadSlice[int64](&r)
	s.Dup = r.String()
	return s, r.Err()
}

// statsFn is the CombineFn building Stats.
type statsFn struct {
	// Candidates bounds the candidate set (0 = all items).
	Candidates int
	Seed       uint64
	// IDColumn names the id column in duplicate errors.
	IDColumn string
}

func (f *statsFn) CreateAccumulator() Stats { return Stats{} }

func (f *statsFn) AddInput(a Stats, r schemas.Rows) Stats {
	n, d := r.Len(), r.D
	b := int64(len(a.Shards))
	a.Shards = append(a.Shards, r.Shard)
	a.Offsets = append(a.Offsets, r.Offset)
	a.Counts = append(a.Counts, int64(n))
	a.D = d
	a.N += int64(n)
	mean := make([]float64, d)
	m2 := make([]float64, d)
	for i := 0; i < n; i++ {
		for j, v := range r.Features[i*d : (i+1)*d] {
			mean[j] += float64(v)
		}
	}
	for j := range mean {
		mean[j] /= float64(max(n, 1))
	}
	for i := 0; i < n; i++ {
		for j, v := range r.Features[i*d : (i+1)*d] {
			dv := float64(v) - mean[j]
			m2[j] += dv * dv
		}
	}
	a.Mean = append(a.Mean, mean...)
	a.M2 = append(a.M2, m2...)
	a.Keys = append(a.Keys, r.IDs...)
	for i := 0; i < n; i++ {
		a.Pos = append(a.Pos, b<<32|int64(i))
	}
	return a
}

func (f *statsFn) MergeAccumulators(a, b Stats) Stats {
	shift := int64(len(a.Shards))
	a.Shards = append(a.Shards, b.Shards...)
	a.Offsets = append(a.Offsets, b.Offsets...)
	a.Counts = append(a.Counts, b.Counts...)
	a.Mean = append(a.Mean, b.Mean...)
	a.M2 = append(a.M2, b.M2...)
	a.Keys = append(a.Keys, b.Keys...)
	for _, p := range b.Pos {
		a.Pos = append(a.Pos, p+shift<<32)
	}
	a.N += b.N
	if a.D == 0 {
		a.D = b.D
	}
	return a
}

func (f *statsFn) ExtractOutput(a Stats) Stats {
	d := a.D
	// Fixed order: batches by (shard, offset), so float sums do not depend on
	// how a runner bundled or merged.
	order := make([]int, len(a.Shards))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(a.Shards[x], a.Shards[y]), cmp.Compare(a.Offsets[x], a.Offsets[y]))
	})
	// Chan et al.'s parallel update of (count, mean, M2).
	mean := make([]float64, d)
	m2 := make([]float64, d)
	var cnt float64
	for _, b := range order {
		nb := float64(a.Counts[b])
		if nb == 0 {
			continue
		}
		tot := cnt + nb
		for j := 0; j < d; j++ {
			mb, m2b := a.Mean[b*d+j], a.M2[b*d+j]
			delta := mb - mean[j]
			mean[j] += delta * nb / tot
			m2[j] += m2b + delta*delta*cnt*nb/tot
		}
		cnt = tot
	}
	std := make([]float64, d)
	for j := range std {
		std[j] = math.Sqrt(m2[j] / math.Max(cnt, 1))
		if std[j] == 0 || math.IsNaN(std[j]) {
			std[j] = 1
		}
	}
	out := Stats{N: a.N, D: d, Mean: mean, M2: std}
	// Duplicates: sort (key, position); equal neighbours are duplicates.
	idx := make([]int, len(a.Keys))
	for i := range idx {
		idx[i] = i
	}
	pos := func(i int) (string, int64) {
		b := a.Pos[i] >> 32
		return a.Shards[b], a.Offsets[b] + a.Pos[i]&(1<<32-1)
	}
	slices.SortFunc(idx, func(x, y int) int {
		if c := cmp.Compare(a.Keys[x], a.Keys[y]); c != 0 {
			return c
		}
		sx, rx := pos(x)
		sy, ry := pos(y)
		return cmp.Or(cmp.Compare(sx, sy), cmp.Compare(rx, ry))
	})
	for i := 1; i < len(idx); i++ {
		if a.Keys[idx[i]] == a.Keys[idx[i-1]] {
			s1, r1 := pos(idx[i-1])
			s2, r2 := pos(idx[i])
			out.Dup = shardio.DuplicateError(f.IDColumn, fmt.Sprint(a.Keys[idx[i]]), s2, r2, s1, r1).Error()
			break
		}
	}
	keys := make([]int64, len(idx))
	for i, x := range idx {
		keys[i] = a.Keys[x]
	}
	out.Keys = candidateKeys(keys, f.Candidates, f.Seed)
	return out
}

// candidateKeys returns the candidate keys ascending: all keys, or the limit
// with the smallest engine.CandidateHash, the same choice the engine makes.
func candidateKeys(sorted []int64, limit int, seed uint64) []int64 {
	if limit <= 0 || limit >= len(sorted) {
		return sorted
	}
	idx := engine.SelectCandidates(sorted, limit, seed)
	out := make([]int64, len(idx))
	for i, x := range idx {
		out[i] = sorted[x]
	}
	return out
}

// CandIndex returns key's index in the candidate set, or -1.
func (s *Stats) CandIndex(key int64) int32 {
	i := sort.Search(len(s.Keys), func(i int) bool { return s.Keys[i] >= key })
	if i < len(s.Keys) && s.Keys[i] == key {
		return int32(i)
	}
	return -1
}

// momentsFn is statsFn without the keys: the global moments for
// standardisation, in the same fixed order (so the same values), but O(batches
// x D) instead of O(rows), for a mode that checks duplicate ids with a keyed
// shuffle (pipelines/ivfstages) rather than on one worker.
type momentsFn struct{}

func (momentsFn) CreateAccumulator() Stats { return Stats{} }

func (momentsFn) AddInput(a Stats, r schemas.Rows) Stats {
	a = (&statsFn{}).AddInput(a, r)
	a.Keys, a.Pos = nil, nil
	return a
}

func (momentsFn) MergeAccumulators(a, b Stats) Stats {
	a = (&statsFn{}).MergeAccumulators(a, b)
	a.Keys, a.Pos = nil, nil
	return a
}

func (momentsFn) ExtractOutput(a Stats) Stats { return (&statsFn{}).ExtractOutput(a) }

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*statsFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*momentsFn)(nil)).Elem())
}

// StatsParams configures ComputeStats.
type StatsParams struct {
	// Candidates bounds the candidate set to the Candidates items with the
	// smallest engine.CandidateHash(Seed, key), the engine's choice.
	// Optional, default 0: every item is a candidate.
	Candidates int
	// Seed keys the candidate choice. Required (0 is a seed).
	Seed uint64
	// IDColumn names the id column in duplicate-id errors. Optional.
	IDColumn string
}

// Validate checks p, in the stage's terms.
func (p StatsParams) Validate() error {
	if p.Candidates < 0 {
		return fmt.Errorf("stages: Stats: Candidates = %d, want >= 0 (0: every item)", p.Candidates)
	}
	return nil
}

// ComputeStats computes the global Stats of rows (PCollection<schemas.Rows>) as a
// singleton PCollection<Stats>. It costs one pass over the rows and holds
// every key on one worker (for the duplicate check and the candidate set):
// the exact and sample modes' bound; ivf mode checks keys by hash bucket
// instead. It panics on invalid p, while the pipeline is built.
func ComputeStats(s beam.Scope, rows beam.PCollection, p StatsParams) beam.PCollection {
	s = s.Scope("relabel.Stats")
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return beam.Combine(s, &statsFn{Candidates: p.Candidates, Seed: p.Seed, IDColumn: p.IDColumn}, rows)
}

// ComputeMoments is ComputeStats without the keys: rows
// (PCollection<schemas.Rows>) to a singleton PCollection<Stats> holding N, D
// and the global moments only (no candidate keys, no duplicate check). It
// costs O(batches x D) on one worker, so it suits inputs too large for
// ComputeStats' one-worker key set; the moments are the same values
// ComputeStats gives.
func ComputeMoments(s beam.Scope, rows beam.PCollection) beam.PCollection {
	s = s.Scope("relabel.Moments")
	return beam.Combine(s, &momentsFn{}, rows)
}
