package schemas

// Key maps a string id to the int64 that Rows.IDs and Cleaned.IDs carry for
// it, so that every stage can hash, sort and seed by one integer whatever the
// id type. It is FNV-1a, 64 bits (the same value as hash/fnv's New64a, written
// out to avoid an allocation per id): stable across processes and Go
// versions, unlike hash/maphash. Two different strings may collide, with
// probability about n^2/2^65 for n ids, so uniqueness is checked on the
// strings themselves.
func Key(id string) int64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= prime64
	}
	return int64(h)
}
