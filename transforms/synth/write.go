package synth

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
)

// WriteOptions says how Write lays a dataset out.
type WriteOptions struct {
	// Shards is the number of files (part-00000 ...). Optional, default 1.
	Shards int
	// BatchRows is the rows per Parquet row group / Arrow record batch: the
	// pipeline's unit of work. Optional, default 16384.
	BatchRows int
	// Format of the shards. Optional, default Parquet.
	Format shardio.Format
	// Workers bounds the shards generated at once. Optional, default GOMAXPROCS.
	Workers int
}

// Write generates g's rows into dir as input shards (id int64, features,
// label = the given label; contiguous id ranges, shard s holding rows
// [s*Rows/Shards, (s+1)*Rows/Shards)) plus truth.i32, the true classes as raw
// little-endian int32 in id order (the dev data's layout, data/README.md). It
// returns the shard paths. The files depend only on g's parameters and o.
func Write(ctx context.Context, dir string, g *Generator, o WriteOptions) ([]string, error) {
	if o.Shards <= 0 {
		o.Shards = 1
	}
	if o.BatchRows <= 0 {
		o.BatchRows = 16384
	}
	if o.Format == 0 {
		o.Format = shardio.Parquet
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	p := g.Params()
	if int64(o.Shards) > p.Rows {
		return nil, fmt.Errorf("synth: %d shards for %d rows", o.Shards, p.Rows)
	}
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	if err := fs.MkdirAll(ctx, dir); err != nil {
		return nil, fmt.Errorf("synth: creating %s: %w", dir, err)
	}
	truth := make([]int32, p.Rows)
	paths := make([]string, o.Shards)
	errs := make([]error, o.Shards)
	sem := make(chan struct{}, o.Workers)
	var wg sync.WaitGroup
	for s := range o.Shards {
		lo, hi := int64(s)*p.Rows/int64(o.Shards), int64(s+1)*p.Rows/int64(o.Shards)
		paths[s] = blobio.Join(dir, fmt.Sprintf("part-%05d%s", s, o.Format.Ext()))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[s] = writeShard(ctx, fs, paths[s], g, lo, hi, o, truth[lo:hi])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	w, err := fs.Create(ctx, blobio.Join(dir, "truth.i32"))
	if err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	b, _ := binary.Append(nil, binary.LittleEndian, truth)
	if _, err := w.Write(b); err != nil {
		w.Close()
		return nil, fmt.Errorf("synth: writing truth.i32: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("synth: writing truth.i32: %w", err)
	}
	return paths, nil
}

func writeShard(ctx context.Context, fs blobio.FS, path string, g *Generator, lo, hi int64, o WriteOptions, truth []int32) error {
	d := g.Params().D
	var batches []*schemas.Rows
	for b := lo; b < hi; b += int64(o.BatchRows) {
		e := min(b+int64(o.BatchRows), hi)
		n := int(e - b)
		r := &schemas.Rows{
			Shard: path, Offset: b - lo, IDs: make([]int64, n), D: d, Features: make([]float32, n*d),
			Labels: make([]int32, n), LabelOff: make([]int32, n+1),
		}
		for i := range r.LabelOff {
			r.LabelOff[i] = int32(i)
		}
		g.Rows(b, e, r.IDs, r.Features, truth[b-lo:e-lo], r.Labels)
		batches = append(batches, r)
	}
	return shardio.WriteInput(ctx, fs, path, o.Format, batches, schemas.LabelInt32, nil, nil)
}
