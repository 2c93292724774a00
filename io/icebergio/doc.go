// Package icebergio is relabel's Apache Iceberg I/O, for the scheduled data
// lake job: it opens a catalog from a URI (a local SQL catalog on SQLite, so a
// lake on one machine needs no server, or a REST catalog), plans an input
// table's current snapshot, or only the files appended since a snapshot, into
// per-file tasks that the existing shard readers read in parallel, and commits
// a run's output to an output table as exactly one snapshot whose summary
// records what the run covered (input table and snapshot, relabel version,
// options, seed), so that the next --incremental run knows where to start.
// Commits are fenced on the output snapshot the run started from: a
// concurrent run makes the later commit fail with ErrConcurrentRun, never
// mixes two runs' rows.
//
// It wraps github.com/apache/iceberg-go, which plans scans, applies row-level
// deletes and schema evolution when it reads (its Arrow scanner, used here for
// the data files that need it), writes Parquet data files and manifests, and
// commits optimistically; this package adds only relabel's contract on top
// (files in an order that depends on their contents, append-only history
// checked for incremental plans, run properties recorded, orphans of killed
// runs removed).
package icebergio
