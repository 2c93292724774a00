package stages

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/head"
	"github.com/relabel/relabel/transforms/mixture"
)

// Keeping what the rounds fitted (RoundsParams.Keep, KeepPooled).
//
// An incremental lake run relabels a few rows among many with the stored
// posteriors of the others fixed (pipelines/lake). Where the full run that
// made those posteriors started its items from the pooled fit, or gave them
// the linear head's component, the rows it relabels must be given the same,
// or rows relabelled under two models would sit side by side. Refitting
// either over every row would cost what the full run cost, so the stages
// that fit them write them down where the run says (one file each, the same
// bytes should a bundle be retried), and ReadKept gathers them.

// Names of the kept files in the Keep directory.
const (
	keptHeadName   = "head"
	keptPooledName = "pooled"
	keptGivenName  = "given"
)

// Kept is what the rounds of a run kept.
type Kept struct {
	// Head is the linear head's fit after the last round; nil where the run
	// had no head.
	Head *head.Fit
	// Pooled is the pooled start's outcome (the transition only); nil
	// where the run fitted none.
	Pooled *PooledModel
	// Given is the given-label model's fit (the neighbours' temperature
	// and the label transition); nil where the run read the given labels
	// as votes.
	Given *mixture.GivenFit
}

// writeKept writes b as dir's file name.
func writeKept(ctx context.Context, dir, name string, b []byte) error {
	fs, err := blobio.For(dir)
	if err != nil {
		return err
	}
	if err := blobio.WriteFile(ctx, fs, blobio.Join(dir, name), b); err != nil {
		return fmt.Errorf("stages: keeping the %s fit: %w", name, err)
	}
	return nil
}

// KeepHead writes h's fit after the last round into dir, for ReadKept:
// what the exact path's rounds (roundsFn) and ivf mode's local rounds
// (pipelines/ivfstages) keep of their head.
func KeepHead(ctx context.Context, dir string, h *head.Head) error {
	b, err := h.Fit().AppendBinary(nil)
	if err != nil {
		return err
	}
	return writeKept(ctx, dir, keptHeadName, b)
}

// KeepGiven writes the given-label model's fit into dir, for ReadKept:
// what Given (and ivf mode's given-label stage) keep.
func KeepGiven(ctx context.Context, dir string, f *mixture.GivenFit) error {
	return writeKept(ctx, dir, keptGivenName, encodeGivenFit(f))
}

func encodeGivenFit(f *mixture.GivenFit) []byte {
	var w wire.Writer
	w.Uvarint(uint64(f.C))
	w.Float64(f.T)
	wire.Slice(&w, f.A)
	w.Float64(f.LogLik)
	w.Uvarint(uint64(f.Items))
	wire.Slice(&w, f.Mass)
	return w.B
}

func decodeGivenFit(b []byte) (*mixture.GivenFit, error) {
	r := wire.Reader{B: b}
	f := &mixture.GivenFit{C: int(r.Uvarint()), T: r.Float64(), A: wire.ReadSlice[float64](&r), LogLik: r.Float64(), Items: int(r.Uvarint()), Mass: wire.ReadSlice[float64](&r)}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if f.C < 2 || len(f.A) != f.C*f.C || len(f.Mass) != f.C || !(f.T > 0) {
		return nil, fmt.Errorf("%d transition values and %d masses for %d classes at temperature %v", len(f.A), len(f.Mass), f.C, f.T)
	}
	return f, nil
}

// keepPooledFn writes the pooled fit's outcome into Dir.
type keepPooledFn struct {
	Dir string
}

func (f *keepPooledFn) ProcessElement(ctx context.Context, m PooledModel) error {
	return writeKept(ctx, f.Dir, keptPooledName, encodePooledModel(PooledTransitionOnly(m)))
}

func init() {
	register.DoFn2x1[context.Context, PooledModel, error](&keepPooledFn{})
}

