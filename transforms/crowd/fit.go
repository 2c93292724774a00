package crowd

import (
	"cmp"
	"fmt"
	"slices"
)

// Items are the annotations of n items, grouped by item: item i's are
// Annotator[Off[i]:Off[i+1]] (annotator keys) and Label[Off[i]:Off[i+1]]
// (classes in [0, C)). Within an item they are in ascending annotator order
// (Sort puts them there).
type Items struct {
	Off       []int32
	Annotator []int64
	Label     []int32
}

// Len is the number of items.
func (it *Items) Len() int { return len(it.Off) - 1 }

// Item returns item i's annotators and labels.
func (it *Items) Item(i int) ([]int64, []int32) {
	lo, hi := it.Off[i], it.Off[i+1]
	return it.Annotator[lo:hi], it.Label[lo:hi]
}

// Sort orders every item's annotations by (annotator, label).
func (it *Items) Sort() {
	for i := 0; i < it.Len(); i++ {
		SortAnnotations(it.Item(i))
	}
}

// SortAnnotations orders one item's annotations by (annotator, label), in
// place: the order Posterior multiplies them in.
func SortAnnotations(ann []int64, lab []int32) {
	if slices.IsSorted(ann) {
		ok := true
		for k := 1; k < len(ann); k++ {
			if ann[k] == ann[k-1] && lab[k] < lab[k-1] {
				ok = false
				break
			}
		}
		if ok {
			return
		}
	}
	idx := make([]int, len(ann))
	for k := range idx {
		idx[k] = k
	}
	slices.SortFunc(idx, func(x, y int) int {
		if c := cmp.Compare(ann[x], ann[y]); c != 0 {
			return c
		}
		return cmp.Compare(lab[x], lab[y])
	})
	a2 := make([]int64, len(ann))
	l2 := make([]int32, len(lab))
	for k, j := range idx {
		a2[k], l2[k] = ann[j], lab[j]
	}
	copy(ann, a2)
	copy(lab, l2)
}

// Validate checks the shape of it and that every label lies in [0, C).
func (it *Items) Validate(C int) error {
	if len(it.Off) == 0 || it.Off[0] != 0 || int(it.Off[len(it.Off)-1]) != len(it.Label) || len(it.Label) != len(it.Annotator) {
		return fmt.Errorf("crowd: items: %d offsets for %d labels and %d annotators", len(it.Off), len(it.Label), len(it.Annotator))
	}
	for i := 0; i < it.Len(); i++ {
		if it.Off[i+1] < it.Off[i] {
			return fmt.Errorf("crowd: items: offsets decrease at item %d", i)
		}
	}
	for k, l := range it.Label {
		if l < 0 || int(l) >= C {
			return fmt.Errorf("crowd: items: annotation %d: label %d outside [0,%d)", k, l, C)
		}
	}
	return nil
}

// Neighbours are every item's K neighbours among the items, as in
// engine.Neighbourhoods: item i's are Index[i*K:(i+1)*K] (-1 = none) with
// weights Weight[i*K:(i+1)*K].
type Neighbours struct {
	K      int
	Index  []int32
	Weight []float64
}

// MajorityInit sets dst (len C) to the share of each class among lab: the
// soft majority vote Dawid and Skene start from; uniform without labels.
func MajorityInit(dst []float64, lab []int32) {
	clear(dst)
	for _, l := range lab {
		dst[l]++
	}
	normalise(dst)
}

// NeighbourPrior sets dst (len C) to item i's prior: (1 - lambda) times the
// class prior plus lambda times the weighted mean of its neighbours'
// posteriors post (n x C); the class prior alone when it has no neighbours.
func NeighbourPrior(dst []float64, m *Model, lambda float64, index []int32, weight []float64, post func(j int32) []float64) {
	clear(dst)
	var wsum float64
	for k, j := range index {
		if j < 0 || weight[k] <= 0 {
			continue
		}
		w := weight[k]
		wsum += w
		for c, v := range post(j) {
			dst[c] += w * v
		}
	}
	if wsum == 0 {
		copy(dst, m.Prior)
		return
	}
	a := lambda / wsum
	for c := range dst {
		dst[c] = (1-lambda)*m.Prior[c] + a*dst[c]
	}
}

