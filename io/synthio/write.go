// Package synthio writes a synthetic dataset (transforms/synth) as relabel
// input shards and its true classes as truth.i32: the files of relabel synth
// and the scale runs. The generator itself touches no file.
package synthio

import (
	"context"
	"errors"
	"fmt"
	"github.com/relabel/relabel/internal/pool"
	"os"
	"runtime"
	"strings"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/synth"
)

// Options says how Write lays a dataset out. Every field is required but
// Workers (relabel synth's flags hold the defaults).
type Options struct {
	// Shards is the number of files (part-00000 ...), >= 1.
	Shards int
	// BatchRows is the rows per Parquet row group / Arrow record batch: the
	// pipeline's unit of work, >= 1.
	BatchRows int
	// Format of the shards.
	Format shardio.Format
	// Workers bounds the shards generated at once. Optional, 0: GOMAXPROCS.
	Workers int
	// Overwrite lets Write replace existing shards and truth.i32 in the
	// directory. Optional, default false: an existing one is an error and
	// nothing is written.
	Overwrite bool
}

// Validate checks o.
func (o Options) Validate() error {
	var errs []error
	if o.Shards < 1 {
		errs = append(errs, fmt.Errorf("synthio: Shards = %d, want >= 1", o.Shards))
	}
	if o.BatchRows < 1 {
		errs = append(errs, fmt.Errorf("synthio: BatchRows = %d, want >= 1", o.BatchRows))
	}
	if o.Format != shardio.Parquet && o.Format != shardio.ArrowFile && o.Format != shardio.ArrowStream {
		errs = append(errs, fmt.Errorf("synthio: Format %v unknown", o.Format))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("synthio: Workers = %d, want >= 0 (0: GOMAXPROCS)", o.Workers))
	}
	return errors.Join(errs...)
}

// Write generates g's rows into dir as input shards (id int64, features,
// label = the given label; contiguous id ranges, shard s holding rows
// [s*Rows/Shards, (s+1)*Rows/Shards)) plus truth.i32, the true classes as raw
// little-endian int32 in id order (the dev data's layout, data/README.md;
// resultio.WriteI32). It returns the shard paths. The files depend only on
// g's parameters and o.
func Write(ctx context.Context, dir string, g *synth.Generator, o Options) ([]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	workers := o.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := g.Params()
	if int64(o.Shards) > p.Rows {
		return nil, fmt.Errorf("synthio: %d shards for %d rows", o.Shards, p.Rows)
	}
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	paths := make([]string, o.Shards)
	for s := range paths {
		paths[s] = blobio.Join(dir, fmt.Sprintf("part-%05d%s", s, o.Format.Ext()))
	}
	truthPath := blobio.Join(dir, "truth.i32")
	all := append(paths[:len(paths):len(paths)], truthPath)
	existed := map[string]bool{}
	for _, path := range all {
		ok, err := fs.Exists(ctx, path)
		switch {
		case err != nil:
			return nil, fmt.Errorf("synthio: %w", err)
		case ok && !o.Overwrite:
			return nil, fmt.Errorf("synthio: %s exists (pass --overwrite to replace it)", path)
		}
		existed[path] = ok
	}
	dirExisted, err := fs.Exists(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("synthio: %w", err)
	}
	if err := fs.MkdirAll(ctx, dir); err != nil {
		return nil, fmt.Errorf("synthio: creating %s: %w", dir, err)
	}
	// A failed or cancelled write removes the files it wrote, and the
	// directory when it made it: nothing half-made is left.
	done := false
	defer func() {
		if done {
			return
		}
		bg := context.WithoutCancel(ctx)
		for _, path := range all {
			if !existed[path] {
				fs.Remove(bg, path)
			}
		}
		if !dirExisted && !strings.Contains(dir, "://") {
			os.Remove(dir) // only when empty
		}
	}()
	truth := make([]int32, p.Rows)
	// Every shard is written; the lowest failing shard's error is returned.
	if err := pool.EachIndexErr(o.Shards, workers, func(s int) error {
		lo, hi := int64(s)*p.Rows/int64(o.Shards), int64(s+1)*p.Rows/int64(o.Shards)
		return writeShard(ctx, fs, paths[s], g, lo, hi, o, truth[lo:hi])
	}); err != nil {
		return nil, err
	}
	if err := resultio.WriteI32(ctx, truthPath, truth); err != nil {
		return nil, fmt.Errorf("synthio: %w", err)
	}
	done = true
	return paths, nil
}

func writeShard(ctx context.Context, fs blobio.FS, path string, g *synth.Generator, lo, hi int64, o Options, truth []int32) error {
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
