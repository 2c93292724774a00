// Package pipelines wires relabel's stages into one Beam pipeline: read shards
// -> global stats (standardisation, candidate set, duplicate ids) -> candidate
// set -> batched kNN + LLC -> R rounds of sample + EM -> one output file per
// input shard, written to a temporary directory and committed by the launcher
// only when every shard is written, with summary.json beside them. It is
// wiring only: Build turns a resolved job.Job into the Beam graph, Execute
// runs it, and Run is job.Resolve, job.Open and Session.Full with Execute.
// Lake runs (an output table, --incremental) are package lake's, which
// receives Execute as a value (Executing) and so imports no Beam package.
package pipelines
