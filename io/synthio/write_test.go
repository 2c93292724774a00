package synthio

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/transforms/synth"
)

// TestWrite writes a small dataset twice with different shard layouts and
// reads it back: same rows, labels and truth file.
func TestWrite(t *testing.T) {
	ctx := context.Background()
	g, err := synth.New(synth.DefaultParams(1000, 5, 4, 0.2, 3))
	if err != nil {
		t.Fatal(err)
	}
	n := int64(1000)
	ids, x := make([]int64, n), make([]float32, n*5)
	truth, given := make([]int32, n), make([]int32, n)
	g.Rows(0, n, ids, x, truth, given)
	for _, o := range []Options{{Shards: 1, BatchRows: 300, Format: shardio.Parquet}, {Shards: 3, BatchRows: 128, Format: shardio.ArrowFile}} {
		dir := t.TempDir()
		paths, err := Write(ctx, dir, g, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != o.Shards {
			t.Fatalf("%+v: %d paths", o, len(paths))
		}
		shards, err := shardio.Scan(ctx, filepath.Join(dir, "part-*"), shardio.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []int64
		var gotX []float32
		var gotL []int32
		units := 0
		for _, s := range shards {
			for _, u := range s.Units {
				units++
				r, err := shardio.ReadUnit(ctx, u, shardio.ReadOptions{D: 5, Classes: 4})
				if err != nil {
					t.Fatal(err)
				}
				gotIDs = append(gotIDs, r.IDs...)
				gotX = append(gotX, r.Features...)
				gotL = append(gotL, r.Labels...)
			}
		}
		if !slices.Equal(gotIDs, ids) || !slices.Equal(gotX, x) || !slices.Equal(gotL, given) {
			t.Errorf("%+v: rows read back differ", o)
		}
		if want := (1000/o.Shards + o.BatchRows - 1) / o.BatchRows * o.Shards; units < want {
			t.Errorf("%+v: %d units, want at least %d", o, units, want)
		}
		got, err := resultio.ReadI32(ctx, filepath.Join(dir, "truth.i32"))
		if err != nil || !slices.Equal(got, truth) {
			t.Errorf("%+v: truth.i32 differs", o)
		}
	}
}

// TestOptions: every field but Workers is required; a zero is an error, not
// a default.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"zero", Options{}, "Shards"},
		{"no batch rows", Options{Shards: 1, Format: shardio.Parquet}, "BatchRows"},
		{"no format", Options{Shards: 1, BatchRows: 10}, "Format"},
		{"negative workers", Options{Shards: 1, BatchRows: 10, Format: shardio.Parquet, Workers: -1}, "Workers"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	if err := (Options{Shards: 2, BatchRows: 10, Format: shardio.ArrowFile}).Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}
