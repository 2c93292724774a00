package grid

import (
	"math"
	"slices"
)

// The cleanlab peer: cleanlab 2.x's find_label_issues with its defaults
// (filter_by="prune_by_noise_rate", the calibrated confident joint) on
// out-of-sample kNN probabilities, flagged labels replaced by the kNN vote:
// the data README's "cleanlab (kNN probs)" column, computed here so that every
// cell of the grid has it, generated cells included. It follows
// scripts/peer_weak.py's hand-written find_label_issues step by step (that
// script's port is checked against the library there), including numpy's
// rounding and summation order where ties depend on them.

// voteEps is the pseudo-count peer_weak.py adds to every class's vote count
// before normalising: the probabilities stay positive and the ranking of
// the classes is the vote's.
const voteEps = 1e-3

// CleanlabKNN returns the cleanlab-cleaned labels of given: probabilities
// are the vote fractions (count + 1e-3, normalised) of the k neighbours of
// each row in nb (row i's are nb[i*k:(i+1)*k], -1 for none; the row itself
// left out), rows flagged by FindLabelIssues take the vote (the argmax, ties
// to the lowest class), the others keep their given label.
func CleanlabKNN(given, nb []int32, k, c int) []int32 {
	n := len(given)
	if len(nb) != n*k {
		panic("grid: CleanlabKNN: neighbour lists do not match the labels")
	}
	probs := make([]float64, n*c)
	vote := make([]int32, n)
	row := make([]float64, c)
	for i := range n {
		clear(row)
		for _, j := range nb[i*k : (i+1)*k] {
			if j >= 0 {
				row[given[j]]++
			}
		}
		vote[i] = argmax(row)
		for y := range row {
			row[y] += voteEps
		}
		s := npSum(row)
		for y, v := range row {
			probs[i*c+y] = v / s
		}
	}
	issues := FindLabelIssues(given, probs, c)
	out := slices.Clone(given)
	for i, bad := range issues {
		if bad {
			out[i] = vote[i]
		}
	}
	return out
}

