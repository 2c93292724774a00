package reportio

import "strconv"

// Key is a row id: an int64 or (IsStr) a string.
type Key struct {
	Int   int64
	Str   string
	IsStr bool
}

func (k Key) String() string {
	if k.IsStr {
		return strconv.Quote(k.Str)
	}
	return strconv.FormatInt(k.Int, 10)
}

// Truth gives a row's true class index by its id; ok is false when the truth
// does not know the id (the row is then left out of the truth's figures).
// It is a function, not a map, so that a dense truth (the .i32 format, one
// int32 per id) costs 4 bytes a row rather than a map entry. The truth is
// read by io/resultio (ReadTruth, ReadI32), the one truth reader.
type Truth func(id Key) (class int32, ok bool)
