package keptio

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

func testState(standardised bool) *IVF {
	s := &IVF{Seed: 7, Metric: knn.L2, NProbe: 2, FitRows: 5,
		Model: &ivf.Model{D: 2, Centroids: []float32{0, 0, 1, 1, 2, 2}, Blocks: []int32{1, 2, 1}, Seed: 9, Metric: knn.L2},
		Keys:  []int64{10, 11, 12, 13, 14}, Probes: []int32{0, 1, 1, 2, 2, 1, 0, 2, 1, 0}}
	if standardised {
		s.Mean, s.Std = []float64{0.5, -1}, []float64{2, 3}
	}
	return s
}

// TestIVFFile: a kept state reads back as written; a file of another
// format version, a truncated one and one probing a partition the model has
// not are refused (the run then partitions again).
func TestIVFFile(t *testing.T) {
	for _, std := range []bool{false, true} {
		s := testState(std)
		got, err := DecodeIVF(s.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if got.Seed != s.Seed || got.NProbe != s.NProbe || got.FitRows != s.FitRows || got.Model.D != 2 || got.Model.Seed != 9 ||
			!slices.Equal(got.Model.Centroids, s.Model.Centroids) || !slices.Equal(got.Model.Blocks, s.Model.Blocks) ||
			!slices.Equal(got.Keys, s.Keys) || !slices.Equal(got.Probes, s.Probes) || !slices.Equal(got.Mean, s.Mean) || !slices.Equal(got.Std, s.Std) {
			t.Errorf("standardised %t: read back %+v, wrote %+v", std, got, s)
		}
	}
	b := testState(true).Encode()
	v2 := slices.Clone(b)
	binary.LittleEndian.PutUint32(v2[len(ivfMagic):], IVFVersion+1)
	if _, err := DecodeIVF(v2); !errors.As(err, new(ErrIVFVersion)) {
		t.Errorf("version %d: %v, want ErrIVFVersion", IVFVersion+1, err)
	}
	if _, err := DecodeIVF(b[:len(b)-3]); err == nil || !strings.Contains(err.Error(), "bytes after the header and model") {
		t.Errorf("truncated: %v", err)
	}
	if _, err := DecodeIVF([]byte("PAR1 not a state")); err == nil || !strings.Contains(err.Error(), "not an ivf state") {
		t.Errorf("another file: %v", err)
	}
	bad := testState(false)
	bad.Probes[3] = 3
	if _, err := DecodeIVF(bad.Encode()); err == nil || !strings.Contains(err.Error(), "partition 3") {
		t.Errorf("probe out of range: %v", err)
	}
}
