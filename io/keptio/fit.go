package keptio

import (
	"bytes"
	"context"
	"fmt"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// Names of the fits' files in a keep directory.
const (
	headName   = "head"
	pooledName = "pooled"
	givenName  = "given"
)

// Fit is what the rounds of a run kept.
type Fit struct {
	// Head is the linear head's fit after the last round; nil where the run
	// had no head.
	Head *head.Fit
	// Pooled is the pooled start's outcome (the transition only); nil
	// where the run fitted none.
	Pooled *Pooled
	// Given is the given-label model's fit (the neighbours' temperature
	// and the label transition); nil where the run read the given labels
	// as votes.
	Given *mixture.GivenFit
}

// Pooled is the outcome of the pooled start's fit: whether its gate took
// the start (Open), how many items it fitted and the structure it found,
// and the fitted model (C, T, TOwn, Prior: mixture.Pooled; empty where
// nothing was fitted).
type Pooled struct {
	Open      bool
	Fitted    int
	Structure float64
	C         int
	T, TOwn   []float64
	Prior     []float64
}

// AppendPooled writes p to w: the leading part of the pipeline's pooled
// model coder (which appends its candidates' labels), so that one layout
// serves both.
func AppendPooled(w *wire.Writer, p Pooled) {
	w.Bool(p.Open)
	w.Uvarint(uint64(p.Fitted))
	wire.Slice(w, []float64{p.Structure})
	w.Uvarint(uint64(p.C))
	wire.Slice(w, p.T)
	wire.Slice(w, p.TOwn)
	wire.Slice(w, p.Prior)
}

// ReadPooled reads what AppendPooled wrote; r's error says whether it could.
func ReadPooled(r *wire.Reader) Pooled {
	p := Pooled{Open: r.Bool(), Fitted: int(r.Uvarint())}
	if s := wire.ReadSlice[float64](r); len(s) == 1 {
		p.Structure = s[0]
	}
	p.C = int(r.Uvarint())
	p.T = wire.ReadSlice[float64](r)
	p.TOwn = wire.ReadSlice[float64](r)
	p.Prior = wire.ReadSlice[float64](r)
	return p
}

// encodePooled is a kept pooled model's file: AppendPooled, then no
// candidates' labels (the pipeline's coder's layout, transition only).
func encodePooled(p Pooled) []byte {
	var w wire.Writer
	AppendPooled(&w, p)
	wire.Slice(&w, []int32(nil))
	wire.Slice(&w, []int32(nil))
	return w.B
}

func decodePooled(b []byte) (Pooled, error) {
	r := wire.Reader{B: b}
	p := ReadPooled(&r)
	wire.ReadSlice[int32](&r)
	wire.ReadSlice[int32](&r)
	return p, r.Err()
}

// Model is the pooled outcome as mixture's.
func (p *Pooled) Model() *mixture.Pooled {
	m := &mixture.Pooled{C: p.C, T: p.T, TOwn: p.TOwn, Prior: p.Prior}
	if len(m.TOwn) == 0 {
		m.TOwn = nil
	}
	return m
}

func encodeGiven(f *mixture.GivenFit) []byte {
	var w wire.Writer
	w.Uvarint(uint64(f.C))
	w.Float64(f.T)
	wire.Slice(&w, f.A)
	w.Float64(f.LogLik)
	w.Uvarint(uint64(f.Items))
	wire.Slice(&w, f.Mass)
	w.Float64(f.Power)
	return w.B
}

func decodeGiven(b []byte) (*mixture.GivenFit, error) {
	r := wire.Reader{B: b}
	f := &mixture.GivenFit{C: int(r.Uvarint()), T: r.Float64(), A: wire.ReadSlice[float64](&r), LogLik: r.Float64(), Items: int(r.Uvarint()), Mass: wire.ReadSlice[float64](&r)}
	if len(r.B) > 0 { // kept before the evidence's power was chosen: none (1)
		f.Power = r.Float64()
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if f.C < 2 || len(f.A) != f.C*f.C || len(f.Mass) != f.C || !(f.T > 0) || !(f.Power == 0 || f.Power >= 1) {
		return nil, fmt.Errorf("%d transition values and %d masses for %d classes at temperature %v, evidence power %v", len(f.A), len(f.Mass), f.C, f.T, f.Power)
	}
	return f, nil
}

// write writes b as dir's file name.
func write(ctx context.Context, dir, name string, b []byte) error {
	fs, err := blobio.For(dir)
	if err != nil {
		return err
	}
	if err := blobio.WriteFile(ctx, fs, blobio.Join(dir, name), b); err != nil {
		return fmt.Errorf("keptio: keeping the %s fit: %w", name, err)
	}
	return nil
}

// WriteHead writes the head's fit after the last round into the keep
// directory dir, for ReadFitDir.
func WriteHead(ctx context.Context, dir string, f *head.Fit) error {
	b, err := f.AppendBinary(nil)
	if err != nil {
		return err
	}
	return write(ctx, dir, headName, b)
}

// WriteGiven writes the given-label model's fit into dir, for ReadFitDir.
func WriteGiven(ctx context.Context, dir string, f *mixture.GivenFit) error {
	return write(ctx, dir, givenName, encodeGiven(f))
}

// WritePooled writes the pooled fit's outcome into dir, for ReadFitDir.
func WritePooled(ctx context.Context, dir string, p Pooled) error {
	return write(ctx, dir, pooledName, encodePooled(p))
}

// ReadFitDir reads what a run's stages kept in dir (WriteHead, WriteGiven,
// WritePooled): a missing file is a fit the run did not have.
func ReadFitDir(ctx context.Context, dir string) (*Fit, error) {
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	read := func(name string) ([]byte, error) {
		p := blobio.Join(dir, name)
		if ok, err := fs.Exists(ctx, p); err != nil || !ok {
			return nil, err
		}
		return blobio.ReadFile(ctx, fs, p)
	}
	k := &Fit{}
	if b, err := read(headName); err != nil {
		return nil, fmt.Errorf("keptio: the kept head: %w", err)
	} else if b != nil {
		k.Head = &head.Fit{}
		if err := k.Head.UnmarshalBinary(b); err != nil {
			return nil, fmt.Errorf("keptio: the kept head: %w", err)
		}
	}
	if b, err := read(pooledName); err != nil {
		return nil, fmt.Errorf("keptio: the kept pooled fit: %w", err)
	} else if b != nil {
		m, err := decodePooled(b)
		if err != nil {
			return nil, fmt.Errorf("keptio: the kept pooled fit: %w", err)
		}
		k.Pooled = &m
	}
	if b, err := read(givenName); err != nil {
		return nil, fmt.Errorf("keptio: the kept given-label fit: %w", err)
	} else if b != nil {
		if k.Given, err = decodeGiven(b); err != nil {
			return nil, fmt.Errorf("keptio: the kept given-label fit: %w", err)
		}
	}
	return k, nil
}

// RemoveFitDir removes what the stages kept in dir, and dir.
func RemoveFitDir(ctx context.Context, dir string) {
	fs, err := blobio.For(dir)
	if err != nil {
		return
	}
	for _, name := range []string{headName, pooledName, givenName} {
		fs.Remove(ctx, blobio.Join(dir, name))
	}
	fs.Remove(ctx, dir)
}

// Transition is the kept pooled model as mixture's (nil where the gate
// kept the paper's start: nothing to start from).
func (k *Fit) Transition() *mixture.Pooled {
	if k == nil || k.Pooled == nil || !k.Pooled.Open {
		return nil
	}
	return k.Pooled.Model()
}

// AppendBinary appends k's encoding to b (encoding.BinaryAppender): the
// head's fit, the pooled model and the given-label fit, each behind a flag
// saying it is there.
func (k *Fit) AppendBinary(b []byte) ([]byte, error) {
	w := wire.Writer{B: b}
	w.Bool(k.Head != nil)
	if k.Head != nil {
		hb, err := k.Head.AppendBinary(nil)
		if err != nil {
			return nil, err
		}
		w.String(string(hb))
	}
	w.Bool(k.Pooled != nil)
	if k.Pooled != nil {
		w.String(string(encodePooled(*k.Pooled)))
	}
	w.Bool(k.Given != nil)
	if k.Given != nil {
		w.String(string(encodeGiven(k.Given)))
	}
	return w.B, nil
}

// UnmarshalBinary decodes a Fit that AppendBinary encoded (the whole of
// b).
func (k *Fit) UnmarshalBinary(b []byte) error {
	r := wire.Reader{B: b}
	var got Fit
	var hb, pb, gb []byte
	hasHead := r.Bool()
	if hasHead {
		hb = []byte(r.String())
	}
	hasPooled := r.Bool()
	if hasPooled {
		pb = []byte(r.String())
	}
	hasGiven := r.Bool()
	if hasGiven {
		gb = []byte(r.String())
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("keptio: decoding kept fits: %w", err)
	}
	if hasHead {
		got.Head = &head.Fit{}
		if err := got.Head.UnmarshalBinary(hb); err != nil {
			return err
		}
	}
	if hasPooled {
		m, err := decodePooled(pb)
		if err != nil {
			return fmt.Errorf("keptio: decoding the kept pooled fit: %w", err)
		}
		if m.Open && (m.C < 2 || len(m.T) != m.C*m.C || len(m.Prior) != m.C) {
			return fmt.Errorf("keptio: decoding the kept pooled fit: %d transition values and a prior of %d for %d classes", len(m.T), len(m.Prior), m.C)
		}
		got.Pooled = &m
	}
	if hasGiven {
		f, err := decodeGiven(gb)
		if err != nil {
			return fmt.Errorf("keptio: decoding the kept given-label fit: %w", err)
		}
		got.Given = f
	}
	*k = got
	return nil
}

// FitFileName is the file an output keeps its fits in: in an output
// directory, committed with the shards; in a table's run directory, named
// in its snapshot. Not a dot file: an output's .relabel names are a run's
// passing files (its lock, journal and temporary directory), this one
// stays.
const FitFileName = "relabel-fit.state"

// fitMagic starts a fit file; the version after it changes with the layout.
const (
	fitMagic   = "relabel fit-state\n"
	fitVersion = byte(2)
)

// EncodeFitFile is k as a fit file.
func EncodeFitFile(k *Fit) ([]byte, error) {
	b := append([]byte(fitMagic), fitVersion)
	return k.AppendBinary(b)
}

// DecodeFitFile decodes a fit file.
func DecodeFitFile(b []byte) (*Fit, error) {
	rest, ok := bytes.CutPrefix(b, []byte(fitMagic))
	if !ok {
		return nil, fmt.Errorf("not a fit file (no %q header)", fitMagic[:len(fitMagic)-1])
	}
	if len(rest) == 0 || rest[0] != fitVersion {
		return nil, fmt.Errorf("a fit file of another format version, this relabel reads version %d", fitVersion)
	}
	k := &Fit{}
	if err := k.UnmarshalBinary(rest[1:]); err != nil {
		return nil, err
	}
	return k, nil
}

// ReadFitFile reads the fit file at path.
func ReadFitFile(ctx context.Context, path string) (*Fit, error) {
	return readFile(ctx, path, DecodeFitFile)
}

// readFile reads the file at path whole and decodes it, a decoding error
// naming the path.
func readFile[T any](ctx context.Context, path string, decode func([]byte) (*T, error)) (*T, error) {
	fs, err := blobio.For(path)
	if err != nil {
		return nil, err
	}
	b, err := blobio.ReadFile(ctx, fs, path)
	if err != nil {
		return nil, err
	}
	v, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