// FindLabelIssues is cleanlab.filter.find_label_issues with
// filter_by="prune_by_noise_rate" on labels (in [0,c)) and probs (n x c,
// row-major): the calibrated confident joint, at least one item kept per
// class, for each given class c and true class j the pcm[j][c] items of
// class c with the largest margin probs[j] - probs[c] flagged (ties at the
// cut included), and no item flagged whose argmax is its given label.
func FindLabelIssues(labels []int32, probs []float64, c int) []bool {
	n := len(labels)
	counts := make([]int, c)
	for _, l := range labels {
		counts[l]++
	}
	cj := confidentJoint(labels, probs, c, counts)
	// prune count matrix: the confident joint transposed, pcm[true][given].
	pcm := make([]float64, c*c)
	for i := range c {
		for j := range c {
			pcm[j*c+i] = float64(cj[i*c+j])
		}
	}
	keep := keepAtLeastOnePerClass(pcm, c)
	mask := make([]bool, n)
	var margins []float64
	for g := range c {
		if counts[g] <= 1 {
			continue
		}
		for j := range c {
			m := keep[j*c+g]
			if j == g || m <= 0 {
				continue
			}
			margins = margins[:0]
			for i, l := range labels {
				if int(l) == g {
					margins = append(margins, probs[i*c+j]-probs[i*c+g])
				}
			}
			m = min(m, len(margins))
			slices.SortFunc(margins, func(a, b float64) int { return cmpDesc(a, b) })
			cut := margins[m-1]
			for i, l := range labels {
				if int(l) == g && probs[i*c+j]-probs[i*c+g] >= cut {
					mask[i] = true
				}
			}
		}
	}
	for i, l := range labels {
		if argmax(probs[i*c:(i+1)*c]) == l {
			mask[i] = false
		}
	}
	return mask
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// confidentJoint is cleanlab.count.compute_confident_joint with
// calibrate=True: cj[given*c+true], rows summing to the given labels'
// counts.
func confidentJoint(labels []int32, probs []float64, c int, counts []int) []int {
	n := len(labels)
	// Per-class thresholds: the mean self-confidence of the items given
	// that class (NaN for an empty class, which makes no item confident in
	// it, as numpy's comparison with NaN does).
	thr := make([]float64, c)
	col := make([][]float64, c)
	for i, l := range labels {
		col[l] = append(col[l], probs[i*c+int(l)])
	}
	for y := range c {
		thr[y] = npSum(col[y]) / float64(len(col[y]))
	}
	cj := make([]float64, c*c)
	for i, l := range labels {
		p := probs[i*c : (i+1)*c]
		num, first := 0, -1
		for y, v := range p {
			if v >= thr[y]-1e-6 {
				num++
				if first < 0 {
					first = y
				}
			}
		}
		if num == 0 {
			continue
		}
		guess := first
		if num > 1 {
			guess = int(argmax(p))
		}
		cj[int(l)*c+guess]++
	}
	for y := range c {
		cj[y*c+y] = max(cj[y*c+y], 1)
	}
	// calibrate_confident_joint: each row to its given class's count, then
	// the whole to n.
	for g := range c {
		row := cj[g*c : (g+1)*c]
		s := max(npSum(row), 1e-6)
		for j := range row {
			row[j] = row[j] / s * float64(counts[g])
		}
	}
	// numpy sums the calibrated matrix in memory order, and the matrix it
	// sums is a transposed view: column by column.
	tr := make([]float64, c*c)
	for i := range c {
		for j := range c {
			tr[j*c+i] = cj[i*c+j]
		}
	}
	total := max(npSum(tr), 1e-6)
	for i := range cj {
		cj[i] = cj[i] / total * float64(n)
	}
	return roundRows(cj, c)
}

// keepAtLeastOnePerClass is cleanlab.filter._keep_at_least_n_per_class with
// n = 1 and frac_noise = 1: a zero diagonal entry is raised to 1 and its
// column's other non-zero entries lowered to pay for it, truncated to
// integers.
func keepAtLeastOnePerClass(pcm []float64, c int) []int {
	diff := make([]float64, c)
	perCol := make([]float64, c)
	for j := range c {
		diff[j] = max(pcm[j*c+j], 1) - pcm[j*c+j]
		nz := 0
		for i := range c {
			if pcm[i*c+j] != 0 {
				nz++
			}
		}
		perCol[j] = max(float64(nz)-1, 1)
	}
	m := make([]float64, c*c)
	for i := range c {
		for j := range c {
			v := pcm[i*c+j] - diff[j]/perCol[j]
			if i == j {
				v = max(pcm[i*c+j], 1)
			}
			m[i*c+j] = math.Trunc(max(v, 0))
		}
	}
	return roundRows(m, c)
}

// roundRows is cleanlab's round_preserving_row_totals: each row rounded to
// integers with its (rounded) total kept.
func roundRows(m []float64, c int) []int {
	out := make([]int, len(m))
	for r := 0; r < len(m); r += c {
		roundPreservingSum(out[r:r+c], m[r:r+c])
	}
	return out
}

// roundPreservingSum is cleanlab.internal.util.round_preserving_sum: round
// half to even (numpy's round), then move the entries whose rounding lost
// the most, in the order numpy's argsort(floats - ints)[::-1] visits them,
// until the total is the rounded total of v.
func roundPreservingSum(dst []int, v []float64) {
	ints := make([]float64, len(v))
	for i, x := range v {
		ints[i] = math.RoundToEven(x)
	}
	orig := math.RoundToEven(npSum(v))
	cur := math.RoundToEven(npSum(ints))
	idx := make([]int, len(v))
	for math.Abs(cur-orig) > 1e-6 {
		diff := math.RoundToEven(orig - cur)
		inc := 1.0
		if diff < 0 {
			inc = -1
		}
		changes := min(int(math.Abs(diff)), len(v))
		for i := range idx {
			idx[i] = i
		}
		// A stable ascending sort reversed: ties visit the later index first.
		slices.SortStableFunc(idx, func(a, b int) int {
			da, db := v[a]-ints[a], v[b]-ints[b]
			switch {
			case da < db:
				return -1
			case da > db:
				return 1
			}
			return 0
		})
		slices.Reverse(idx)
		for _, i := range idx[:changes] {
			ints[i] += inc
		}
		cur = math.RoundToEven(npSum(ints))
	}
	for i, x := range ints {
		dst[i] = int(x)
	}
}

// npSum is numpy's pairwise summation of a contiguous float64 array (the
// order np.sum adds in): below 8 values one by one, up to 128 in eight
// interleaved partial sums, above that halved recursively. The vote
// probabilities' normaliser is summed this way so that their ties (equal
// margins) break as in the peer's numpy code.
func npSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		s := 0.0
		for _, v := range a {
			s += v
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += a[i]
		}
		return s
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return npSum(a[:n2]) + npSum(a[n2:])
	}
}

// argmax is the first index of the largest value (numpy's argmax).
func argmax(v []float64) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}
