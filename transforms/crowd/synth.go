package crowd

import (
	"fmt"
	"math/rand/v2"
)

// Kind is a kind of simulated annotator (the data README's four).
type Kind int

const (
	// Expert labels correctly with probability Acc, else uniformly among the
	// other classes.
	Expert Kind = iota
	// Confuser labels correctly with probability Acc, else one of two fixed
	// other classes per true class.
	Confuser
	// Spammer labels uniformly at random, whatever the truth.
	Spammer
	// Adversary labels c as c+1 (mod C) with probability Acc, else c.
	Adversary
)

func (k Kind) String() string {
	switch k {
	case Expert:
		return "expert"
	case Confuser:
		return "confuser"
	case Spammer:
		return "spammer"
	case Adversary:
		return "adversary"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Annotator kinds of a simulated crowd.
type SimAnnotator struct {
	Kind Kind
	Acc  float64
}

// Crowd is a simulated crowd with known answers.
type Crowd struct {
	Items Items
	Truth []int32
	// Matrix[a] is annotator a's true confusion matrix (C x C, row-major);
	// annotator a's key is int64(a).
	Matrix [][]float64
}

// Simulate draws n items of C classes (uniform), each labelled by perItem
// distinct annotators drawn uniformly from ann, from seed.
func Simulate(n, C, perItem int, ann []SimAnnotator, seed uint64) *Crowd {
	if perItem > len(ann) || C < 3 {
		panic(fmt.Sprintf("crowd: Simulate: %d annotators per item of %d, C = %d", perItem, len(ann), C))
	}
	rng := rand.New(rand.NewPCG(seed, 0x63726f7764))
	cr := &Crowd{Truth: make([]int32, n), Matrix: make([][]float64, len(ann))}
	for a, sa := range ann {
		m := make([]float64, C*C)
		for c := 0; c < C; c++ {
			row := m[c*C : (c+1)*C]
			switch sa.Kind {
			case Expert:
				for l := range row {
					row[l] = (1 - sa.Acc) / float64(C-1)
				}
				row[c] = sa.Acc
			case Confuser:
				row[c] = sa.Acc
				row[(c+1+rng.IntN(C-1))%C] += (1 - sa.Acc) / 2
				o := (c + 1 + rng.IntN(C-1)) % C
				row[o] += (1 - sa.Acc) / 2
			case Spammer:
				for l := range row {
					row[l] = 1 / float64(C)
				}
			case Adversary:
				row[c] = 1 - sa.Acc
				row[(c+1)%C] = sa.Acc
			}
		}
		cr.Matrix[a] = m
	}
	cr.Items.Off = make([]int32, 1, n+1)
	pick := make([]int, len(ann))
	for i := range pick {
		pick[i] = i
	}
	for i := 0; i < n; i++ {
		c := rng.IntN(C)
		cr.Truth[i] = int32(c)
		for k := 0; k < perItem; k++ { // partial Fisher-Yates: perItem distinct annotators
			j := k + rng.IntN(len(pick)-k)
			pick[k], pick[j] = pick[j], pick[k]
		}
		for _, a := range pick[:perItem] {
			row := cr.Matrix[a][c*C : (c+1)*C]
			u, l := rng.Float64(), 0
			for ; l < C-1; l++ {
				if u -= row[l]; u < 0 {
					break
				}
			}
			cr.Items.Annotator = append(cr.Items.Annotator, int64(a))
			cr.Items.Label = append(cr.Items.Label, int32(l))
		}
		cr.Items.Off = append(cr.Items.Off, int32(len(cr.Items.Label)))
	}
	cr.Items.Sort()
	return cr
}
