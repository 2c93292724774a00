package reportio

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/relabel/relabel/io/blobio"
)

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
// int32 per id) costs 4 bytes a row rather than a map entry.
type Truth func(id Key) (class int32, ok bool)

// TruthByIndex is the truth of int64 ids 0..len(labels)-1: labels[id], as
// the .i32 format (relabel noise --truth-output, the dev data's truth.i32)
// stores it.
func TruthByIndex(labels []int32) Truth {
	return func(id Key) (int32, bool) {
		if id.IsStr || id.Int < 0 || id.Int >= int64(len(labels)) {
			return 0, false
		}
		return labels[id.Int], true
	}
}

// ReadI32 reads a .i32 truth file: raw little-endian int32, entry k the
// label of id k.
func ReadI32(ctx context.Context, path string) ([]int32, error) {
	fs, err := blobio.For(path)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("reportio: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(blobio.Section(f))
	if err != nil {
		return nil, fmt.Errorf("reportio: reading %s: %w", path, err)
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("reportio: %s: %d bytes, not a whole number of int32 labels", path, len(b))
	}
	x := make([]int32, len(b)/4)
	for i := range x {
		x[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x, nil
}
