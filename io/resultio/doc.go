// Package resultio reads what relabel run writes, and the true labels it is
// scored against, into plain Go slices: the tools that evaluate a run
// (relabel eval, relabel noise's truth, the quality harness, tests) need no
// Arrow or Parquet of their own. ReadOutput reads an output directory's
// shards (Arrow IPC files or Parquet), ReadTruth a truth file (a Parquet or
// Arrow file with id and label columns, or .i32), and the .i32 codec
// (ReadI32, WriteI32, DecodeI32, AppendI32) is the one place that knows the
// dev data's raw little-endian int32 label format. The input shards relabel
// reads are io/shardio's concern.
package resultio
