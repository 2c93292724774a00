package shardio

import (
	"context"

	"github.com/relabel/relabel/internal/pool"
	"github.com/relabel/relabel/schemas"
)

// ReadEach reads every unit of shards with ReadUnit, shard by shard and unit
// by unit in order, and hands each batch of rows to fn. It stops at the first
// error, from the reader or from fn, and returns it. It is the loop of the
// tools that read a dataset whole (noise, eval, the quality harness); the
// pipeline reads units in parallel instead, one per element.
func ReadEach(ctx context.Context, shards []Shard, opts ReadOptions, fn func(*schemas.Rows) error) error {
	for _, s := range shards {
		for _, u := range s.Units {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := ReadUnit(ctx, u, opts)
			if err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadAll reads every unit of shards and returns their rows, one batch per
// unit, in order: the units are read on GOMAXPROCS goroutines (a lake's
// incremental run reads every shard of its input, often hundreds of small
// files, whose footers and decoding dominate a small update), and the error
// returned, if any, is the first unit's in order, as ReadEach's would be.
func ReadAll(ctx context.Context, shards []Shard, opts ReadOptions) ([]*schemas.Rows, error) {
	var units []Unit
	for _, s := range shards {
		units = append(units, s.Units...)
	}
	rows := make([]*schemas.Rows, len(units))
	err := pool.EachIndexErr(len(units), 0, func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := ReadUnit(ctx, units[i], opts)
		rows[i] = r
		return err
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}
