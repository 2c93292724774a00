package resultio

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/relabel/relabel/io/blobio"
)

// The .i32 format is a bare array of little-endian int32 labels, entry k the
// label of item k: the dev data's truth.i32 and noisy-*.i32 (data README),
// relabel noise --truth-output, relabel synth's truth.i32. It has no header,
// so a reader knows only its length; the caller checks it against the rows.

// AppendI32 appends labels to dst in the .i32 layout.
func AppendI32(dst []byte, labels []int32) []byte {
	for _, v := range labels {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
	}
	return dst
}

// DecodeI32 decodes a whole .i32 file's bytes.
func DecodeI32(b []byte) ([]int32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%d bytes, not a whole number of int32 labels", len(b))
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// ReadI32 reads the .i32 file path (local or any blobio path).
func ReadI32(ctx context.Context, path string) ([]int32, error) {
	fsys, err := blobio.For(path)
	if err != nil {
		return nil, fmt.Errorf("resultio: %w", err)
	}
	b, err := blobio.ReadFile(ctx, fsys, path)
	if err != nil {
		return nil, fmt.Errorf("resultio: %w", err)
	}
	v, err := DecodeI32(b)
	if err != nil {
		return nil, fmt.Errorf("resultio: %s: %w", path, err)
	}
	return v, nil
}

// WriteI32 writes labels as the .i32 file path (local or any blobio path),
// replacing it.
func WriteI32(ctx context.Context, path string, labels []int32) error {
	fsys, err := blobio.For(path)
	if err != nil {
		return fmt.Errorf("resultio: %w", err)
	}
	if err := blobio.WriteFile(ctx, fsys, path, AppendI32(make([]byte, 0, 4*len(labels)), labels)); err != nil {
		return fmt.Errorf("resultio: %w", err)
	}
	return nil
}

// WriteTruthI32 writes the true labels of rows with the given int64 ids as
// the .i32 file path, entry k the label of id k. Since .i32 is indexed by id,
// the ids must be 0..n-1, each once, in any order.
func WriteTruthI32(ctx context.Context, path string, ids []int64, labels []int32) error {
	if len(ids) != len(labels) {
		panic(fmt.Sprintf("resultio: %d ids, %d labels", len(ids), len(labels)))
	}
	n := len(ids)
	t := make([]int32, n)
	set := make([]bool, n)
	for i, id := range ids {
		if id < 0 || id >= int64(n) || set[id] {
			return fmt.Errorf("resultio: %s: .i32 truth needs the ids to be 0..%d, each once; id %d is not; write .parquet or .arrow", path, n-1, id)
		}
		t[id], set[id] = labels[i], true
	}
	return WriteI32(ctx, path, t)
}
