package pipelines

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/pipelines/ivfstages"
	"github.com/relabel/relabel/transforms/engine"
)

// buildIVF wires --neighbours ivf from units (PCollection<shardio.Unit>)
// and their rows (PCollection<schemas.Rows>) to the final states in input
// batches (PCollection<stages.Items>): IVF neighbours, then rounds joined by
// key, back to input batches (with --given-label bayes, the given-label
// model's posteriors instead of the final states, fitted after the last
// round: ivfstages.JoinRoundsParams.Given); the blocks start from the pooled fit first
// where plan.Mixture.PooledIters says so (ivfstages.PooledStart), whose
// outcome (one stages.PooledModel; invalid: none) is returned for the
// writer's calibration. With spilling (the embedded runner) the probe
// reads the units again rather than have Prism hold every row in memory
// until the model is fitted.
func buildIVF(s beam.Scope, plan *job.Job, d job.Dirs, units, rows beam.PCollection) (items, pooled beam.PCollection) {
	wb := plan.WaveBytes
	var again beam.PCollection // no second read: the rows wait in the runner's shuffle
	if d.Spill != "" {
		again = units
	}
	blocks := ivfstages.Neighbours(s, rows, ivfstages.Params{
		Partitioning: plan.IVFParams(plan.Rows),
		Rows:         plan.Rows,
		Search:       plan.NeighbourParams(),
		IDColumn:     plan.IDColumn,
		D:            plan.Read.D,
		WaveBytes:    wb,
		Units:        again,
		Read:         plan.Read,
		Spill:        ivfstages.Spill{Dir: d.Spill},
		Keep:         d.KeepIVF,
		Features:     plan.Head != "",
	})
	blocks, pooled = ivfstages.PooledStart(s, blocks, plan.Mixture, ivfstages.Spill{Dir: d.Spill}, plan.Rows)
	// The embedded runner (the one that spills) runs all rounds in one
	// stage when the blocks fit in memory (--local-rounds-mib), with the
	// linear head where the job resolved one (only there).
	hp := plan.HeadParams()
	size, local := plan.LocalRoundsSize(hp != nil)
	if hp != nil && !local {
		panic("pipelines: the linear head in ivf mode without the local rounds (job resolves --head so only there)")
	}
	streamedSize, streamed := plan.StreamedRoundsSize()
	switch {
	case local:
		progress.Notef("ivf: all %d rounds in one stage, every block in memory (about %d MiB)", plan.Rounds(), max(size>>20, 1))
	case streamed:
		progress.Notef("ivf: all %d rounds in one stage, the items' states in memory (about %d MiB), every block read from the spill files each round", plan.Rounds(), max(streamedSize>>20, 1))
	}
	items = ivfstages.JoinRounds(s, blocks, ivfstages.JoinRoundsParams{
		Rounds: plan.Rounds(), Workers: plan.Workers, Waves: ivfstages.RoundWaves(plan.Rows, plan.K(), plan.Mixture, wb),
		Spill: ivfstages.Spill{Dir: d.Spill}, Mixture: plan.Mixture, Local: local || streamed, Streamed: streamed, Head: hp, Keep: d.KeepFit,
		Given: plan.Given == engine.GivenBayes, Device: plan.Kernels(), Rows: plan.Rows,
	})
	return items, pooled
}
