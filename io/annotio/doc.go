// Package annotio reads long-format annotation shards, one row per
// annotation: the item's id (int64 or utf8), the annotator's id (int64 or
// utf8) and the label (int32 or int64), the way crowd platforms export them;
// and the `annotators` list column an item row may carry beside its `labels`
// list. Like io/shardio it reads Parquet (one unit of work per row group),
// Arrow IPC files (one per record batch) and Arrow IPC streams (one per
// file), only the columns it needs, and every data problem is an
// *InputError naming the file, the row within it and the column.
package annotio
