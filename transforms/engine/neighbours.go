package engine

import (
	"fmt"
	"slices"
	"sort"

	"github.com/relabel/relabel/internal/splitmix"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
)

// CandidateHash orders items for candidate selection: a keyed hash, so the
// choice is a pure function of (seed, key), independent of input order and of
// how a runner splits the data.
func CandidateHash(seed uint64, key int64) uint64 {
	return splitmix.Mix64(uint64(key) ^ (seed * splitmix.Golden))
}

// SelectCandidates returns the indices of the candidate items, ascending: all
// items when limit is 0 or >= len(keys), else the limit items with the smallest
// CandidateHash (the paper's random subset, made reproducible).
func SelectCandidates(keys []int64, limit int, seed uint64) []int {
	n := len(keys)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if limit <= 0 || limit >= n {
		return idx
	}
	sort.Slice(idx, func(a, b int) bool {
		ha, hb := CandidateHash(seed, keys[idx[a]]), CandidateHash(seed, keys[idx[b]])
		if ha != hb {
			return ha < hb
		}
		return keys[idx[a]] < keys[idx[b]]
	})
	idx = idx[:limit]
	sort.Ints(idx)
	return idx
}

// Neighbourhoods holds every item's K neighbours as indices into the candidate
// set (-1 = none) and their mixture weights (each row sums to 1 over valid
// neighbours).
type Neighbourhoods struct {
	K      int
	Index  []int32
	Weight []float64
}

// BatchRows is how many query rows one kNN/LLC call handles.
const BatchRows = 1024

// Neighbours searches every item's K nearest candidates and weights them.
func Neighbours(feats []float32, keys []int64, d int, cands []int, o Options, be Backends) (*Neighbourhoods, error) {
	n := len(keys)
	cm := knn.Matrix{Rows: len(cands), Cols: d, Data: make([]float32, len(cands)*d)}
	cids := make([]int64, len(cands))
	for c, i := range cands {
		copy(cm.Data[c*d:(c+1)*d], feats[i*d:(i+1)*d])
		cids[c] = keys[i]
	}
	idx, err := be.Searcher.Index(cm, cids, o.Metric)
	if err != nil {
		return nil, fmt.Errorf("engine: indexing %d candidates: %w", len(cands), err)
	}
	defer idx.Close()
	nb := &Neighbourhoods{K: o.K, Index: make([]int32, n*o.K), Weight: make([]float64, n*o.K)}
	var res knn.Result
	var wb WeightBuffer
	for lo := 0; lo < n; lo += BatchRows {
		hi := min(lo+BatchRows, n)
		q := knn.Matrix{Rows: hi - lo, Cols: d, Data: feats[lo*d : hi*d]}
		if err := idx.Search(&res, q, keys[lo:hi], o.K); err != nil {
			return nil, fmt.Errorf("engine: kNN search of rows %d..%d: %w", lo, hi, err)
		}
		copy(nb.Index[lo*o.K:hi*o.K], res.Index)
		if err := wb.Weights(nb.Weight[lo*o.K:hi*o.K], q, cm, &res, o.Weighting, o.LLC, be.Coder); err != nil {
			return nil, fmt.Errorf("engine: neighbour weights of rows %d..%d: %w", lo, hi, err)
		}
	}
	return nb, nil
}

// weightGatherFloats bounds the neighbours' features Weights gathers at a
// time (4 Mi floats, 16 MiB): large enough for a GPU coder's batch, small
// enough to stay resident between batches.
const weightGatherFloats = 4 << 20

// WeightBuffer is reusable scratch for Weights.
type WeightBuffer struct {
	nbr  []float32
	lens []int32
}

