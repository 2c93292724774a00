package reportio

import "github.com/relabel/relabel/io/resultio"

// Truth gives a row's true class index by its id; ok is false when the truth
// does not know the id (the row is then left out of the truth's figures).
// It is a function, not a map, so that a dense truth (the .i32 format, one
// int32 per id) costs 4 bytes a row rather than a map entry. The truth is
// read by io/resultio (ReadTruth), the one truth reader.
type Truth func(id resultio.Key) (class int32, ok bool)
