package pipelines

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/transforms/engine"
)

// Build adds the relabelling of the job j to the pipeline rooted at s,
// writing into d.Tmp (spilling into d.Spill, keeping into d.KeepIVF and
// d.KeepFit where set). Element types: shardio.Unit -> schemas.Rows -> stages.Items ->
// schemas.Cleaned (grouped by shard).
func Build(s beam.Scope, plan *job.Job, d job.Dirs) {
	s = s.Scope("relabel")
	if plan.Crowd != nil && plan.Crowd.LabelOnly {
		buildLabelOnly(s, plan, d)
		return
	}
	units := beam.CreateList(s, plan.Units)
	rows := stages.Read(s, units, plan.Read)
	var items, pooled beam.PCollection
	if plan.Mode == job.ModeIVF {
		items, pooled = buildIVF(s, plan, d, units, rows)
	} else {
		items, pooled = buildExact(s, plan, d, units, rows)
	}
	if d.KeepFit != "" && pooled.IsValid() {
		stages.KeepPooled(s, pooled, d.KeepFit)
	}
	stages.WritePooled(s, items, writeParams(plan, d.Tmp), pooled)
}

// buildExact is Build's exact and sample modes: their stages in one where
// the input fits (job.Job.LocalExactSize), else one after another.
func buildExact(s beam.Scope, plan *job.Job, d job.Dirs, units, rows beam.PCollection) (items, pooled beam.PCollection) {
	var given *stages.GivenParams
	if plan.Given == engine.GivenBayes {
		given = &stages.GivenParams{C: plan.C, C0: plan.Mixture.C0, Seed: plan.Seed(), Workers: plan.Workers, Keep: d.KeepFit}
	}
	rp := stages.RoundsParams{Rounds: plan.Rounds(), Workers: plan.Workers, Mixture: plan.Mixture, Device: plan.Kernels(), Head: plan.HeadParams(), Keep: d.KeepFit}
	sp := stages.StatsParams{Candidates: plan.Candidates, Seed: plan.Seed(), IDColumn: plan.IDColumn}
	if size, local := plan.LocalExactSize(); local {
		progress.Notef("%s: every stage in one, every batch in memory (about %d MiB)", plan.Mode, max(size>>20, 1))
		return stages.Local(s, rows, stages.LocalParams{Stats: sp, Neighbours: plan.NeighbourParams(), Rounds: rp, Given: given})
	}
	stats := stages.ComputeStats(s, rows, sp)
	items = stages.Neighbours(s, rows, stats, plan.NeighbourParams())
	if plan.Crowd != nil {
		return buildCrowdFeatures(s, plan, d, units, items), beam.PCollection{}
	}
	// Rounds starts the items from the pooled fit first where
	// plan.Mixture.PooledIters says so (stages.PooledStart).
	if rp.Head != nil {
		rp.Features = stages.CandidateFeatures(s, rows, stats)
	}
	items, pooled = stages.RoundsPooled(s, items, rp)
	if given != nil {
		items = stages.Given(s, items, *given)
	}
	return items, pooled
}
