package stages

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// CandidateFeatures is the candidate set's features as given (not
// standardised: transforms/head z-scores them itself, with the same sums in
// the same order as engine.Run's head, so that the pipeline's head is the
// engine's bit for bit), keys ascending: what the rounds fit the linear head
// on (RoundsParams.Features). rows: PCollection<schemas.Rows>; stats: the
// singleton PCollection<Stats>. Returns a singleton PCollection<Candidates>.
//
// Only candidates carry features into the rounds (in exact mode every item
// is one; in sample mode the --candidates items chosen by a hash of seed and
// id): the head is fitted on them and gives them its component, and the
// other items of a sample-mode run have none (engine.Component). Carrying
// every item's features would ship the whole input through every round's
// join, where the candidate set is bounded by design.
func CandidateFeatures(s beam.Scope, rows, stats beam.PCollection) beam.PCollection {
	s = s.Scope("relabel.CandidateFeatures")
	frags := beam.ParDo(s, &candRowsFn{Standardise: false}, rows, beam.SideInput{Input: stats})
	return beam.Combine(s, &candidatesFn{}, frags)
}

// headRounds counts the rounds the head gave its component in
// (summary.json's head section); headLast is 1 where it still did in the
// last round: the head had not switched itself off (head.OffShare), so the
// run's posteriors depend on it, and an incremental lake run gives the rows
// it relabels the head's kept fit (RoundsParams.Keep; package lake).
var (
	headRounds = beam.NewCounter("relabel", "head_rounds")
	headLast   = beam.NewCounter("relabel", "head_last")
)

func keyCandidates(c Candidates) (int, Candidates) { return 0, c }

func init() {
	register.Function1x2(keyCandidates)
	register.Iter1[Candidates]()
}