// Result is a fitted model and every item's posterior.
type Result struct {
	// Model is the annotators' model, estimated from its EM's final
	// posteriors: it describes the annotators (Summarise) whichever model
	// the posteriors are from.
	Model *Model
	// Vote is EstimateVote from the soft majority vote's statistics, Pooled
	// is Model.Pool.
	Vote, Pooled *Model
	// Evidence weighs the two on held-out labels, and Choice is its
	// verdict: the model Posterior is from.
	Evidence Evidence
	Choice   Choice
	// Posterior is n x C, row-major.
	Posterior []float64
}

// Fit runs EM over it (sorted, see Sort): posteriors start at the soft
// majority vote; each iteration estimates the model from the posteriors (M
// step) and recomputes every posterior (E step) from its annotations and its
// prior, the class prior or, when nb is not nil, NeighbourPrior over the
// previous iteration's posteriors. It is deterministic and its result does
// not depend on the order of the annotators' keys.
func Fit(it *Items, nb *Neighbours, p Params) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := it.Validate(p.C); err != nil {
		return nil, err
	}
	n, C := it.Len(), p.C
	if nb != nil && (len(nb.Index) != n*nb.K || len(nb.Weight) != n*nb.K) {
		return nil, fmt.Errorf("crowd: %d neighbours and %d weights for %d items x K = %d", len(nb.Index), len(nb.Weight), n, nb.K)
	}
	cur := make([]float64, n*C)
	next := make([]float64, n*C)
	for i := 0; i < n; i++ {
		_, lab := it.Item(i)
		MajorityInit(cur[i*C:(i+1)*C], lab)
	}
	var w Scratch
	prior := make([]float64, C)
	s0 := stats(it, cur, C)
	vote := EstimateVote(s0, p)
	for r := 0; r < p.Iterations; r++ {
		s := s0
		if r > 0 {
			s = stats(it, cur, C)
		}
		m := Estimate(s, p)
		post := func(j int32) []float64 { return cur[int(j)*C : int(j+1)*C] }
		for i := 0; i < n; i++ {
			ann, lab := it.Item(i)
			var pr []float64
			if nb != nil {
				NeighbourPrior(prior, m, p.NeighbourWeight, nb.Index[i*nb.K:(i+1)*nb.K], nb.Weight[i*nb.K:(i+1)*nb.K], post)
				pr = prior
			}
			m.Posterior(next[i*C:(i+1)*C], pr, ann, lab, &w)
		}
		cur, next = next, cur
	}
	s := s0
	if p.Iterations > 0 {
		s = stats(it, cur, C)
	}
	res := &Result{Model: Estimate(s, p), Vote: vote, Posterior: cur}
	res.Pooled = res.Model.Pool()
	for i := 0; i < n; i++ {
		ann, lab := it.Item(i)
		if len(lab) >= 2 {
			res.Evidence.Add([numChoices]float64{vote.HeldOut(ann, lab, nil, &w), res.Pooled.HeldOut(ann, lab, nil, &w),
				res.Model.HeldOut(ann, lab, cur[i*C:(i+1)*C], &w)})
		}
	}
	if res.Choice = res.Evidence.Choice(); res.Choice != Annotators {
		m := vote
		if res.Choice == Pooled {
			m = res.Pooled
		}
		post := func(j int32) []float64 { return cur[int(j)*C : int(j+1)*C] }
		for i := 0; i < n; i++ {
			ann, lab := it.Item(i)
			var pr []float64
			if nb != nil {
				NeighbourPrior(prior, m, p.NeighbourWeight, nb.Index[i*nb.K:(i+1)*nb.K], nb.Weight[i*nb.K:(i+1)*nb.K], post)
				pr = prior
			}
			m.Posterior(next[i*C:(i+1)*C], pr, ann, lab, &w)
		}
		res.Posterior = next
	}
	return res, nil
}

func stats(it *Items, post []float64, C int) *Stats {
	s := NewStats(C)
	for i := 0; i < it.Len(); i++ {
		ann, lab := it.Item(i)
		s.Add(post[i*C:(i+1)*C], ann, lab)
	}
	return s
}
