package ivfstages

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

// sampleFn keeps the k-means sample: the Cap rows with the smallest
// ivf.Hash(Seed, key), raw features (standardised by fitFn, once the moments
// are known). The result does not depend on bundling or merge order.
type sampleFn struct {
	Cap  int
	Seed uint64
}

func (f *sampleFn) CreateAccumulator() ivf.Sample { return ivf.Sample{Cap: f.Cap} }

func (f *sampleFn) AddInput(a ivf.Sample, r schemas.Rows) ivf.Sample {
	a.Cap = f.Cap
	for i, key := range r.IDs {
		a.Add(ivf.Hash(f.Seed, key), key, r.Features[i*r.D:(i+1)*r.D])
	}
	return a
}

func (f *sampleFn) MergeAccumulators(a, b ivf.Sample) ivf.Sample {
	a.Cap = f.Cap
	a.Merge(&b)
	return a
}

func (f *sampleFn) ExtractOutput(a ivf.Sample) ivf.Sample {
	a.Cap = f.Cap
	a.Trim()
	return a
}

// fitFn standardises the sample and fits the partitioning P (complete:
// resolved for the plan's row count at the entry).
type fitFn struct {
	P           ivf.Params
	Standardise bool
	// Keep: see Params.Keep.
	Keep string
}

func (f *fitFn) ProcessElement(ctx context.Context, s ivf.Sample, st stages.Stats, emit func(ivf.Model)) error {
	p := f.P
	n := min(s.Len(), p.Sample)
	x := s.Features[:n*s.D]
	if f.Standardise {
		x = append([]float32(nil), x...)
		engine.Standardise(x, s.D, st.Mean, st.M2)
	}
	m, err := ivf.Fit(knn.Matrix{Rows: n, Cols: s.D, Data: x}, st.N, p, knn.CPU{})
	if err != nil {
		return fmt.Errorf("ivfstages: %w", err)
	}
	if f.Keep != "" {
		k := &keptio.IVF{Seed: p.Seed, Metric: p.Metric, NProbe: min(p.NProbe, m.P()), FitRows: st.N, Model: m}
		if f.Standardise {
			k.Mean, k.Std = st.Mean, st.M2 // the standard deviation, after ExtractOutput
		}
		if err := keptio.WriteIVFModel(ctx, f.Keep, k); err != nil {
			return err
		}
	}
	progress.Notef("ivf: %d partitions fitted on %d sampled rows of %d, %d blocks", m.P(), n, st.N, sum32(m.Blocks))
	emit(*m)
	return nil
}

func sum32(v []int32) int64 {
	var s int64
	for _, x := range v {
		s += int64(x)
	}
	return s
}

// dupBucketFn sends every key of a batch to its bucket (a hash of the key), so
// that duplicate ids meet under one key whatever shards they are in.
type dupBucketFn struct {
	Buckets int
}

func (f *dupBucketFn) ProcessElement(r schemas.Rows, emit func(int64, DupFrag)) {
	frags := map[int64]*DupFrag{}
	for i, key := range r.IDs {
		b := int64(ivf.Hash(0x64757073, key) % uint64(max(f.Buckets, 1)))
		fr := frags[b]
		if fr == nil {
			fr = &DupFrag{Shard: r.Shard, Offset: r.Offset}
			frags[b] = fr
		}
		fr.Keys = append(fr.Keys, key)
		fr.Row = append(fr.Row, int32(i))
		if r.IDKind == schemas.IDString {
			fr.StrIDs = append(fr.StrIDs, r.StrIDs[i])
		}
	}
	for _, b := range slices.Sorted(maps.Keys(frags)) {
		emit(b, *frags[b])
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// dupCheckFn reports the duplicate with the smallest key in a bucket (first
// and second occurrence in (shard, row) order), or "" when there is none. A
// report starts with the key, zero-padded, so that firstDupFn's minimum is
// the smallest key's.
type dupCheckFn struct {
	IDColumn string
}

func (f *dupCheckFn) ProcessElement(_ int64, iter func(*DupFrag) bool, emit func(string)) {
	type occ struct {
		key   int64
		shard string
		row   int64
		id    string
	}
	var all []occ
	var fr DupFrag
	for iter(&fr) {
		for i, k := range fr.Keys {
			o := occ{key: k, shard: fr.Shard, row: fr.Offset + int64(fr.Row[i])}
			if fr.StrIDs != nil {
				o.id = fr.StrIDs[i]
			} else {
				o.id = strconv.FormatInt(k, 10)
			}
			all = append(all, o)
		}
		fr = DupFrag{}
	}
	slices.SortFunc(all, func(a, b occ) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.shard, b.shard), cmp.Compare(a.row, b.row))
	})
	for i := 1; i < len(all); i++ {
		if all[i].key == all[i-1].key {
			a, b := all[i-1], all[i]
			emit(fmt.Sprintf("%020d\x00%s", uint64(a.key), shardio.DuplicateError(f.IDColumn, b.id, b.shard, b.row, a.shard, a.row)))
			return
		}
	}
	emit("")
}

// firstDupFn keeps the report of the smallest duplicate key ("" if none).
type firstDupFn struct{}

func (firstDupFn) MergeAccumulators(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return min(a, b)
}

// dupMessage strips the sort prefix off a dupCheckFn report.
func dupMessage(a string) string {
	for i := 0; i < len(a); i++ {
		if a[i] == 0 {
			return a[i+1:]
		}
	}
	return a
}

func init() {
	beam.RegisterDoFn(reflect.TypeOf((*sampleFn)(nil)).Elem())
	beam.RegisterDoFn(reflect.TypeOf((*fitFn)(nil)).Elem())
	register.Emitter1[ivf.Model]()
	beam.RegisterDoFn(reflect.TypeOf((*dupBucketFn)(nil)).Elem())
	register.Emitter2[int64, DupFrag]()
	beam.RegisterDoFn(reflect.TypeOf((*dupCheckFn)(nil)).Elem())
	register.Iter1[DupFrag]()
	register.Emitter1[string]()
	beam.RegisterDoFn(reflect.TypeOf((*firstDupFn)(nil)).Elem())
}
