package crowd

import (
	"errors"
	"fmt"
	"math"
)

// DefaultFlagLabels is Params.FlagLabels' default.
const DefaultFlagLabels = 10

// The range FitStrength searches when Params.Strength is 0.
const (
	MinStrength = 0.1
	MaxStrength = 1000
)

// Params configures the model. The zero value is valid: every field has a
// default, chosen on the crowd sets of docs/QUALITY_CROWD.md and used for
// all of them.
type Params struct {
	// C is the number of classes. Required.
	C int
	// Iterations of EM. Optional, default 30.
	Iterations int
	// Strength is the weight, in labels, of the Dirichlet prior on each row
	// of an annotator's confusion matrix, centred on the pooled row: an
	// annotator with n labels of items of class c keeps n / (n + Strength)
	// of its own evidence. Optional, default 0: chosen from the data every
	// M step (FitStrength, empirical Bayes) within [MinStrength, MaxStrength].
	Strength float64
	// SkillStrength is the weight, in labels, of the Beta prior that pulls
	// each annotator's accuracy toward the pool's (Model.Accuracy); the
	// accuracy moves the centre of its rows' prior (see Model). Optional,
	// default 0: chosen from the data every M step (FitSkill) within
	// [MinStrength, MaxStrength].
	SkillStrength float64
	// Smooth is the pseudo-count added to every cell of the pooled matrix.
	// Optional, default 0.01.
	Smooth float64
	// ClassPrior is the pseudo-count added to every class of the class prior.
	// Optional, default 1.
	ClassPrior float64
	// NeighbourWeight is lambda, the share of an item's prior given to its
	// neighbours' posteriors where items have neighbours (the rest goes to
	// the class prior). Optional, default 0.8; set it negative for 0.
	NeighbourWeight float64
	// SpammerLift: an annotator whose labels raise the accuracy of guessing
	// the true class by less than this share of what a perfect annotator
	// would (Summary.Lift) is flagged as a spammer. Optional, default 0.2.
	SpammerLift float64
	// FlagLabels is the fewest labels an annotator must have given to be
	// judged at all: below it, Summary says TooFew ("not enough labels")
	// and flags it neither spammer nor adversary. With a handful of labels
	// its matrix is mostly the prior's, and a crowd of 100,000 annotators of
	// one label each would otherwise be reported as 100,000 spammers (issue
	// 33). Ten labels put the standard error of an accuracy near .15, the
	// width of the gap between a spammer's lift and the threshold. Optional,
	// default 10; set it negative for 0 (judge everyone).
	FlagLabels int
	// ClassBalance is the share of the class prior that is uniform, the rest
	// being the estimate sum_i T_i(c) / n. EM's estimate alone is
	// self-reinforcing (a class that takes the uncertain items grows, and so
	// takes more); a small uniform share stops the drift. A large one (0.5
	// until issue 33) costs dearly where classes are skewed: on a generated
	// crowd whose largest class holds three items in four it took label-only
	// accuracy from .87 to .56 (docs/QUALITY_CROWD.md). Optional, default
	// 0.1; set it negative for 0.
	ClassBalance float64
}

// WithDefaults fills unset optional fields.
func (p Params) WithDefaults() Params {
	if p.Iterations == 0 {
		p.Iterations = 30
	}
	if p.Smooth == 0 {
		p.Smooth = 0.01
	}
	if p.ClassBalance == 0 {
		p.ClassBalance = 0.1
	}
	if p.ClassPrior == 0 {
		p.ClassPrior = 1
	}
	if p.NeighbourWeight == 0 {
		p.NeighbourWeight = 0.8
	}
	if p.SpammerLift == 0 {
		p.SpammerLift = 0.2
	}
	if p.FlagLabels == 0 {
		p.FlagLabels = DefaultFlagLabels
	}
	return p
}

// Lambda is the neighbour weight in use: NeighbourWeight, 0 when negative.
// (WithDefaults keeps a negative value negative, so that applying it twice
// changes nothing.)
func (p Params) Lambda() float64 { return max(0, p.NeighbourWeight) }

// Balance is the class balance in use: ClassBalance, 0 when negative.
func (p Params) Balance() float64 { return max(0, p.ClassBalance) }

// Validate checks p once defaults are applied.
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
	if bad(p.ClassBalance) || p.ClassBalance > 1 { // negative: 0
		errs = append(errs, fmt.Errorf("crowd: class balance = %g, want in [0,1]", p.ClassBalance))
	}
	if bad(p.NeighbourWeight) || p.NeighbourWeight >= 1 { // negative: 0
		errs = append(errs, fmt.Errorf("crowd: neighbour weight = %g, want in [0,1)", p.NeighbourWeight))
	}
	if bad(p.SpammerLift) || p.SpammerLift < 0 || p.SpammerLift > 1 {
		errs = append(errs, fmt.Errorf("crowd: spammer lift = %g, want in [0,1]", p.SpammerLift))
	}
	return errors.Join(errs...)
}
