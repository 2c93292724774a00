package crowdquality

import (
	"strconv"

	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/crowd"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// Accuracy is the share of items with a truth whose predicted class is it.
func (s *Set) Accuracy(pred []int32) float64 {
	n, ok := 0, 0
	for i, t := range s.Truth {
		if t < 0 {
			continue
		}
		n++
		if pred[i] == t {
			ok++
		}
	}
	return float64(ok) / float64(n)
}

// Argmax is each row's most probable class (the lowest on ties) of an
// n x C row-major matrix.
func Argmax(post []float64, C int) []int32 {
	out := make([]int32, len(post)/C)
	for i := range out {
		row := post[i*C : (i+1)*C]
		best := 0
		for c, v := range row {
			if v > row[best] {
				best = c
			}
		}
		out[i] = int32(best)
	}
	return out
}

// MajorityVote is each item's most frequent label, ties to the lowest class.
func (s *Set) MajorityVote() []int32 {
	out := make([]int32, s.Len())
	count := make([]int, s.C)
	for i := range out {
		clear(count)
		_, lab := s.Items.Item(i)
		for _, l := range lab {
			count[l]++
		}
		best := 0
		for c, v := range count {
			if v > count[best] {
				best = c
			}
		}
		out[i] = int32(best)
	}
	return out
}

// Neighbours are the K nearest items with relabel's defaults (K = 10,
// z-scored features; weights w): the neighbourhoods relabel itself uses.
func (s *Set) Neighbours(w engine.Weighting) (*crowd.Neighbours, error) {
	d := options.Defaults()
	o, err := d.Engine(s.C)
	if err != nil {
		return nil, err
	}
	o.Weighting = w
	feats := append([]float32(nil), s.Features...)
	mean, std := engine.Moments(feats, s.Len(), s.D)
	engine.Standardise(feats, s.D, mean, std)
	cands := engine.SelectCandidates(s.IDs, 0, 1)
	nb, err := engine.Neighbours(feats, s.IDs, s.D, cands, o, engine.Backends{Searcher: knn.CPU{}, Coder: llc.CPU{}})
	if err != nil {
		return nil, err
	}
	return &crowd.Neighbours{K: nb.K, Index: nb.Index, Weight: nb.Weight}, nil
}

// Relabel runs relabel's engine with its default options (options.Defaults) on the items'
// labels, annotator ids ignored, and returns the posteriors (n x C).
func (s *Set) Relabel() ([]float64, error) {
	d := options.Defaults()
	o, err := d.Engine(s.C)
	if err != nil {
		return nil, err
	}
	res, err := engine.Run(&engine.Data{Keys: s.IDs, D: s.D, Features: s.Features, Labels: s.Given, LabelOff: s.GivenOff}, o, engine.Backends{Searcher: knn.CPU{}, Coder: llc.CPU{}})
	if err != nil {
		return nil, err
	}
	post := make([]float64, s.Len()*s.C)
	var st mixture.State
	for i := 0; i < s.Len(); i++ {
		res.States.Get(&st, i)
		for k, c := range st.Class {
			post[i*s.C+int(c)] = st.Pi[k]
		}
	}
	return post, nil
}

func fmtF(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
