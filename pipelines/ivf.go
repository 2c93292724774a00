package pipelines

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/ivfstages"
)

// Neighbour modes (Config.Neighbours, summary.json "neighbours").
const (
	NeighboursAuto   = "auto"
	NeighboursExact  = "exact"
	NeighboursSample = "sample"
	NeighboursIVF    = "ivf"
)

// AutoIVFRows is the row count from which auto picks ivf over exact. Exact
// search costs N^2 d and ships every candidate's features and, each round,
// every candidate's state to every worker; ivf costs about NProbe x
// partition size x N d plus a few shuffles. Measured on 2 cores
// (docs/perf/scale.md): at 50k rows the exact kNN already takes as long as
// three rounds of sample + EM, and it grows as N^2 from there, while below it
// ivf's extra shuffles and k-means buy little. Exact is the reference
// quality, so it is kept wherever it is cheap.
const AutoIVFRows = 50_000

// PaperCandidates is the candidate set size of --neighbours sample when
// --candidates is not given: the paper's 15,000.
const PaperCandidates = 15_000

// neighbourMode fixes the mode for an input of rows rows: auto becomes
// sample when --candidates is given, else exact below AutoIVFRows and ivf
// from there.
func neighbourMode(o *Options, rows int64) string {
	if o.Neighbours != NeighboursAuto {
		return o.Neighbours
	}
	switch {
	case o.Candidates.Set:
		return NeighboursSample
	case rows >= AutoIVFRows:
		return NeighboursIVF
	}
	return NeighboursExact
}

// buildIVF wires --neighbours ivf from units (PCollection<shardio.Unit>)
// and their rows (PCollection<schemas.Rows>) to the final states in input
// batches (PCollection<stages.Items>): IVF neighbours, then rounds joined by
// key, back to input batches. With spilling (the embedded runner) the probe
// reads the units again rather than have Prism hold every row in memory
// until the model is fitted.
func buildIVF(s beam.Scope, plan *Plan, units, rows beam.PCollection) beam.PCollection {
	o := &plan.Options
	wb := plan.WaveBytes
	var again beam.PCollection // no second read: the rows wait in the runner's shuffle
	if plan.Spill != "" {
		again = units
	}
	blocks := ivfstages.Neighbours(s, rows, ivfstages.Params{
		Partitioning: ivf.Params{Partitions: o.Partitions.Or(0), NProbe: o.NProbe.Or(0), Seed: o.Seed},
		Rows:         plan.Rows,
		Search:       plan.NeighbourParams(),
		IDColumn:     plan.Read.Columns.WithDefaults().ID,
		D:            plan.Read.D,
		WaveBytes:    wb,
		Units:        again,
		Read:         plan.Read,
		Spill:        ivfstages.Spill{Dir: plan.Spill},
	})
	// The embedded runner (the one that spills) runs all rounds in one
	// stage when the blocks fit in memory (--local-rounds-mib).
	size := ivfstages.LocalRoundsSize(plan.Rows, o.K, plan.Mixture)
	local := plan.Spill != "" && o.Rounds > 0 && size <= int64(o.LocalMiB.Or(ivfstages.LocalRoundsBytes>>20))<<20
	if local {
		progress.Notef("ivf: all %d rounds in one stage, every block in memory (about %d MiB)", o.Rounds, max(size>>20, 1))
	}
	return ivfstages.JoinRounds(s, blocks, ivfstages.JoinRoundsParams{
		Rounds: o.Rounds, Workers: plan.Workers, Waves: ivfstages.RoundWaves(plan.Rows, o.K, plan.Mixture, wb),
		Spill: ivfstages.Spill{Dir: plan.Spill}, Mixture: plan.Mixture, Local: local,
	})
}
