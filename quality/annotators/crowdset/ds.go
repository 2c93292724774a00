package crowdset

import (
	"math/rand/v2"
)

// DawidSkene is the classical method (Dawid and Skene 1979) as the data
// README's peers ran it: EM from the soft majority vote, a full confusion
// matrix per annotator and an estimated class prior, no prior pulling the
// matrices anywhere, iters steps. Cells get a pseudo-count of 0.01 so that a
// label an annotator never gave on a class does not veto that class outright
// (crowd-kit and the README's run use a like floor). It is the reference
// relabel's label-only mode must not fall below, written independently of
// transforms/crowd so that the comparison does not share its code. Counts
// are kept per annotator as maps of their nonzero cells: thousands of
// annotators over 80 classes would not fit as dense matrices.
func (s *Set) DawidSkene(iters int) []float64 {
	const floor = 0.01
	n, C := s.Len(), s.C
	post := make([]float64, n*C)
	for i := 0; i < n; i++ {
		_, lab := s.Items.Item(i)
		row := post[i*C : (i+1)*C]
		for _, l := range lab {
			row[l]++
		}
		norm(row)
	}
	idx := map[int64]int{}
	for _, a := range s.Items.Annotator {
		if _, ok := idx[a]; !ok {
			idx[a] = len(idx)
		}
	}
	A := len(idx)
	type cell struct{ c, l int32 }
	prior := make([]float64, C)
	for it := 0; it < iters; it++ {
		// M step.
		cnt := make([]map[cell]float64, A)
		rowTot := make([]float64, A*C)
		clear(prior)
		for i := 0; i < n; i++ {
			ann, lab := s.Items.Item(i)
			p := post[i*C : (i+1)*C]
			for c, v := range p {
				prior[c] += v
			}
			for k, a := range ann {
				j := idx[a]
				if cnt[j] == nil {
					cnt[j] = map[cell]float64{}
				}
				for c, v := range p {
					if v > 1e-12 {
						cnt[j][cell{int32(c), lab[k]}] += v
						rowTot[j*C+c] += v
					}
				}
			}
		}
		norm(prior)
		// E step.
		for i := 0; i < n; i++ {
			ann, lab := s.Items.Item(i)
			p := post[i*C : (i+1)*C]
			copy(p, prior)
			for k, a := range ann {
				j := idx[a]
				for c := range p {
					p[c] *= (cnt[j][cell{int32(c), lab[k]}] + floor) / (rowTot[j*C+c] + float64(C)*floor)
				}
				norm(p)
			}
		}
	}
	return post
}

func norm(x []float64) {
	var t float64
	for _, v := range x {
		t += v
	}
	if !(t > 0) {
		for i := range x {
			x[i] = 1 / float64(len(x))
		}
		return
	}
	for i := range x {
		x[i] /= t
	}
}

// MajorityVoteRandom is each item's most frequent label, ties broken at
// random from seed (as the data README's peers broke them): ties to the
// lowest class would favour whichever class is numbered first.
func (s *Set) MajorityVoteRandom(seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 0x6d76))
	return s.majority(func(ties int) bool { return rng.IntN(ties) == 0 })
}

// majority is each item's most frequent label; among tied classes, the
// ties-th one (in class order) replaces the one kept so far when take(ties)
// says so (reservoir sampling: each tied class is kept with probability
// 1/ties when take is a fair draw; never take: the lowest class).
func (s *Set) majority(take func(ties int) bool) []int32 {
	out := make([]int32, s.Len())
	count := make([]int, s.C)
	for i := range out {
		clear(count)
		_, lab := s.Items.Item(i)
		for _, l := range lab {
			count[l]++
		}
		best, ties := 0, 0
		for c, v := range count {
			switch {
			case v > count[best]:
				best, ties = c, 1
			case v == count[best]:
				ties++
				if take(ties) {
					best = c
				}
			}
		}
		out[i] = int32(best)
	}
	return out
}
