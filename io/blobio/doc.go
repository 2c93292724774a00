// Package blobio is the small filesystem abstraction relabel reads shards from
// and writes outputs to: the local disk (Local) and, through Register, object
// stores such as gs:// (Cloud Storage). Parquet needs ranged reads (footer
// first, then only the needed row groups), so files open as io.ReaderAt rather
// than as streams, unlike Beam's filesystem package.
package blobio
