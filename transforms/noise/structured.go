package noise

import (
	"fmt"
	"math/rand/v2"
)

// The partly structured kinds (Perm, Multi, Mixed) sit between symmetric noise
// (flips spread over every other class) and pair flips (each class's flips go
// to one fixed class, c+1): their class-level structure is drawn once from the
// seed, so that every row, shard and retry sees the same map, and each row then
// flips with probability rate from its own (seed, id) stream, with the same
// first draw as SymmetricLabels: at equal seeds every single-label kind
// corrupts the same rows.

// DefaultTargets is the number of classes each class flips to under Multi
// noise when Params.Targets is unset.
const DefaultTargets = 2

// Salts separate the class-level streams of the structured kinds from the row
// streams (seed, id) and from IDN's (seed^wSalt, class).
const (
	permSalt  = 0x6a09e667f3bcc908
	multiSalt = 0xbb67ae8584caa73b
	mixSalt   = 0x3c6ef372fe94f82b
)

// Derangement returns the class map of Perm noise over c classes: a
// permutation with no fixed point, uniform over such permutations drawn from
// seed alone, other than the pair shift c -> c+1 mod C where another
// derangement exists (C >= 3), so that perm noise is never pair noise in
// disguise. With 2 classes the only derangement is the swap.
func Derangement(c int, seed uint64) []int32 {
	if c < 2 {
		panic(fmt.Sprintf("noise: Derangement of %d classes", c))
	}
	r := rand.New(rand.NewPCG(seed^permSalt, uint64(c)))
	p := make([]int32, c)
	for {
		for i := range p {
			p[i] = int32(i)
		}
		r.Shuffle(c, func(i, j int) { p[i], p[j] = p[j], p[i] })
		// Rejection keeps the draw uniform over the accepted set; about 1/e
		// of the shuffles are derangements.
		fixed, shift := false, true
		for i, v := range p {
			fixed = fixed || int(v) == i
			shift = shift && int(v) == (i+1)%c
		}
		if !fixed && (!shift || c == 2) {
			return p
		}
	}
}

// MultiTargets returns the class map of Multi noise over c classes: for each
// class y, n distinct classes other than y (in draw order), drawn from the
// stream (seed^multiSalt, y), so from seed alone. It panics unless
// 1 <= n <= c-1.
func MultiTargets(c, n int, seed uint64) [][]int32 {
	if n < 1 || n > c-1 {
		panic(fmt.Sprintf("noise: MultiTargets: %d targets for %d classes", n, c))
	}
	out := make([][]int32, c)
	others := make([]int32, c-1)
	for y := range c {
		r := rand.New(rand.NewPCG(seed^multiSalt, uint64(y)))
		others = others[:0]
		for k := range c {
			if k != y {
				others = append(others, int32(k))
			}
		}
		// A partial Fisher-Yates shuffle: the first n are a uniform draw of
		// n distinct other classes.
		for i := range n {
			j := i + r.IntN(len(others)-i)
			others[i], others[j] = others[j], others[i]
		}
		out[y] = append([]int32(nil), others[:n]...)
	}
	return out
}

// MixedPairClasses returns the class split of Mixed noise over c classes:
// pair[y] is true for the floor(c/2) classes, drawn from seed alone, whose
// flips go to y+1 mod C; the others flip symmetrically.
func MixedPairClasses(c int, seed uint64) []bool {
	if c < 2 {
		panic(fmt.Sprintf("noise: MixedPairClasses of %d classes", c))
	}
	r := rand.New(rand.NewPCG(seed^mixSalt, uint64(c)))
	pair := make([]bool, c)
	for _, y := range r.Perm(c)[:c/2] {
		pair[y] = true
	}
	return pair
}

// PermLabels returns a noisy copy of ds.Truth in which each label y is, with
// probability rate, replaced by Derangement(C, seed)[y]: class-conditional
// noise as concentrated as pair flips (one target per class) but without
// their chain structure.
func PermLabels(ds Dataset, rate float64, seed uint64) ([]int32, error) {
	if err := ds.validate(false); err != nil {
		return nil, err
	}
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	perm := Derangement(ds.C, seed)
	out := make([]int32, ds.Len())
	for i, y := range ds.Truth {
		r := rowRNG(seed, ds.IDs[i])
		out[i] = y
		if r.Float64() < rate {
			out[i] = perm[y]
		}
	}
	return out, nil
}

// MultiLabels returns a noisy copy of ds.Truth in which each label y is, with
// probability rate, replaced by one of MultiTargets(C, targets, seed)[y]
// chosen uniformly: rate/targets to each. targets must be in [1, C-1]; 1 is
// Perm-like noise without the derangement constraint, C-1 is symmetric.
func MultiLabels(ds Dataset, rate float64, targets int, seed uint64) ([]int32, error) {
	if err := ds.validate(false); err != nil {
		return nil, err
	}
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	if targets < 1 || targets > ds.C-1 {
		return nil, fmt.Errorf("noise: %d flip targets per class, want 1 to %d (C-1)", targets, ds.C-1)
	}
	to := MultiTargets(ds.C, targets, seed)
	out := make([]int32, ds.Len())
	for i, y := range ds.Truth {
		r := rowRNG(seed, ds.IDs[i])
		out[i] = y
		if r.Float64() < rate {
			out[i] = to[y][r.IntN(targets)]
		}
	}
	return out, nil
}

// MixedLabels returns a noisy copy of ds.Truth in which each label y is, with
// probability rate, replaced by y+1 mod C where MixedPairClasses(C, seed)[y]
// holds and by a uniformly random other class elsewhere: half the classes
// with pair noise, half with symmetric noise, as a dataset whose confusions
// are structured for some classes only.
func MixedLabels(ds Dataset, rate float64, seed uint64) ([]int32, error) {
	if err := ds.validate(false); err != nil {
		return nil, err
	}
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	pair := MixedPairClasses(ds.C, seed)
	out := make([]int32, ds.Len())
	for i, y := range ds.Truth {
		r := rowRNG(seed, ds.IDs[i])
		out[i] = y
		if r.Float64() >= rate {
			continue
		}
		if pair[y] {
			out[i] = int32((int(y) + 1) % ds.C)
		} else {
			out[i] = otherClass(r, y, ds.C)
		}
	}
	return out, nil
}
