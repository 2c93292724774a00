package keptio

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"slices"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/transforms/ivf"
	"github.com/relabel/relabel/transforms/knn"
)

// IVF is a kept ivf partitioning: the k-means model (fitted for FitRows
// rows, with Seed and Metric), the standardisation the rows were probed in,
// and the rows' probes by id.
//
// An incremental run over a table that a full run would search with ivf
// searches in an ivf partitioning of all rows. Fitting it (k-means on a
// sample) and probing every row against its P = N/500 centroids is
// O(N P d): at 1M rows the one part of an incremental run that grows faster
// than the table. So a table run with --incremental keeps the partitioning
// its pipeline fitted and used, and each incremental run probes only its
// new rows against the kept model and keeps model and probes for the run
// after it.
type IVF struct {
	Seed   uint64
	Metric knn.Metric
	// NProbe is how many partitions each row is probed in.
	NProbe int
	// FitRows is the row count the model was fitted for.
	FitRows int64
	Model   *ivf.Model
	// Mean and Std standardised the rows the model was fitted on and the
	// probes computed in; nil when the run did not standardise.
	Mean, Std []float64
	// Keys are the rows' id keys, Probes their NProbe partitions each,
	// nearest first.
	Keys   []int64
	Probes []int32
}

// ivfMagic starts an ivf file; the version after it changes with the
// layout (2: the model in ivf's one encoding, transforms/ivf/codec.go).
const (
	ivfMagic   = "relabel ivf-state\n"
	IVFVersion = uint32(2)
)

// ivfHeader is the fixed part of the file, after the magic. The model's
// encoding (ModelBytes long) follows it, then the moments (when
// Standardised), the keys and the probes.
type ivfHeader struct {
	Version      uint32
	Metric       int32
	Seed         uint64
	NProbe       int32
	Standardised uint8
	_            [3]byte
	FitRows      int64
	Rows         int64
	ModelBytes   int64
}

// Encode is s as an ivf file.
func (s *IVF) Encode() []byte {
	var b bytes.Buffer
	// A model's encoding does not fail.
	model, _ := s.Model.AppendBinary(nil)
	b.WriteString(ivfMagic)
	h := ivfHeader{Version: IVFVersion, Seed: s.Seed, Metric: int32(s.Metric), NProbe: int32(s.NProbe), FitRows: s.FitRows,
		Rows: int64(len(s.Keys)), ModelBytes: int64(len(model))}
	if s.Mean != nil {
		h.Standardised = 1
	}
	// Writes to a bytes.Buffer do not fail.
	binary.Write(&b, binary.LittleEndian, &h)
	b.Write(model)
	if s.Mean != nil {
		binary.Write(&b, binary.LittleEndian, s.Mean)
		binary.Write(&b, binary.LittleEndian, s.Std)
	}
	binary.Write(&b, binary.LittleEndian, s.Keys)
	binary.Write(&b, binary.LittleEndian, s.Probes)
	return b.Bytes()
}

// ErrIVFVersion says an ivf file is of another layout version: the run
// refits instead of reading it.
type ErrIVFVersion struct{ Version uint32 }

func (e ErrIVFVersion) Error() string {
	return fmt.Sprintf("state format version %d, this relabel reads version %d", e.Version, IVFVersion)
}

