package ivf_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

// blobs returns n points around c well-separated centres in d dimensions,
// with keys 1000+i.
func blobs(n, c, d int, seed uint64) ([]int64, knn.Matrix) {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := make([]float32, c*d)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64() * 20)
	}
	x := knn.Matrix{Rows: n, Cols: d, Data: make([]float32, n*d)}
	keys := make([]int64, n)
	for i := 0; i < n; i++ {
		keys[i] = int64(1000 + i)
		k := i % c
		for j := 0; j < d; j++ {
			x.Data[i*d+j] = centres[k*d+j] + float32(rng.NormFloat64())
		}
	}
	return keys, x
}

// TestSampleOrder: the sample is the Cap smallest hashes whatever the order
// and grouping of Add and Merge.
func TestSampleOrder(t *testing.T) {
	keys, x := blobs(500, 3, 4, 1)
	var one ivf.Sample
	one.Cap = 37
	for i, k := range keys {
		one.Add(ivf.Hash(9, k), k, x.Row(i))
	}
	one.Trim()
	rng := rand.New(rand.NewPCG(2, 2))
	perm := rng.Perm(len(keys))
	parts := make([]ivf.Sample, 7)
	for a, i := range perm {
		p := &parts[a%7]
		p.Cap = 37
		p.Add(ivf.Hash(9, keys[i]), keys[i], x.Row(i))
	}
	merged := ivf.Sample{Cap: 37}
	for _, a := range rng.Perm(7) {
		merged.Merge(&parts[a])
	}
	merged.Trim()
	if !slices.Equal(one.Keys, merged.Keys) || !slices.Equal(one.Features, merged.Features) || one.Len() != 37 {
		t.Errorf("sample depends on order: %d vs %d keys", one.Len(), merged.Len())
	}
	for i := 1; i < one.Len(); i++ {
		if one.Hashes[i] < one.Hashes[i-1] {
			t.Fatal("sample not in hash order")
		}
	}
}

// TestFitBlobs: k-means with as many centroids as blobs puts each blob in one
// partition; blocks are sized from the sample; the model is deterministic.
func TestFitBlobs(t *testing.T) {
	const n, c, d = 3000, 6, 5
	keys, x := blobs(n, c, d, 3)
	p := ivf.DefaultParams(n).WithPartitions(n, 12)
	p.BlockRows, p.Seed = 100, 4
	m1 := fit(t, keys, x, p)
	m2 := fit(t, keys, x, p)
	if !slices.Equal(m1.Centroids, m2.Centroids) || !slices.Equal(m1.Blocks, m2.Blocks) {
		t.Fatal("Fit is not deterministic")
	}
	pt, err := ivf.Assign(x, m1, 1, knn.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	// Every partition holds points of one blob only.
	blobOf := map[int32]int{}
	sizes := make([]int, m1.P())
	for i := 0; i < n; i++ {
		h := pt.Home(i)
		sizes[h]++
		if b, ok := blobOf[h]; ok && b != i%c {
			t.Fatalf("partition %d mixes blobs %d and %d", h, b, i%c)
		}
		blobOf[h] = i % c
	}
	for q, s := range sizes {
		if s == 0 {
			t.Errorf("partition %d empty", q)
		}
		if got, want := int(m1.Blocks[q]), (s+99)/100; got < want/2 || got > 2*want+1 {
			t.Errorf("partition %d: %d items, %d blocks of 100", q, s, got)
		}
	}
}

// TestFitEmptySplit: more centroids than distinct points still leaves no
// centroid without a sample point while points are distinct.
func TestFitEmptySplit(t *testing.T) {
	// 40 points, 4 distinct locations, repeated: k-means with 10 centroids
	// must split clusters to fill the empty ones.
	x := knn.Matrix{Rows: 40, Cols: 2}
	keys := make([]int64, 40)
	for i := 0; i < 40; i++ {
		keys[i] = int64(i)
		x.Data = append(x.Data, float32(i%4)*10+float32(i)*1e-3, float32(i%4%2)*10)
	}
	p := ivf.DefaultParams(40).WithPartitions(40, 10)
	p.Seed = 1
	m, err := ivf.Fit(x, 40, p, knn.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	pt, err := ivf.Assign(x, m, 1, knn.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	used := map[int32]bool{}
	for i := 0; i < 40; i++ {
		used[pt.Home(i)] = true
	}
	if len(used) < 8 {
		t.Errorf("only %d of 10 partitions used", len(used))
	}
}

// TestSearchAllProbes: with nprobe = P every partition stores every item, so
// the ivf search is the exact one (as sets, ties aside: keys are distinct
// random points).
func TestSearchAllProbes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, d, p int
		k       int
		metric  knn.Metric
	}{
		{"d=1", 300, 1, 5, 4, knn.L2},
		{"d=33", 500, 33, 7, 10, knn.L2},
		{"cosine", 400, 9, 6, 5, knn.Cosine},
		{"k>=n", 12, 3, 3, 20, knn.L2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, x := blobs(tc.n, 4, tc.d, 5)
			p := ivf.DefaultParams(int64(tc.n)).WithPartitions(int64(tc.n), tc.p).WithNProbe(tc.p)
			p.Metric, p.Seed = tc.metric, 1
			m := fit(t, keys, x, p)
			pt, err := ivf.Assign(x, m, p.NProbe, knn.CPU{})
			if err != nil {
				t.Fatal(err)
			}
			var got knn.Result
			if _, err := ivf.Search(&got, x, keys, pt, m.P(), tc.k, tc.metric, knn.CPU{}); err != nil {
				t.Fatal(err)
			}
			idx, _ := knn.CPU{}.Index(x, keys, tc.metric)
			var want knn.Result
			if err := idx.Search(&want, x, keys, tc.k); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.n; i++ {
				a := slices.Sorted(slices.Values(got.Index[i*tc.k : (i+1)*tc.k]))
				b := slices.Sorted(slices.Values(want.Index[i*tc.k : (i+1)*tc.k]))
				if !slices.Equal(a, b) {
					t.Fatalf("row %d: ivf %v, exact %v", i, a, b)
				}
			}
		})
	}
}

