package spillio

import (
	"fmt"
	"sync"

	"github.com/relabel/relabel/schemas/wire"
)

// PutRef appends ref's encoding to w: what travels through the shuffle in
// place of a spilled element (the zero Ref for an inline one). Every stage
// package that spills (pipelines/ivfstages, pipelines/crowdstages) writes
// its references with it.
func PutRef(w *wire.Writer, ref Ref) {
	w.String(ref.Path)
	w.Varint(ref.Off)
	w.Varint(ref.Len)
}

// GetRef reads what PutRef wrote; r.Err says whether it could.
func GetRef(r *wire.Reader) Ref {
	return Ref{Path: r.String(), Off: r.Varint(), Len: r.Varint()}
}

// Load reads and decodes the element ref points to. decode must copy what
// it keeps (schemas/wire's decoders do): the read buffer goes back to the
// pool (ReadFunc). A decoding error names the file and offset.
func Load[T any](ref Ref, decode func([]byte) (T, error)) (T, error) {
	var v T
	var decErr error
	err := ReadFunc(ref, func(b []byte) error {
		v, decErr = decode(b)
		return nil
	})
	if err != nil {
		return v, err
	}
	if decErr != nil {
		return v, fmt.Errorf("spillio: %s at %d: %w", ref.Path, ref.Off, decErr)
	}
	return v, nil
}

// Last is the spilled value of one kind that this process decoded last: a
// side input (a model, candidates' posteriors) read by every bundle of an
// iteration. Iterations run one after another, so one entry serves every
// bundle of one; and one entry for the process, not one per DoFn, because
// the harness keeps every stage's DoFns until the job ends, and a value
// cached in them stayed in memory for every iteration (660 MB by iteration
// 10 at 100,000 items). Values are read-only once decoded, so bundles may
// share one.
type Last[T any] struct {
	mu  sync.Mutex
	ref Ref
	v   *T
}

// Get returns the value spilled at ref, decoding it unless it is the one
// decoded last.
func (c *Last[T]) Get(ref Ref, decode func([]byte) (*T, error)) (*T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v != nil && c.ref == ref {
		return c.v, nil
	}
	// Drop the previous iteration's copy before decoding this one, so a
	// process holds one, not two.
	c.ref, c.v = Ref{}, nil
	v, err := Load(ref, decode)
	if err != nil {
		return nil, err
	}
	c.ref, c.v = ref, v
	return v, nil
}
