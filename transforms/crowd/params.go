package crowd

import (
	"errors"
	"fmt"
	"math"
)

// The model's defaults, chosen on the crowd sets of docs/QUALITY_CROWD.md
// and used for all of them: DefaultParams is built from them, options'
// Defaults reads DefaultParams, and the flags' help is computed from it.
const (
	DefaultIterations      = 30
	DefaultSmooth          = 0.01
	DefaultClassPrior      = 1.0
	DefaultNeighbourWeight = 0.8
	DefaultSpammerLift     = 0.2
	DefaultFlagLabels      = 10
	DefaultClassBalance    = 0.1
)

// The range FitStrength (and FitSkill) search when Params.Strength (and
// SkillStrength) is FromData.
const (
	MinStrength = 0.1
	MaxStrength = 1000
)

// FromData, as Params.Strength or SkillStrength, has the weight chosen from
// the data every M step by empirical Bayes: a mode, not a default.
const FromData = 0

// Params configures the model. Every field is a value used as given:
// DefaultParams returns the complete defaults, and a caller changes the
// fields it means to (a zero is zero, never "the default").
type Params struct {
	// C is the number of classes. Required.
	C int
	// Iterations of EM, >= 0. Default DefaultIterations.
	Iterations int
	// Strength is the weight, in labels, of the Dirichlet prior on each row
	// of an annotator's confusion matrix, centred on the pooled row: an
	// annotator with n labels of items of class c keeps n / (n + Strength)
	// of its own evidence. Default FromData: chosen from the data every M
	// step (FitStrength, empirical Bayes) within [MinStrength, MaxStrength].
	Strength float64
	// SkillStrength is the weight, in labels, of the Beta prior that pulls
	// each annotator's accuracy toward the pool's (Model.Accuracy); the
	// accuracy moves the centre of its rows' prior (see Model). Default
	// FromData: chosen from the data every M step (FitSkill) within
	// [MinStrength, MaxStrength].
	SkillStrength float64
	// Smooth is the pseudo-count added to every cell of the pooled matrix,
	// > 0. Default DefaultSmooth.
	Smooth float64
	// ClassPrior is the pseudo-count added to every class of the class
	// prior, > 0. Default DefaultClassPrior.
	ClassPrior float64
	// NeighbourWeight is lambda, the share of an item's prior given to its
	// neighbours' posteriors where items have neighbours (the rest goes to
	// the class prior), in [0,1). Default DefaultNeighbourWeight.
	NeighbourWeight float64
	// SpammerLift: an annotator whose labels raise the accuracy of guessing
	// the true class by less than this share of what a perfect annotator
	// would (Summary.Lift) is flagged as a spammer, in [0,1]. Default
	// DefaultSpammerLift.
	SpammerLift float64
	// FlagLabels is the fewest labels an annotator must have given to be
	// judged at all: below it, Summary says TooFew ("not enough labels")
	// and flags it neither spammer nor adversary. With a handful of labels
	// its matrix is mostly the prior's, and a crowd of 100,000 annotators of
	// one label each would otherwise be reported as 100,000 spammers (issue
	// 33). Ten labels put the standard error of an accuracy near .15, the
	// width of the gap between a spammer's lift and the threshold. >= 0 (0:
	// judge everyone). Default DefaultFlagLabels.
	FlagLabels int
	// ClassBalance is the share of the class prior that is uniform, the rest
	// being the estimate sum_i T_i(c) / n. EM's estimate alone is
	// self-reinforcing (a class that takes the uncertain items grows, and so
	// takes more); a small uniform share stops the drift. A large one (0.5)
	// costs dearly where classes are skewed: on a generated
	// crowd whose largest class holds three items in four it took label-only
	// accuracy from .87 to .56 (docs/QUALITY_CROWD.md). In [0,1]. Default
	// DefaultClassBalance.
	ClassBalance float64
}

// DefaultParams is the complete configuration of c classes: every field
// its default. It is the one place the crowd model's defaults are
// resolved; callers change what they mean to and Validate the result.
func DefaultParams(c int) Params {
	return Params{
		C:               c,
		Iterations:      DefaultIterations,
		Strength:        FromData,
		SkillStrength:   FromData,
		Smooth:          DefaultSmooth,
		ClassPrior:      DefaultClassPrior,
		NeighbourWeight: DefaultNeighbourWeight,
		SpammerLift:     DefaultSpammerLift,
		FlagLabels:      DefaultFlagLabels,
		ClassBalance:    DefaultClassBalance,
	}
}

// Validate checks p: every field as given.
func (p Params) Validate() error {
	var errs []error
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if p.C < 2 {
		errs = append(errs, fmt.Errorf("crowd: C = %d, want >= 2", p.C))
	}
	if p.C > 1<<20 {
		errs = append(errs, fmt.Errorf("crowd: C = %d, want <= %d", p.C, 1<<20))
	}
	if p.Iterations < 0 {
		errs = append(errs, fmt.Errorf("crowd: iterations = %d, want >= 0", p.Iterations))
	}
	if bad(p.Strength) || p.Strength < 0 {
		errs = append(errs, fmt.Errorf("crowd: strength = %g, want >= 0 (0: from the data)", p.Strength))
	}
	if bad(p.SkillStrength) || p.SkillStrength < 0 {
		errs = append(errs, fmt.Errorf("crowd: skill strength = %g, want >= 0 (0: from the data)", p.SkillStrength))
	}
	if bad(p.Smooth) || p.Smooth <= 0 {
		errs = append(errs, fmt.Errorf("crowd: smooth = %g, want > 0", p.Smooth))
	}
	if bad(p.ClassPrior) || p.ClassPrior <= 0 {
		errs = append(errs, fmt.Errorf("crowd: class prior = %g, want > 0", p.ClassPrior))
	}
	if bad(p.ClassBalance) || p.ClassBalance < 0 || p.ClassBalance > 1 {
		errs = append(errs, fmt.Errorf("crowd: class balance = %g, want in [0,1]", p.ClassBalance))
	}
	if bad(p.NeighbourWeight) || p.NeighbourWeight < 0 || p.NeighbourWeight >= 1 {
		errs = append(errs, fmt.Errorf("crowd: neighbour weight = %g, want in [0,1)", p.NeighbourWeight))
	}
	if bad(p.SpammerLift) || p.SpammerLift < 0 || p.SpammerLift > 1 {
		errs = append(errs, fmt.Errorf("crowd: spammer lift = %g, want in [0,1]", p.SpammerLift))
	}
	if p.FlagLabels < 0 {
		errs = append(errs, fmt.Errorf("crowd: flag labels = %d, want >= 0", p.FlagLabels))
	}
	return errors.Join(errs...)
}
