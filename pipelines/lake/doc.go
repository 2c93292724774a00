// Package lake relabels data lakes incrementally: an Iceberg output table
// (RunTable, full or --incremental) and an output directory under
// --incremental (RunDir, with a manifest in summary.json). It plans, then
// executes, the way iceberg-go's table compaction separates PlanCompaction
// from its execution: plan.go decides from the stored state alone which
// rows are new, which files are rewritten or removed, whether the options
// allow an incremental run and which calibration is kept (fit.go: which
// fits of the full run are kept and applied); table.go and
// dir.go read the rows, run the update (update.go: search.go's neighbours,
// the stored states, engine.Update's rounds), write (write.go) and commit
// (an Iceberg snapshot, or pipelines.Session's directory protocol). A
// full run over a lake is pipelines' own (Execute, or Session.Full); the
// lake imports pipelines and never the reverse, and cmd/relabel chooses
// between the two.
package lake
