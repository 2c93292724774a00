// Package pipelines wires relabel's stages into one Beam pipeline: read shards
// -> global stats (standardisation, candidate set, duplicate ids) -> candidate
// set -> batched kNN + LLC -> R rounds of sample + EM -> one output file per
// input shard, written to a temporary directory and committed by the launcher
// only when every shard is written, with summary.json beside them.
package pipelines