// DecodeIVF decodes an ivf file, checking that its sizes agree and every
// probe names a partition of the model.
func DecodeIVF(b []byte) (*IVF, error) {
	if !bytes.HasPrefix(b, []byte(ivfMagic)) {
		return nil, fmt.Errorf("not an ivf state file (no %q header)", ivfMagic[:len(ivfMagic)-1])
	}
	r := bytes.NewReader(b[len(ivfMagic):])
	var h ivfHeader
	if err := binary.Read(r, binary.LittleEndian, &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if h.Version != IVFVersion {
		return nil, ErrIVFVersion{h.Version}
	}
	if h.ModelBytes < 0 || h.ModelBytes > int64(r.Len()) {
		return nil, fmt.Errorf("header: a model of %d bytes, %d bytes after the header", h.ModelBytes, r.Len())
	}
	mb := make([]byte, h.ModelBytes)
	r.Read(mb)
	model := &ivf.Model{}
	if err := model.UnmarshalBinary(mb); err != nil {
		return nil, err
	}
	p, d := int64(model.P()), int64(model.D)
	if p <= 0 || d <= 0 || h.NProbe <= 0 || int64(h.NProbe) > p || h.Rows < 0 {
		return nil, fmt.Errorf("header: %d partitions, d = %d, nprobe %d, %d rows", p, d, h.NProbe, h.Rows)
	}
	want := h.Rows * (8 + int64(h.NProbe)*4)
	if h.Standardised != 0 {
		want += 2 * d * 8
	}
	if int64(r.Len()) != want {
		return nil, fmt.Errorf("%d bytes after the header and model, want %d", r.Len(), want)
	}
	s := &IVF{Seed: h.Seed, Metric: knn.Metric(h.Metric), NProbe: int(h.NProbe), FitRows: h.FitRows, Model: model,
		Keys: make([]int64, h.Rows), Probes: make([]int32, h.Rows*int64(h.NProbe))}
	var parts []any
	if h.Standardised != 0 {
		s.Mean, s.Std = make([]float64, d), make([]float64, d)
		parts = append(parts, s.Mean, s.Std)
	}
	parts = append(parts, s.Keys, s.Probes)
	for _, part := range parts {
		if err := binary.Read(r, binary.LittleEndian, part); err != nil {
			return nil, err
		}
	}
	if r.Len() != 0 {
		return nil, io.ErrUnexpectedEOF // unreachable: the length was checked
	}
	for _, q := range s.Probes {
		if int64(q) < 0 || int64(q) >= p {
			return nil, fmt.Errorf("a probe of partition %d, of %d", q, p)
		}
	}
	return s, nil
}

// ReadIVF reads the ivf file at path.
func ReadIVF(ctx context.Context, path string) (*IVF, error) {
	return readFile(ctx, path, DecodeIVF)
}

// IVFFileName is the ivf file's name in a table run's directory.
const IVFFileName = "ivf.state"

// DirIVFFileName is the ivf file's name in an output directory, committed
// with the shards beside FitFileName.
const DirIVFFileName = "relabel-ivf.state"

// WriteIVF writes s as dir's ivf file and returns its path.
func WriteIVF(ctx context.Context, fs blobio.FS, dir string, s *IVF) (string, error) {
	return WriteIVFAs(ctx, fs, dir, IVFFileName, s)
}

// WriteIVFAs writes s as the file name in dir and returns its path.
func WriteIVFAs(ctx context.Context, fs blobio.FS, dir, name string, s *IVF) (string, error) {
	p := blobio.Join(dir, name)
	if err := blobio.WriteFile(ctx, fs, p, s.Encode()); err != nil {
		return "", fmt.Errorf("relabel: keeping the ivf partitioning: %w", err)
	}
	return p, nil
}

// In a keep directory the partitioning arrives in pieces, as the pipeline's
// ivf stages compute it: the fit writes the model (an ivf file of no rows,
// ivfModelName), and the probe each input batch's keys and probes (one
// file per batch, named by shard and offset, so that a retried bundle
// rewrites the same bytes). ReadIVFDir gathers them into one IVF.

// ivfModelName is the model's file in a keep directory.
const ivfModelName = "model"

// ivfBatchName is the file of the batch at (shard, offset) in a keep
// directory.
func ivfBatchName(shard string, offset int64) string {
	h := fnv.New64a()
	h.Write([]byte(shard))
	return fmt.Sprintf("probes-%016x-%012d", h.Sum64(), offset)
}

func writeIVFPart(ctx context.Context, dir, name string, b []byte) error {
	fs, err := blobio.For(dir)
	if err != nil {
		return err
	}
	if err := blobio.WriteFile(ctx, fs, blobio.Join(dir, name), b); err != nil {
		return fmt.Errorf("keptio: keeping the partitioning: %w", err)
	}
	return nil
}

// WriteIVFModel writes the model part of s (no rows) into the keep
// directory dir.
func WriteIVFModel(ctx context.Context, dir string, s *IVF) error {
	m := *s
	m.Keys, m.Probes = nil, nil
	return writeIVFPart(ctx, dir, ivfModelName, m.Encode())
}

// WriteIVFBatch writes the probes of the batch at (shard, offset), whose
// rows' id keys are keys, nprobe partitions each, into the keep directory
// dir.
func WriteIVFBatch(ctx context.Context, dir, shard string, offset int64, keys []int64, nprobe int, probes []int32) error {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [2]int64{int64(nprobe), int64(len(keys))})
	binary.Write(&b, binary.LittleEndian, keys)
	binary.Write(&b, binary.LittleEndian, probes)
	return writeIVFPart(ctx, dir, ivfBatchName(shard, offset), b.Bytes())
}

