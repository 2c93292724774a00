// Package shardio reads relabel's input shards (Parquet, Arrow IPC file, Arrow
// IPC stream) into schemas.Rows and writes its output shards from
// schemas.Cleaned. Scan expands a glob and checks every shard's schema against
// the data contract before anything runs, then cuts the shards into units of
// work (a Parquet row group, an Arrow record batch) that ReadUnit reads
// independently, through ranged reads of a blobio.File, so that a pipeline
// reads them in parallel and never holds a whole file. Every data problem is
// an *InputError naming the file, the row within the shard and the column.
package shardio