// Weights computes the mixture weights of a batch of neighbourhoods into dst
// (q.Rows x res.K): LLC codes (METHOD.md step 2) or uniform over valid
// neighbours, or their average (Blend); lp configures the LLC QP. cands holds
// the candidate features res.Index points into.
func (wb *WeightBuffer) Weights(dst []float64, q, cands knn.Matrix, res *knn.Result, w Weighting, lp llc.Params, coder llc.Coder) error {
	b, k, d := q.Rows, res.K, q.Cols
	if cap(wb.lens) < b {
		wb.lens = make([]int32, b)
	}
	wb.lens = wb.lens[:b]
	for i := 0; i < b; i++ {
		var l int32
		for j := 0; j < k && res.Index[i*k+j] >= 0; j++ {
			l++
		}
		wb.lens[i] = l
	}
	if w != Uniform && slices.Contains(wb.lens, 0) {
		return wb.weightsIsolated(dst, q, cands, res, w, lp, coder)
	}
	if w == Uniform {
		for i := 0; i < b; i++ {
			for j := 0; j < k; j++ {
				dst[i*k+j] = 0
				if int32(j) < wb.lens[i] {
					dst[i*k+j] = 1 / float64(wb.lens[i])
				}
			}
		}
		return nil
	}
	// The neighbours' features are gathered and coded a slice of rows at a
	// time: a batch's whole gather (B x K x D floats, 95 MB for 9,300 rows
	// of 10 neighbours at d = 256) is fresh memory the kernel must fault in
	// on every batch, which cost more than the coding on the 2-core VM.
	// The coding of a row does not depend on the others, so the weights are
	// the same bits.
	step := max(1, weightGatherFloats/(k*d))
	if n := min(step, b) * k * d; cap(wb.nbr) < n {
		wb.nbr = make([]float32, n)
	}
	for lo := 0; lo < b; lo += step {
		hi := min(lo+step, b)
		nbr := wb.nbr[:(hi-lo)*k*d]
		for i := lo; i < hi; i++ {
			for j := 0; j < k; j++ {
				row := nbr[((i-lo)*k+j)*d : ((i-lo)*k+j+1)*d]
				if c := res.Index[i*k+j]; c >= 0 {
					copy(row, cands.Row(int(c)))
				} else {
					clear(row)
				}
			}
		}
		sub := llc.Batch{B: hi - lo, K: k, D: d, X: q.Data[lo*d : hi*d], N: nbr, Dist: res.Dist[lo*k : hi*k], Len: wb.lens[lo:hi]}
		if err := coder.Code(dst[lo*k:hi*k], sub, lp); err != nil {
			if lo > 0 {
				// The coder numbers neighbourhoods within the slice.
				return fmt.Errorf("the batch's rows from %d: %w", lo, err)
			}
			return err
		}
	}
	if w == Blend {
		for i := 0; i < b; i++ {
			for j := 0; j < int(wb.lens[i]); j++ {
				dst[i*k+j] = 0.5*dst[i*k+j] + 0.5/float64(wb.lens[i])
			}
		}
	}
	return nil
}

// weightsIsolated is Weights for a batch in which some query has no valid
// neighbour at all. ivf can leave a row so: k-means may keep an outlier's
// centroid to itself, and the home partition of that row then stores no other
// row. Such a row gets no weights, so its round mixes its own state alone
// (mixture.Workspace.Round), as an isolated item should; llc.Coder refuses a
// neighbourhood of Len 0, so the others are coded as a batch of their own.
func (wb *WeightBuffer) weightsIsolated(dst []float64, q, cands knn.Matrix, res *knn.Result, w Weighting, lp llc.Params, coder llc.Coder) error {
	b, k, d := q.Rows, res.K, q.Cols
	var keep []int
	for i, l := range wb.lens {
		if l > 0 {
			keep = append(keep, i)
		}
	}
	sub := knn.Matrix{Rows: len(keep), Cols: d, Data: make([]float32, 0, len(keep)*d)}
	var sr knn.Result
	sr.Reset(len(keep), k)
	for a, i := range keep {
		sub.Data = append(sub.Data, q.Row(i)...)
		copy(sr.Index[a*k:(a+1)*k], res.Index[i*k:(i+1)*k])
		copy(sr.Dist[a*k:(a+1)*k], res.Dist[i*k:(i+1)*k])
	}
	sd := make([]float64, len(keep)*k)
	if len(keep) > 0 {
		var inner WeightBuffer
		if err := inner.Weights(sd, sub, cands, &sr, w, lp, coder); err != nil {
			return err
		}
	}
	clear(dst[:b*k])
	for a, i := range keep {
		copy(dst[i*k:(i+1)*k], sd[a*k:(a+1)*k])
	}
	return nil
}