// KeepPooled writes the pooled fit's outcome (pooled: RoundsPooled's or
// ivfstages.PooledStart's, one PooledModel) into dir, for ReadKept.
func KeepPooled(s beam.Scope, pooled beam.PCollection, dir string) {
	s = s.Scope("relabel.KeepPooled")
	beam.ParDo0(s, &keepPooledFn{Dir: dir}, pooled)
}

// ReadKept reads what a run's stages kept in dir (RoundsParams.Keep,
// KeepPooled): a missing file is a fit the run did not have.
func ReadKept(ctx context.Context, dir string) (*Kept, error) {
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
	k := &Kept{}
	if b, err := read(keptHeadName); err != nil {
		return nil, fmt.Errorf("stages: the kept head: %w", err)
	} else if b != nil {
		k.Head = &head.Fit{}
		if err := k.Head.UnmarshalBinary(b); err != nil {
			return nil, fmt.Errorf("stages: the kept head: %w", err)
		}
	}
	if b, err := read(keptPooledName); err != nil {
		return nil, fmt.Errorf("stages: the kept pooled fit: %w", err)
	} else if b != nil {
		m, err := decodePooledModel(b)
		if err != nil {
			return nil, fmt.Errorf("stages: the kept pooled fit: %w", err)
		}
		k.Pooled = &m
	}
	if b, err := read(keptGivenName); err != nil {
		return nil, fmt.Errorf("stages: the kept given-label fit: %w", err)
	} else if b != nil {
		if k.Given, err = decodeGivenFit(b); err != nil {
			return nil, fmt.Errorf("stages: the kept given-label fit: %w", err)
		}
	}
	return k, nil
}

// RemoveKept removes what the stages kept in dir, and dir.
func RemoveKept(ctx context.Context, dir string) {
	fs, err := blobio.For(dir)
	if err != nil {
		return
	}
	for _, name := range []string{keptHeadName, keptPooledName, keptGivenName} {
		fs.Remove(ctx, blobio.Join(dir, name))
	}
	fs.Remove(ctx, dir)
}

// Transition is the kept pooled model as mixture's (nil where the gate
// kept the paper's start: nothing to start from).
func (k *Kept) Transition() *mixture.Pooled {
	if k == nil || k.Pooled == nil || !k.Pooled.Open {
		return nil
	}
	return k.Pooled.Pooled()
}

// AppendBinary appends k's encoding to b (encoding.BinaryAppender): the
// head's fit, the pooled model and the given-label fit, each behind a flag
// saying it is there.
func (k *Kept) AppendBinary(b []byte) ([]byte, error) {
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
		w.String(string(encodePooledModel(*k.Pooled)))
	}
	w.Bool(k.Given != nil)
	if k.Given != nil {
		w.String(string(encodeGivenFit(k.Given)))
	}
	return w.B, nil
}

// UnmarshalBinary decodes a Kept that AppendBinary encoded (the whole of
// b).
func (k *Kept) UnmarshalBinary(b []byte) error {
	r := wire.Reader{B: b}
	var got Kept
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
		return fmt.Errorf("stages: decoding kept fits: %w", err)
	}
	if hasHead {
		got.Head = &head.Fit{}
		if err := got.Head.UnmarshalBinary(hb); err != nil {
			return err
		}
	}
	if hasPooled {
		m, err := decodePooledModel(pb)
		if err != nil {
			return fmt.Errorf("stages: decoding the kept pooled fit: %w", err)
		}
		if m.Open && (m.C < 2 || len(m.T) != m.C*m.C || len(m.Prior) != m.C) {
			return fmt.Errorf("stages: decoding the kept pooled fit: %d transition values and a prior of %d for %d classes", len(m.T), len(m.Prior), m.C)
		}
		got.Pooled = &m
	}
	if hasGiven {
		f, err := decodeGivenFit(gb)
		if err != nil {
			return fmt.Errorf("stages: decoding the kept given-label fit: %w", err)
		}
		got.Given = f
	}
	*k = got
	return nil
}
