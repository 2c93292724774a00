// Package resultio owns relabel's output file contract: what relabel run
// writes and what the tools that read it back (relabel eval and report, the
// lake's incremental runs, the quality harness, tests) rely on. File and
// Scan stream an output, truth or annotators file one unit at a time
// through io/shardio's guarded readers (shardio alone knows the formats'
// magic bytes and decodes labels: ClassMap); ReadOutput, ReadPosteriors and
// ReadTruth read them whole into plain Go slices, so their callers need no
// Arrow or Parquet of their own. OutputName names an input shard's output,
// WriteShard writes it with its ShardReport (Report) beside it, and the .i32
// codec (ReadI32, WriteI32, DecodeI32, AppendI32) is the one place that
// knows the dev data's raw little-endian int32 label format. The input
// shards relabel reads are io/shardio's concern.
package resultio
