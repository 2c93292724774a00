// Package spillio keeps encoded pipeline elements in local files while they
// wait between stages, so that a runner's shuffle carries only references to
// them (Ref). Files are grouped in generations, one directory each, that a
// stage removes whole once nothing will read them again. What is stored and
// when a generation is obsolete is the caller's (pipelines/ivfstages'
// Spill); this package only writes, reads and removes the files.
package spillio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Ref locates a stored element: Len bytes at Off in the file Path. The zero
// value means the element is not stored (it travels inline).
type Ref struct {
	Path     string
	Off, Len int64
}

// Dir is a spill directory that every worker can read and write, and that
// nothing else uses. The empty Dir stores nothing (On is false).
type Dir string

// On reports whether d stores anything.
func (d Dir) On() bool { return d != "" }

// Gen is the directory of generation gen.
func (d Dir) Gen(gen int) string {
	return filepath.Join(string(d), fmt.Sprintf("g%03d", gen))
}

// Write stores the encodings encs one after the other as the file name of
// generation gen, and returns a reference to each. The file is written under
// a temporary name and renamed, so a reader never sees half of it, and a
// retried bundle that writes the same name rewrites the same bytes. d itself
// must exist: Write makes the generation's directory in it but never
// recreates d, so a bundle still running after its stopped run removed d
// fails instead of leaving a new spill directory behind.
func (d Dir) Write(gen int, name string, encs ...[]byte) ([]Ref, error) {
	dir := d.Gen(gen)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("spillio: %w", err)
	}
	path := filepath.Join(dir, name)
	refs := make([]Ref, len(encs))
	total := 0
	for _, e := range encs {
		total += len(e)
	}
	// One buffer of the final size, from the pool: a round writes a file
	// per block, and allocating (and zeroing) each anew was a good part of
	// a run's allocation and so of its garbage collection.
	p := getBuf(total)
	defer bufPool.Put(p)
	buf := (*p)[:0]
	for i, e := range encs {
		refs[i] = Ref{Path: path, Off: int64(len(buf)), Len: int64(len(e))}
		buf = append(buf, e...)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		return nil, fmt.Errorf("spillio: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("spillio: %w", err)
	}
	return refs, nil
}

// Appender stores encodings one after another in one file of a
// generation, for a loop that stores an element per block: a file per
// element (Write) costs a file's creation and removal each, about a
// millisecond apiece with tens of thousands of files in a generation's
// directory. The file is not
// renamed into place: a generation is read only after its writers have
// finished, and a retried bundle truncates the file it appends to. One
// goroutine at a time.
type Appender struct {
	f    *os.File
	path string
	off  int64
}

// Append creates (or truncates) the file name of generation gen for
// appending; d itself must exist, as for Write.
func (d Dir) Append(gen int, name string) (*Appender, error) {
	dir := d.Gen(gen)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("spillio: %w", err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("spillio: %w", err)
	}
	return &Appender{f: f, path: path}, nil
}

// Put appends enc and returns a reference to it.
func (a *Appender) Put(enc []byte) (Ref, error) {
	if _, err := a.f.Write(enc); err != nil {
		return Ref{}, fmt.Errorf("spillio: %w", err)
	}
	ref := Ref{Path: a.path, Off: a.off, Len: int64(len(enc))}
	a.off += int64(len(enc))
	return ref, nil
}

// Close closes the file; what Put returned is readable once it has.
func (a *Appender) Close() error {
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("spillio: %w", err)
	}
	return nil
}

// Drop removes generation gen; nothing when d is off.
func (d Dir) Drop(gen int) error {
	if !d.On() {
		return nil
	}
	if err := os.RemoveAll(d.Gen(gen)); err != nil {
		return fmt.Errorf("spillio: %w", err)
	}
	return nil
}

// Read returns the bytes ref points to.
func Read(ref Ref) ([]byte, error) {
	b := make([]byte, ref.Len)
	if err := readAt(ref, b); err != nil {
		return nil, err
	}
	return b, nil
}

// ReadFunc calls use with the bytes ref points to, in a buffer that is
// reused once use returns: use must not keep b or any slice of it (a
// decoder that copies what it reads, as schemas/wire's does, qualifies).
// Every round reads each block's messages, so Read's fresh buffer per
// element was garbage at the rate the rounds read.
func ReadFunc(ref Ref, use func(b []byte) error) error {
	p := getBuf(int(ref.Len))
	defer bufPool.Put(p)
	if err := readAt(ref, *p); err != nil {
		return err
	}
	return use(*p)
}

func readAt(ref Ref, b []byte) error {
	f, err := os.Open(ref.Path)
	if err != nil {
		return fmt.Errorf("spillio: %w (was the spill directory removed while the job ran?)", err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, ref.Off); err != nil {
		return fmt.Errorf("spillio: reading %d bytes at %d of %s: %w", ref.Len, ref.Off, ref.Path, err)
	}
	return nil
}

// bufPool holds Write's and ReadFunc's buffers (*[]byte).
var bufPool sync.Pool

// getBuf returns a pooled buffer of length n (its contents are not
// cleared).
func getBuf(n int) *[]byte {
	p, _ := bufPool.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	if cap(*p) < n {
		*p = make([]byte, n)
	}
	*p = (*p)[:n]
	return p
}
