package ivfstages

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/ivf"
)

// partsByMap is emitFn.build's specification, written the plain way: a map
// of parts grown item by item in row order.
func partsByMap(f *emitFn, pr Probed, m ivf.Model, byRow bool) ([]int64, []Part) {
	r := &pr.Rows
	n, d, np := r.Len(), r.D, pr.NProbe
	parts := map[int64]*Part{}
	for i := 0; i < n; i++ {
		probes := pr.Probe[i*np : (i+1)*np]
		home := BlockKey(probes[0], pr.Block[i])
		for _, p := range probes {
			if int(p)%f.Waves != f.Wave {
				continue
			}
			for b := int32(0); b < m.Blocks[p]; b++ {
				bk := BlockKey(p, b)
				pt := parts[bk]
				if pt == nil {
					pt = &Part{D: d, Shard: r.Shard, Offset: r.Offset, IDKind: r.IDKind, Multi: r.Multi, LabelOff: []int32{0}}
					parts[bk] = pt
				}
				if bk == home {
					pt.Q = append(pt.Q, int32(len(pt.Keys)))
					pt.Row = append(pt.Row, int32(i))
					if r.IDKind == schemas.IDString {
						pt.StrIDs = append(pt.StrIDs, r.StrIDs[i])
					}
				}
				pt.Labels = append(pt.Labels, r.Labels[r.LabelOff[i]:r.LabelOff[i+1]]...)
				pt.LabelOff = append(pt.LabelOff, int32(len(pt.Labels)))
				pt.Keys = append(pt.Keys, r.IDs[i])
				pt.Home = append(pt.Home, home)
				if byRow {
					pt.At = append(pt.At, int32(i))
				} else {
					pt.X = append(pt.X, r.Features[i*d:(i+1)*d]...)
				}
			}
		}
	}
	keys := slices.Sorted(maps.Keys(parts))
	out := make([]Part, len(keys))
	for i, k := range keys {
		out[i] = *parts[k]
	}
	return keys, out
}

// TestBuildParts checks emitFn.build against partsByMap, part by part in
// their encoding: partitions of one to three blocks, one and two waves,
// integer and string ids, items with no, one and several labels, stored
// by row and by copy.
func TestBuildParts(t *testing.T) {
	const n, d, np, p = 300, 3, 3, 9
	rng := rand.New(rand.NewPCG(3, 4))
	m := ivf.Model{D: d, Centroids: make([]float32, p*d), Blocks: make([]int32, p), Seed: 5}
	for i := range m.Blocks {
		m.Blocks[i] = 1 + int32(rng.IntN(3))
	}
	for _, kind := range []schemas.IDKind{schemas.IDInt64, schemas.IDString} {
		for _, labelled := range []bool{true, false} {
			r := schemas.Rows{Shard: "s", Offset: 4096, D: d, IDKind: kind, Multi: labelled, IDs: make([]int64, n), Features: make([]float32, n*d), LabelOff: make([]int32, n+1)}
			for i := range n {
				r.IDs[i] = int64(1000 + 7*i)
				if kind == schemas.IDString {
					r.StrIDs = append(r.StrIDs, fmt.Sprint("id", i))
				}
				nl := 0
				if labelled {
					nl = rng.IntN(4)
				}
				for range nl {
					r.Labels = append(r.Labels, int32(rng.IntN(5)))
				}
				r.LabelOff[i+1] = int32(len(r.Labels))
				for j := range d {
					r.Features[i*d+j] = rng.Float32()
				}
			}
			pr := Probed{NProbe: np, Probe: make([]int32, n*np), Block: make([]int32, n), Rows: r}
			for i := range n {
				perm := rng.Perm(p)
				for j := range np {
					pr.Probe[i*np+j] = int32(perm[j])
				}
				pr.Block[i] = m.Block(pr.Probe[i*np], r.IDs[i])
			}
			for _, waves := range []int{1, 2} {
				for wave := range waves {
					for _, byRow := range []bool{false, true} {
						f := &emitFn{Wave: wave, Waves: waves}
						keys, parts, err := f.build(pr, m, "", byRow)
						if err != nil {
							t.Fatal(err)
						}
						wkeys, wparts := partsByMap(f, pr, m, byRow)
						if !slices.Equal(keys, wkeys) {
							t.Fatalf("%v labelled %v wave %d/%d: block keys %v, want %v", kind, labelled, wave, waves, keys, wkeys)
						}
						for i := range parts {
							if !bytes.Equal(encodePart(parts[i]), encodePart(wparts[i])) {
								t.Fatalf("%v labelled %v wave %d/%d by row %v: part %d (block %d) %+v, want %+v", kind, labelled, wave, waves, byRow, i, keys[i], parts[i], wparts[i])
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkBuildParts times emitFn.build on one input batch of 16,384 rows
// at d 64, each in 8 of 20,000 partitions (a 10M-row run's), against
// partsByMap in the same run, and reports the ratio.
//
//	go test ./pipelines/ivfstages -run '^$' -bench BuildParts
func BenchmarkBuildParts(b *testing.B) {
	const n, d, np, p = 16384, 64, 8, 20000
	rng := rand.New(rand.NewPCG(1, 2))
	m := ivf.Model{D: d, Centroids: make([]float32, p*d), Blocks: make([]int32, p)}
	for i := range m.Blocks {
		m.Blocks[i] = 1
	}
	r := schemas.Rows{Shard: "s", D: d, IDs: make([]int64, n), Features: make([]float32, n*d), Labels: make([]int32, n), LabelOff: make([]int32, n+1)}
	for i := range n {
		r.IDs[i], r.Labels[i], r.LabelOff[i+1] = int64(i), int32(i%20), int32(i+1)
	}
	pr := Probed{NProbe: np, Probe: make([]int32, n*np), Block: make([]int32, n), Rows: r}
	for i := range n {
		for j, q := range rng.Perm(p)[:np] {
			pr.Probe[i*np+j] = int32(q)
		}
	}
	f := &emitFn{Waves: 1}
	var flat, byMap float64
	for b.Loop() {
		t0 := time.Now()
		if _, _, err := f.build(pr, m, "", true); err != nil {
			b.Fatal(err)
		}
		flat += time.Since(t0).Seconds()
		t0 = time.Now()
		partsByMap(f, pr, m, true)
		byMap += time.Since(t0).Seconds()
	}
	b.ReportMetric(flat/float64(b.N)*1e3, "build-ms")
	b.ReportMetric(byMap/float64(b.N)*1e3, "map-ms")
	b.ReportMetric(flat/byMap, "build/map")
}