// KeepIVFDir writes the partitioning gathered from the keep directory kept
// (ReadIVFDir) as the file name in dir, for the incremental runs after a
// full one, and returns its path.
func KeepIVFDir(ctx context.Context, fs blobio.FS, kept, dir, name string) (string, error) {
	s, err := ReadIVFDir(ctx, kept)
	if err != nil {
		return "", fmt.Errorf("relabel: --incremental: %w", err)
	}
	return WriteIVFAs(ctx, fs, dir, name, s)
}

// ReadIVFDir gathers the partitioning kept in the keep directory dir
// (WriteIVFModel, WriteIVFBatch): the rows in the order of their batches'
// file names, which does not depend on the runner. Every row the model was
// fitted for must be there.
func ReadIVFDir(ctx context.Context, dir string) (*IVF, error) {
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	b, err := blobio.ReadFile(ctx, fs, blobio.Join(dir, ivfModelName))
	if err != nil {
		return nil, fmt.Errorf("keptio: the kept partitioning: %w", err)
	}
	k, err := DecodeIVF(b)
	if err != nil {
		return nil, fmt.Errorf("keptio: the kept model: %w", err)
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
		r := bytes.NewReader(b)
		var h [2]int64
		if err := binary.Read(r, binary.LittleEndian, &h); err != nil {
			return nil, fmt.Errorf("keptio: %s: %w", name, err)
		}
		np, n := h[0], h[1]
		if np != int64(k.NProbe) || n < 0 || int64(r.Len()) != n*(8+4*np) {
			return nil, fmt.Errorf("keptio: %s: %d keys of %d probes in %d bytes (kept: %d probes)", name, n, np, r.Len(), k.NProbe)
		}
		keys, probes := make([]int64, n), make([]int32, n*np)
		binary.Read(r, binary.LittleEndian, keys)
		binary.Read(r, binary.LittleEndian, probes)
		k.Keys = append(k.Keys, keys...)
		k.Probes = append(k.Probes, probes...)
	}
	if int64(len(k.Keys)) != k.FitRows {
		return nil, fmt.Errorf("keptio: the kept partitioning holds %d rows of %d", len(k.Keys), k.FitRows)
	}
	return k, nil
}

// RemoveIVFDir removes what the stages kept in dir, and dir.
func RemoveIVFDir(ctx context.Context, dir string) {
	fs, err := blobio.For(dir)
	if err != nil {
		return
	}
	names, _ := fs.Glob(ctx, blobio.Join(dir, "probes-*"))
	for _, name := range append(names, blobio.Join(dir, ivfModelName)) {
		fs.Remove(ctx, name)
	}
	fs.Remove(ctx, dir)
}
