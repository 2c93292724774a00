package head

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/relabel/relabel/schemas/wire"
	"github.com/relabel/relabel/transforms/mixture"
)

// Fit is a head's fit as it stood after a round: each fold's weights, the
// standardisation its items were z-scored with, and the component weight
// the round gave it. A run keeps it so that rows it never saw can be given
// the component the head gave its items (Probs, States) without a refit:
// an incremental lake run, which relabels a few rows among many, applies
// the full run's last fit to the rows it relabels (package lake).
//
// A row's probabilities are those of the model of its fold (the fold its
// key hashes to, as New assigns them), which was fitted on the other
// folds: for an item the head was fitted on, exactly the out-of-fold
// probabilities its last round gave it, bit for bit; for a new row, the
// prediction of a model that never saw it either.
type Fit struct {
	// Folds and Seed assign a key its fold (New's rule).
	Folds int
	Seed  uint64
	// D is the feature dimension, C the classes.
	D, C int
	// Mean and SD z-score a row's features (d each).
	Mean, SD []float64
	// W is per fold, (D+1) x C row-major (the intercepts last).
	W [][]float64
	// Weight is the component's weight relative to an item's neighbours'
	// total (Round's second result); Off: the head had switched itself
	// off (OffShare) and gives no component.
	Weight float64
	Off    bool
}

// Fit returns the head's fit after its last Round (its own slices): Off
// where it gave no component in that round or was never fitted.
func (h *Head) Fit() *Fit {
	f := &Fit{Folds: h.p.Folds, Seed: h.p.Seed, D: h.d, C: h.c, Mean: h.mean, SD: h.sd, W: h.w, Weight: h.weight, Off: h.off || h.weight == 0}
	for _, w := range h.w {
		if w == nil {
			f.Off = true
		}
	}
	return f
}

// fold is key's fold.
func (f *Fit) fold(key int64) int { return int(mix(f.Seed, uint64(key)) % uint64(f.Folds)) }

// Probs writes to dst (n x C) the class probabilities of n rows of
// features x (n x D, row-major, as given: not standardised) with keys,
// each under the model of its own fold.
func (f *Fit) Probs(dst []float64, x []float32, keys []int64) {
	n, d, c := len(keys), f.D, f.C
	if len(x) != n*d || len(dst) != n*c {
		panic(fmt.Sprintf("head: %d values, %d probabilities for %d rows of dimension %d, %d classes", len(x), len(dst), n, d, c))
	}
	row := mat.NewDense(1, d+1, nil)
	z := make([]float64, c)
	for i, key := range keys {
		r := row.RawRowView(0)
		for j, v := range x[i*d : (i+1)*d] {
			r[j] = (float64(v) - f.Mean[j]) / f.SD[j]
		}
		r[d] = 1
		mulXW(z, row, f.W[f.fold(key)], c)
		softmax(dst[i*c:(i+1)*c], z)
	}
}

// States returns the component's states of n rows (Probs), packed in row
// order, as Round makes them (mixture.State.InitPosterior: the c0 most
// probable classes, each with the smoothed identity row).
func (f *Fit) States(x []float32, keys []int64, c0 int, smooth float64) *mixture.States {
	probs := make([]float64, len(keys)*f.C)
	f.Probs(probs, x, keys)
	var out mixture.States
	out.Reset()
	var s mixture.State
	for i := range keys {
		s.InitPosterior(probs[i*f.C:(i+1)*f.C], nil, 1, c0, smooth)
		out.Append(&s)
	}
	return &out
}

// AppendBinary appends f's encoding to b (encoding.BinaryAppender).
func (f *Fit) AppendBinary(b []byte) ([]byte, error) {
	w := wire.Writer{B: b}
	w.Uvarint(uint64(f.Folds))
	w.Uvarint(f.Seed)
	w.Uvarint(uint64(f.D))
	w.Uvarint(uint64(f.C))
	w.Float64(f.Weight)
	w.Bool(f.Off)
	wire.Slice(&w, f.Mean)
	wire.Slice(&w, f.SD)
	w.Uvarint(uint64(len(f.W)))
	for _, fw := range f.W {
		wire.Slice(&w, fw)
	}
	return w.B, nil
}

// UnmarshalBinary decodes a Fit that AppendBinary encoded (the whole of
// b), checked for shape: D moments each, Folds folds of (D+1) x C weights
// where it is not Off.
func (f *Fit) UnmarshalBinary(b []byte) error {
	r := wire.Reader{B: b}
	var got Fit
	got.Folds = int(r.Uvarint())
	got.Seed = r.Uvarint()
	got.D = int(r.Uvarint())
	got.C = int(r.Uvarint())
	got.Weight = r.Float64()
	got.Off = r.Bool()
	got.Mean = wire.ReadSlice[float64](&r)
	got.SD = wire.ReadSlice[float64](&r)
	nw := r.Uvarint()
	if nw > uint64(len(b)) {
		return fmt.Errorf("head: decoding a fit: %d folds in %d bytes", nw, len(b))
	}
	for range nw {
		got.W = append(got.W, wire.ReadSlice[float64](&r))
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("head: decoding a fit: %w", err)
	}
	if got.Folds < 2 || got.D < 1 || got.C < 2 || len(got.Mean) != got.D || len(got.SD) != got.D {
		return fmt.Errorf("head: decoding a fit: %d folds, d = %d, %d classes, %d and %d moments", got.Folds, got.D, got.C, len(got.Mean), len(got.SD))
	}
	if !got.Off {
		if len(got.W) != got.Folds {
			return fmt.Errorf("head: decoding a fit: %d folds' weights, want %d", len(got.W), got.Folds)
		}
		for k, w := range got.W {
			if len(w) != (got.D+1)*got.C {
				return fmt.Errorf("head: decoding a fit: fold %d has %d weights, want %d", k, len(w), (got.D+1)*got.C)
			}
		}
	}
	*f = got
	return nil
}
