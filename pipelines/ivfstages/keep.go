package ivfstages

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/pipelines/stages"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/ivf"
)

// Keeping the partitioning (Params.Keep).
//
// A table run with --incremental keeps the ivf partitioning its pipeline
// used, so that the incremental runs after it probe only their new rows
// (pipelines' kept state). Fitting it again in the launcher after the
// pipeline cost a second read of every row, a second k-means fit and a probe
// of every row against every centroid: about 11 s at 1M rows (issue 34). So
// the stages that already have it write it down: fitFn the model and the
// moments the rows were standardised with (one file), probeFn each input
// batch's keys and probes (one file per batch, named by shard and offset, so
// a retried bundle rewrites the same bytes). ReadKept gathers them.

// keptModelName is the model's file in Params.Keep.
const keptModelName = "model"

// keptBatchName is the file of the batch at (shard, offset) in Params.Keep.
func keptBatchName(shard string, offset int64) string {
	h := fnv.New64a()
	h.Write([]byte(shard))
	return fmt.Sprintf("probes-%016x-%012d", h.Sum64(), offset)
}

// Kept is a partitioning Neighbours kept.
type Kept struct {
	// Model is the fitted model, Rows the row count its defaults were
	// resolved for.
	Model ivf.Model
	Rows  int64
	// Mean and Std standardised the rows the model was fitted on and the
	// probes computed in; nil without standardisation.
	Mean, Std []float64
	// Keys are the rows' id keys; Probes their NProbe nearest partitions
	// each, nearest first. The rows are in (shard, offset) order of their
	// batches' file names: an order that does not depend on the runner.
	NProbe int
	Keys   []int64
	Probes []int32
}

func encodeKeptModel(m ivf.Model, st *stages.Stats, standardised bool) ([]byte, error) {
	var w wire.Writer
	w.Varint(st.N)
	w.Bool(standardised)
	if standardised {
		wire.Slice(&w, st.Mean)
		wire.Slice(&w, st.M2) // the standard deviation, after ExtractOutput
	}
	return m.AppendBinary(w.B)
}

func writeKept(ctx context.Context, dir, name string, b []byte) error {
	fs, err := blobio.For(dir)
	if err != nil {
		return err
	}
	if err := blobio.WriteFile(ctx, fs, blobio.Join(dir, name), b); err != nil {
		return fmt.Errorf("ivfstages: keeping the partitioning: %w", err)
	}
	return nil
}

// writeKeptProbes writes a probed batch's keys and probes.
func writeKeptProbes(ctx context.Context, dir string, r *schemas.Rows, np int, probe []int32) error {
	var w wire.Writer
	w.Uvarint(uint64(np))
	wire.Slice(&w, r.IDs)
	wire.Slice(&w, probe)
	return writeKept(ctx, dir, keptBatchName(r.Shard, r.Offset), w.B)
}

// ReadKept reads the partitioning Neighbours kept in dir (Params.Keep).
func ReadKept(ctx context.Context, dir string) (*Kept, error) {
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	b, err := blobio.ReadFile(ctx, fs, blobio.Join(dir, keptModelName))
	if err != nil {
		return nil, fmt.Errorf("ivfstages: the kept partitioning: %w", err)
	}
	r := wire.Reader{B: b}
	k := &Kept{Rows: r.Varint()}
	if r.Bool() {
		k.Mean = wire.ReadSlice[float64](&r)
		k.Std = wire.ReadSlice[float64](&r)
	}
	// A failed read leaves r.B empty: the model's decoding then fails.
	if err := k.Model.UnmarshalBinary(r.B); err != nil {
		return nil, fmt.Errorf("ivfstages: the kept model: %w", err)
	}
	names, err := fs.Glob(ctx, blobio.Join(dir, "probes-*"))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(blobio.Base(a), blobio.Base(b)) })
	for _, name := range names {
		b, err := blobio.ReadFile(ctx, fs, name)
		if err != nil {
			return nil, err
		}
		r := wire.Reader{B: b}
		np := int(r.Uvarint())
		keys := wire.ReadSlice[int64](&r)
		probes := wire.ReadSlice[int32](&r)
		switch {
		case r.Err() != nil:
			return nil, fmt.Errorf("ivfstages: %s: %w", name, r.Err())
		case k.NProbe != 0 && np != k.NProbe, len(probes) != len(keys)*np:
			return nil, fmt.Errorf("ivfstages: %s: %d keys, %d probes of %d (kept: %d)", name, len(keys), len(probes), np, k.NProbe)
		}
		k.NProbe = np
		k.Keys = append(k.Keys, keys...)
		k.Probes = append(k.Probes, probes...)
	}
	if int64(len(k.Keys)) != k.Rows {
		return nil, fmt.Errorf("ivfstages: the kept partitioning holds %d rows of %d", len(k.Keys), k.Rows)
	}
	return k, nil
}

// RemoveKept removes what Neighbours kept in dir, and dir.
func RemoveKept(ctx context.Context, dir string) {
	fs, err := blobio.For(dir)
	if err != nil {
		return
	}
	names, _ := fs.Glob(ctx, blobio.Join(dir, "probes-*"))
	for _, name := range append(names, blobio.Join(dir, keptModelName)) {
		fs.Remove(ctx, name)
	}
	fs.Remove(ctx, dir)
}