// TestBlockSpread: a partition's items spread over all its blocks, evenly.
func TestBlockSpread(t *testing.T) {
	m := ivf.Model{Blocks: []int32{1, 4}, Seed: 3}
	count := make([]int, 4)
	for k := int64(0); k < 4000; k++ {
		if b := m.Block(0, k); b != 0 {
			t.Fatalf("one-block partition: block %d", b)
		}
		count[m.Block(1, k)]++
	}
	for b, c := range count {
		if c < 850 || c > 1150 {
			t.Errorf("block %d of 4 got %d of 4000 items", b, c)
		}
	}
}

func TestParams(t *testing.T) {
	p := ivf.DefaultParams(1_000_000)
	if p.Partitions != 2000 || p.NProbe != ivf.DefaultNProbe || p.Sample != ivf.MaxSample || p.Iters != ivf.DefaultIters || p.BlockRows != ivf.DefaultBlockRows || p.Metric != knn.L2 {
		t.Errorf("defaults at 1M rows: %+v", p)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("defaults at 1M rows: %v", err)
	}
	if p := ivf.DefaultParams(3000).WithPartitions(3000, 10); p.Partitions != 10 || p.Sample != 640 || p.NProbe != ivf.DefaultNProbe {
		t.Errorf("10 partitions of 3000 rows: %+v, want a sample of 640", p)
	}
	p = ivf.DefaultParams(30).WithPartitions(30, 50).WithNProbe(100)
	if p.Partitions != 30 || p.NProbe != 30 || p.Sample != 30 {
		t.Errorf("clamping at 30 rows: %+v", p)
	}
	for name, bad := range map[string]ivf.Params{
		"zero value":       {},
		"nprobe 0":         ivf.DefaultParams(100).WithNProbe(0),
		"iters 0":          {Partitions: 1, NProbe: 1, Sample: 1, BlockRows: 1},
		"sample too small": {Partitions: 4, NProbe: 1, Sample: 3, Iters: 1, BlockRows: 1},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%s accepted: %+v", name, bad)
		}
	}
}
