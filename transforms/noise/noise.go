package noise

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Dataset is the clean data noise is generated from. Row i has id IDs[i],
// true label Truth[i] in [0, C) and, when Features is set, the feature vector
// Features[i*D:(i+1)*D].
type Dataset struct {
	// IDs seed each row's random stream. Required, one per row; they need not
	// be sorted but should be distinct (equal ids get equal draws).
	IDs []int64
	// Truth holds the clean labels. Required.
	Truth []int32
	// Features is row-major n x D. Required by InstanceDependent only.
	Features []float32
	// D is the feature dimension. Required with Features.
	D int
	// C is the number of classes. Required, >= 2.
	C int
}

// Len returns the number of rows.
func (ds Dataset) Len() int { return len(ds.Truth) }

// validate checks the fields every generator needs; needFeatures adds the
// feature checks of InstanceDependent.
func (ds Dataset) validate(needFeatures bool) error {
	if ds.C < 2 {
		return fmt.Errorf("noise: %d classes, need at least 2", ds.C)
	}
	if ds.C > math.MaxInt32 {
		return fmt.Errorf("noise: %d classes do not fit int32 labels", ds.C)
	}
	if len(ds.IDs) != len(ds.Truth) {
		return fmt.Errorf("noise: %d ids for %d labels", len(ds.IDs), len(ds.Truth))
	}
	for i, y := range ds.Truth {
		if y < 0 || int(y) >= ds.C {
			return fmt.Errorf("noise: row %d (id %d): label %d outside [0,%d)", i, ds.IDs[i], y, ds.C)
		}
	}
	if needFeatures {
		if ds.D < 1 {
			return fmt.Errorf("noise: feature dimension %d, need at least 1", ds.D)
		}
		if len(ds.Features) != len(ds.Truth)*ds.D {
			return fmt.Errorf("noise: %d feature values for %d rows of dimension %d", len(ds.Features), len(ds.Truth), ds.D)
		}
		for i, v := range ds.Features {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("noise: row %d (id %d): feature %d is %v", i/ds.D, ds.IDs[i/ds.D], i%ds.D, v)
			}
		}
	}
	return nil
}

func checkRate(rate float64) error {
	if !(rate >= 0 && rate <= 1) { // also rejects NaN
		return fmt.Errorf("noise: rate %v outside [0,1]", rate)
	}
	return nil
}

// rowRNG is the one source of randomness for a row: seeded from (seed, id)
// so that a retried or re-batched row reproduces its draws exactly.
func rowRNG(seed uint64, id int64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(id)))
}

// otherClass draws a class uniformly from [0,C) without y.
func otherClass(r *rand.Rand, y int32, c int) int32 {
	t := int32(r.IntN(c - 1))
	if t >= y {
		t++
	}
	return t
}

// Kind names a noise model.
type Kind int

const (
	// Symmetric flips a label with probability Rate to a uniformly random
	// other class.
	Symmetric Kind = iota + 1
	// PairFlip flips a label c with probability Rate to (c+1) mod C.
	PairFlip
	// InstanceDependent flips with a per-row rate and a feature-dependent
	// target (Xia et al. 2020); see InstanceDependentLabels.
	InstanceDependent
	// Annotators gives every row one label per simulated annotator.
	Annotators
	// Perm flips a label c with probability Rate to perm[c], a seeded
	// derangement of the classes; see PermLabels.
	Perm
	// Multi flips a label c with probability Rate to one of Targets seeded
	// other classes, Rate/Targets each; see MultiLabels.
	Multi
	// Mixed flips with probability Rate as PairFlip on a seeded half of the
	// classes and as Symmetric on the rest; see MixedLabels.
	Mixed
)

var kindNames = map[Kind]string{
	Symmetric:         "sym",
	PairFlip:          "pair",
	InstanceDependent: "idn",
	Annotators:        "annotators",
	Perm:              "perm",
	Multi:             "multi",
	Mixed:             "mixed",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind reads the names String writes ("sym", "pair", "idn", "perm",
// "multi", "mixed", "annotators"), as the CLI and the data file names spell
// them.
func ParseKind(s string) (Kind, error) {
	for k, name := range kindNames {
		if s == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("noise: unknown kind %q (want sym, pair, idn, perm, multi, mixed or annotators)", s)
}

// Params selects and configures one noise model for Generate.
type Params struct {
	// Kind is the noise model. Required.
	Kind Kind
	// Rate is the flip probability (the mean per-row rate for
	// InstanceDependent). Required for every kind but Annotators; in [0,1].
	Rate float64
	// RateStd is the standard deviation of InstanceDependent's per-row flip
	// rate before truncation to [0,1]. Optional, default 0.1 (Xia et al.).
	RateStd float64
	// Sharpness scales InstanceDependent's logits (see IDN). Optional,
	// default 1 (DefaultSharpness).
	Sharpness float64
	// Accuracies holds one accuracy in [0,1] per simulated annotator.
	// Required for Annotators; see Spread.
	Accuracies []float64
	// Targets is the number of classes each class flips to under Multi, in
	// [1, C-1]. Optional, default DefaultTargets.
	Targets int
	// Seed selects the random streams. Optional, default 0.
	Seed uint64
}

// Noisy is the output of Generate. For the single-label kinds Labels has one
// label per row and Offsets is nil; for Annotators, row i's labels are
// Labels[Offsets[i]:Offsets[i+1]].
type Noisy struct {
	Labels  []int32
	Offsets []int32
}

// Generate runs the noise model p names over ds.
func Generate(ds Dataset, p Params) (Noisy, error) {
	var (
		out Noisy
		err error
	)
	switch p.Kind {
	case Symmetric:
		out.Labels, err = SymmetricLabels(ds, p.Rate, p.Seed)
	case PairFlip:
		out.Labels, err = PairFlipLabels(ds, p.Rate, p.Seed)
	case InstanceDependent:
		std := p.RateStd
		if std == 0 {
			std = DefaultRateStd
		}
		sharp := p.Sharpness
		if sharp == 0 {
			sharp = DefaultSharpness
		}
		out.Labels, err = InstanceDependentLabels(ds, p.Rate, std, sharp, p.Seed)
	case Perm:
		out.Labels, err = PermLabels(ds, p.Rate, p.Seed)
	case Multi:
		targets := p.Targets
		if targets == 0 {
			targets = DefaultTargets
		}
		out.Labels, err = MultiLabels(ds, p.Rate, targets, p.Seed)
	case Mixed:
		out.Labels, err = MixedLabels(ds, p.Rate, p.Seed)
	case Annotators:
		out.Labels, out.Offsets, err = AnnotatorLabels(ds, p.Accuracies, p.Seed)
	default:
		err = fmt.Errorf("noise: unknown kind %v", p.Kind)
	}
	return out, err
}
