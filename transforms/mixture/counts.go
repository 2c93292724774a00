package mixture

// Counts is a set of sparse noisy-label count vectors y_l, each with a weight
// (its multiplicity after merging duplicates) and a trial count N_l: vector l has
// Cnt[e] trials of category Cat[e] for e in [Off[l], Off[l+1]). Categories within a
// vector are sorted and distinct.
type Counts struct {
	Off    []int32
	Cat    []int32
	Cnt    []float64
	W      []float64
	Trials []float64
}

// Len is the number of vectors.
func (y *Counts) Len() int { return len(y.W) }

// Reset empties y, keeping storage.
func (y *Counts) Reset() {
	y.Off = append(y.Off[:0], 0)
	y.Cat, y.Cnt, y.W, y.Trials = y.Cat[:0], y.Cnt[:0], y.W[:0], y.Trials[:0]
}

// Add appends one count vector (cats need not be sorted or distinct).
func (y *Counts) Add(cats []int32, w float64) {
	lo := len(y.Cat)
	for _, c := range cats {
		found := false
		for e := lo; e < len(y.Cat); e++ {
			if y.Cat[e] == c {
				y.Cnt[e]++
				found = true
				break
			}
		}
		if !found {
			y.Cat = append(y.Cat, c)
			y.Cnt = append(y.Cnt, 1)
		}
	}
	sortEntries(y.Cat[lo:], y.Cnt[lo:])
	y.Off = append(y.Off, int32(len(y.Cat)))
	y.W = append(y.W, w)
	y.Trials = append(y.Trials, float64(len(cats)))
}

func sortEntries(cat []int32, cnt []float64) {
	// Insertion sort: vectors hold at most N distinct categories.
	for i := 1; i < len(cat); i++ {
		for j := i; j > 0 && cat[j] < cat[j-1]; j-- {
			cat[j], cat[j-1] = cat[j-1], cat[j]
			cnt[j], cnt[j-1] = cnt[j-1], cnt[j]
		}
	}
}
