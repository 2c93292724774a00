package shardio

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// TestMaxAbsForDistances: at the bound, the largest squared distance of
// d-dimensional vectors (every coordinate m against -m) is finite in
// float32; a little past it, it overflows.
func TestMaxAbsForDistances(t *testing.T) {
	for _, d := range []int{1, 2, 4, 64, 768, 4096} {
		m := MaxAbsForDistances(d)
		sq := func(m float32) float32 {
			var s float32
			for range d {
				diff := m - (-m)
				s += diff * diff
			}
			return s
		}
		if s := sq(m); math.IsInf(float64(s), 0) {
			t.Errorf("d=%d: bound %g gives squared distance %g", d, m, s)
		}
		if s := sq(m * 1.01); !math.IsInf(float64(s), 0) {
			t.Errorf("d=%d: 1.01 x bound %g still gives finite %g: bound too tight", d, m, s)
		}
	}
}

// TestMaxAbsFeatureOff: without MaxAbsFeature a finite 1e37 reads as it
// is, and within the bound it reads too: only the option rejects it.
func TestMaxAbsFeatureOff(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := synth(0, 20, 4, 10, schemas.IDInt64, false)
	r.Features[9*4+2] = 1e37
	r.Features[3*4+1] = MaxAbsForDistances(4)
	if err := WriteInput(ctx, blobio.Local{}, filepath.Join(dir, "a.arrow"), ArrowFile, []*schemas.Rows{r}, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
	_, rows, err := readAll(ctx, filepath.Join(dir, "a.arrow"), ReadOptions{Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := rows[0].Features[9*4+2]; got != 1e37 {
		t.Errorf("feature read as %g, want 1e37", got)
	}
	r.Features[9*4+2] = 1
	if err := WriteInput(ctx, blobio.Local{}, filepath.Join(dir, "a.arrow"), ArrowFile, []*schemas.Rows{r}, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readAll(ctx, filepath.Join(dir, "a.arrow"), ReadOptions{Classes: 10, MaxAbsFeature: MaxAbsForDistances(4)}); err != nil {
		t.Errorf("a feature at the bound: %v", err)
	}
}
