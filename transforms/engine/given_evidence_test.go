package engine_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// evidenceBatch is a batch of n items with k neighbours each, their states
// packed in two States (as ivf's blocks hold their own items' and their
// external neighbours'), with absent neighbours, weights of 0 and empty
// states among them.
func evidenceBatch(n, k, c int, seed uint64) engine.GivenBatch {
	rng := rand.New(rand.NewPCG(seed, 1))
	var own, ext mixture.States
	own.Reset()
	ext.Reset()
	var st mixture.State
	for _, ss := range []*mixture.States{&own, &ext} {
		for range n {
			labels := make([]int32, rng.IntN(4))
			for x := range labels {
				labels[x] = int32(rng.IntN(c))
			}
			st.Init(labels, c, c, 0.1)
			for x := range st.Pi {
				st.Pi[x] *= 0.5 + rng.Float64()
			}
			ss.Append(&st)
		}
	}
	type ref struct {
		ss *mixture.States
		at int
		w  float64
	}
	refs := make([]ref, n*k)
	for x := range refs {
		switch rng.IntN(8) {
		case 0:
		case 1:
			refs[x] = ref{&own, rng.IntN(n), 0}
		case 2, 3, 4:
			refs[x] = ref{&own, rng.IntN(n), rng.Float64()}
		default:
			refs[x] = ref{&ext, rng.IntN(n), rng.Float64()}
		}
	}
	return engine.GivenBatch{N: n, K: k, Own: &own,
		Neighbour: func(i, j int) (*mixture.States, int, float64) {
			r := refs[i*k+j]
			return r.ss, r.at, r.w
		},
		Key:   func(i int) int64 { return int64(i) },
		Given: func(i int) int32 { return int32(i % c) },
	}
}

// itemEvidence is each item's evidence as mixture.NeighbourEvidence gives
// it from the neighbours' unpacked states: what the batch functions must
// agree with bit for bit, however they share the tempering.
func itemEvidence(b engine.GivenBatch, t float64) []mixture.Evidence {
	ev := make([]mixture.Evidence, b.N)
	var s mixture.GivenScratch
	neigh := make([]mixture.State, 0, b.K)
	var w []float64
	for i := range ev {
		neigh, w = neigh[:0], w[:0]
		for j := 0; j < b.K; j++ {
			if ss, at, wt := b.Neighbour(i, j); ss != nil {
				neigh = neigh[:len(neigh)+1]
				ss.Get(&neigh[len(neigh)-1], at)
				w = append(w, wt)
			}
		}
		mixture.NeighbourEvidence(&ev[i], neigh, w, t, &s)
	}
	return ev
}

func TestGivenEvidenceMatchesNeighbourEvidence(t *testing.T) {
	b := evidenceBatch(700, 10, 6, 3)
	for _, temp := range mixture.GivenTemperatures {
		want := itemEvidence(b, temp)
		for _, workers := range []int{1, 3} {
			got, given := engine.GivenEvidence(b, temp, workers)
			for i := range want {
				if given[i] != b.Given(i) {
					t.Fatalf("T %v item %d: given %d, want %d", temp, i, given[i], b.Given(i))
				}
				if !sameEvidence(&got[i], &want[i]) {
					t.Fatalf("T %v, %d workers, item %d: evidence %v %v, want %v %v", temp, workers, i, got[i].Class, got[i].P, want[i].Class, want[i].P)
				}
			}
		}
	}
	// The scores: per temperature, the sum of each labelled item's log
	// evidence on its own label, in item order.
	own := make([]int32, b.N)
	for i := range own {
		own[i] = int32(i%7) - 1
	}
	got := make([]float64, len(mixture.GivenTemperatures))
	engine.GivenScores(b, own, 2, got)
	for x, temp := range mixture.GivenTemperatures {
		ev := itemEvidence(b, temp)
		var want float64
		for i := range ev {
			if own[i] >= 0 {
				one := []float64{0}
				mixture.GivenScore(one, ev[i:i+1], own[i])
				want += one[0]
			}
		}
		if math.Float64bits(got[x]) != math.Float64bits(want) {
			t.Errorf("T %v: score %v, want %v", temp, got[x], want)
		}
	}
}

func sameEvidence(a, b *mixture.Evidence) bool {
	if len(a.Class) != len(b.Class) || len(a.P) != len(b.P) {
		return false
	}
	for k := range a.Class {
		if a.Class[k] != b.Class[k] || math.Float64bits(a.P[k]) != math.Float64bits(b.P[k]) {
			return false
		}
	}
	return true
}

// BenchmarkGivenScores: the temperature choice's scores with each
// neighbour state tempered once (GivenScores) against once per item it
// neighbours (the per-item NeighbourEvidence path), on 20,000 items of
// K = 10; reports the ratio.
func BenchmarkGivenScores(b *testing.B) {
	bt := evidenceBatch(20000, 10, 10, 5)
	own := make([]int32, bt.N)
	score := make([]float64, len(mixture.GivenTemperatures))
	var shared, perItem float64
	for b.Loop() {
		t0 := time.Now()
		engine.GivenScores(bt, own, 1, score)
		shared += time.Since(t0).Seconds()
		t0 = time.Now()
		for _, temp := range mixture.GivenTemperatures {
			itemEvidence(bt, temp)
		}
		perItem += time.Since(t0).Seconds()
	}
	b.ReportMetric(shared/perItem, "shared/per-item")
}
