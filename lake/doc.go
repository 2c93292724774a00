// Package lake relabels data lakes incrementally: an Iceberg output table
// (RunTable, full or --incremental) and an output directory under
// --incremental (RunDir, with a manifest in summary.json). It plans, then
// executes, the way iceberg-go's table compaction separates PlanCompaction
// from its execution: plan.go decides from the stored state alone which
// rows are new, which files are rewritten or removed, whether the options
// allow an incremental run and which calibration is kept (fit.go: which
// fits of the full run are kept and applied); table.go and dir.go read the
// rows, run the update (update.go: search.go's neighbours, the stored
// states, engine.Update's rounds), write (write.go) and commit (an Iceberg
// snapshot, or job.Session's directory protocol). A full run over a lake is
// the pipeline's: cmd/relabel hands it over as a function value
// (job.Execute, pipelines.Executing), so that the lake depends on no Beam
// package (internal/archcheck).
package lake
