package noise

import (
	"fmt"
	"math"
)

// AnnotatorLabels simulates len(acc) annotators labelling every row:
// annotator a gives the true label with probability acc[a] and otherwise a
// uniformly random other class, independently across annotators and rows.
// Row i's labels are labels[off[i]:off[i+1]], in annotator order; off has
// ds.Len()+1 entries (the flattened list<int32> layout of the annotators-5
// files).
//
// The data README's annotators-5 files fit this model: their five annotators
// are right .65, .69, .66, .53 and .66 of the time on digits, and these
// accuracies with uniform errors give a majority vote of .899 (digits) and
// .934 (letter) against the files' .912 and .936; Spread(5, 0.55, 0.75)
// gives .918 and .945.
func AnnotatorLabels(ds Dataset, acc []float64, seed uint64) (labels, off []int32, err error) {
	if err := ds.validate(false); err != nil {
		return nil, nil, err
	}
	if len(acc) == 0 {
		return nil, nil, fmt.Errorf("noise: no annotator accuracies")
	}
	for a, p := range acc {
		if !(p >= 0 && p <= 1) {
			return nil, nil, fmt.Errorf("noise: annotator %d: accuracy %v outside [0,1]", a, p)
		}
	}
	n, m := ds.Len(), len(acc)
	if n*m > math.MaxInt32 {
		return nil, nil, fmt.Errorf("noise: %d rows x %d annotators overflow int32 offsets", n, m)
	}
	labels = make([]int32, n*m)
	off = make([]int32, n+1)
	for i, y := range ds.Truth {
		r := rowRNG(seed, ds.IDs[i])
		row := labels[i*m : (i+1)*m]
		for a, p := range acc {
			row[a] = y
			if r.Float64() >= p {
				row[a] = otherClass(r, y, ds.C)
			}
		}
		off[i+1] = int32((i + 1) * m)
	}
	return labels, off, nil
}

// Spread returns n accuracies evenly spaced from lo to hi (lo alone when
// n == 1): a pool of annotators of differing skill for AnnotatorLabels.
func Spread(n int, lo, hi float64) []float64 {
	acc := make([]float64, n)
	for a := range acc {
		if n == 1 {
			acc[a] = lo
			continue
		}
		acc[a] = lo + (hi-lo)*float64(a)/float64(n-1)
	}
	return acc
}
