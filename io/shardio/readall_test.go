package shardio_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

const digitsShards = "../../testdata/digits/noisy-idn-0.4-part-*.parquet"

func TestReadAll(t *testing.T) {
	ctx := context.Background()
	shards, err := shardio.Scan(ctx, digitsShards, shardio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := shardio.ReadOptions{Classes: 10, D: shards[0].D}
	rows, err := shardio.ReadAll(ctx, shards, opts)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	// One batch per unit, in shard and unit order, each the unit ReadUnit reads.
	var units []shardio.Unit
	for _, s := range shards {
		units = append(units, s.Units...)
	}
	if len(rows) != len(units) || len(units) < 2 {
		t.Fatalf("ReadAll returned %d batches for %d units; want one per unit (and the test needs at least 2)", len(rows), len(units))
	}
	total := 0
	for i, u := range units {
		want, err := shardio.ReadUnit(ctx, u, opts)
		if err != nil {
			t.Fatal(err)
		}
		r := rows[i]
		if r.Shard != u.Path || r.Offset != u.Offset || r.Len() != want.Len() || r.IDs[0] != want.IDs[0] || r.IDs[r.Len()-1] != want.IDs[want.Len()-1] {
			t.Errorf("batch %d: %s offset %d, %d rows, ids %d..%d; want unit %s offset %d, %d rows, ids %d..%d", i,
				r.Shard, r.Offset, r.Len(), r.IDs[0], r.IDs[r.Len()-1], u.Path, u.Offset, want.Len(), want.IDs[0], want.IDs[want.Len()-1])
		}
		total += r.Len()
	}
	if total != 1797 {
		t.Errorf("ReadAll read %d rows, want the slice's 1797", total)
	}
}

func TestReadEachStops(t *testing.T) {
	ctx := context.Background()
	shards, err := shardio.Scan(ctx, digitsShards, shardio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := shardio.ReadOptions{Classes: 10, D: shards[0].D}

	stop := errors.New("enough")
	calls := 0
	err = shardio.ReadEach(ctx, shards, opts, func(*schemas.Rows) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("fn failing: ReadEach = %v after %d calls, want its error after 1", err, calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := shardio.ReadEach(cctx, shards, opts, func(*schemas.Rows) error { t.Error("fn called after cancel"); return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: ReadEach = %v, want context.Canceled", err)
	}

	// A reader error (labels outside a too small class set) comes back
	// whole, with no rows.
	rows, err := shardio.ReadAll(ctx, shards, shardio.ReadOptions{Classes: 2, D: shards[0].D})
	if err == nil || rows != nil || !strings.Contains(err.Error(), "label") {
		t.Errorf("2 classes: ReadAll = %d batches, %v; want no rows and the label error", len(rows), err)
	}
	// Every unit fails; the units are read in parallel, and the error is
	// the first one's in order, whichever finished first.
	if err != nil && !strings.Contains(err.Error(), shards[0].Path) {
		t.Errorf("2 classes: ReadAll = %v; want the first shard's error (%s)", err, shards[0].Path)
	}
}
