package annotators

import (
	"strconv"

	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/quality/annotators/crowdset"
	"github.com/relabel/relabel/transforms/crowd"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/knn"
	"github.com/relabel/relabel/transforms/llc"
	"github.com/relabel/relabel/transforms/mixture"
)

// Neighbours are the K nearest items with relabel's defaults (K = 10,
// z-scored features; weights w): the neighbourhoods relabel itself uses.
func Neighbours(s *crowdset.Set, w engine.Weighting) (*crowd.Neighbours, error) {
	o, err := job.Defaults().Engine(s.C)
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

// Relabel runs relabel's engine with its default options (job.Defaults) on
// the items' labels, annotator ids ignored, and returns the posteriors (n x
// C).
func Relabel(s *crowdset.Set) ([]float64, error) {
	o, err := job.Defaults().Engine(s.C)
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
