// Package pipelines wires relabel's stages into one Beam pipeline: read shards
// -> global stats (standardisation, candidate set, duplicate ids) -> candidate
// set -> batched kNN + LLC -> R rounds of sample + EM -> one output file per
// input shard, written to a temporary directory and committed by the launcher
// only when every shard is written, with summary.json beside them. It is
// wiring only: Run is MakePlan, Open (the output's lock: a Session) and
// Session.Full. Lake runs (an output table, --incremental) are package
// pipelines/lake's, which plans its own runs and uses the same steps
// (PlanTable, Execute, a Session's Temp, Summarise, Publish and Resume).
package pipelines
