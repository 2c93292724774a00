package noise

// SymmetricLabels returns a noisy copy of ds.Truth in which each label is,
// with probability rate, replaced by a uniformly random other class. A flip
// never lands on the true class, so the expected fraction of wrong labels is
// exactly rate (the convention of the data README's "sym" files).
func SymmetricLabels(ds Dataset, rate float64, seed uint64) ([]int32, error) {
	if err := ds.validate(false); err != nil {
		return nil, err
	}
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	out := make([]int32, ds.Len())
	for i, y := range ds.Truth {
		r := rowRNG(seed, ds.IDs[i])
		out[i] = y
		if r.Float64() < rate {
			out[i] = otherClass(r, y, ds.C)
		}
	}
	return out, nil
}

// PairFlipLabels returns a noisy copy of ds.Truth in which each label c is,
// with probability rate, replaced by (c+1) mod C: the class-conditional
// "pair" noise of Han et al. 2018, whose transition matrix is not diagonally
// dominant beyond rate 0.5.
func PairFlipLabels(ds Dataset, rate float64, seed uint64) ([]int32, error) {
	if err := ds.validate(false); err != nil {
		return nil, err
	}
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	out := make([]int32, ds.Len())
	for i, y := range ds.Truth {
		// The same stream and first draw as SymmetricLabels: at equal seeds the
		// two kinds corrupt the same rows, which makes them easy to compare.
		r := rowRNG(seed, ds.IDs[i])
		out[i] = y
		if r.Float64() < rate {
			out[i] = int32((int(y) + 1) % ds.C)
		}
	}
	return out, nil
}
