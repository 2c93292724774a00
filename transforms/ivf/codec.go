package ivf

import (
	"fmt"

	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/knn"
)

// The one encoding of a Model: the Beam coder of ivfstages' model side
// input and the partitioning kept for the lake (io/keptio.IVF) both write
// it, so a model reads back the same wherever it went.

// AppendBinary appends m's encoding to b (encoding.BinaryAppender).
func (m *Model) AppendBinary(b []byte) ([]byte, error) {
	w := wire.Writer{B: b}
	w.Uvarint(uint64(m.D))
	wire.Slice(&w, m.Centroids)
	wire.Slice(&w, m.Blocks)
	w.Uvarint(m.Seed)
	w.Byte(byte(m.Metric))
	return w.B, nil
}

// UnmarshalBinary decodes a Model that AppendBinary encoded: the whole of b,
// checked for shape (P x D centroids, one block count of at least 1 per
// partition).
func (m *Model) UnmarshalBinary(b []byte) error {
	r := wire.Reader{B: b}
	var got Model
	got.D = int(r.Uvarint())
	got.Centroids = wire.ReadSlice[float32](&r)
	got.Blocks = wire.ReadSlice[int32](&r)
	got.Seed = r.Uvarint()
	got.Metric = knn.Metric(r.Byte())
	if err := r.Err(); err != nil {
		return fmt.Errorf("ivf: decoding a model: %w", err)
	}
	if got.D < 0 || len(got.Centroids) != got.P()*got.D {
		return fmt.Errorf("ivf: decoding a model: %d centroid values for %d partitions of d = %d", len(got.Centroids), got.P(), got.D)
	}
	*m = got
	return nil
}
