package blobio

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// File is an open blob with random access.
type File interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// FS is one storage backend.
type FS interface {
	// Glob returns the paths matching pattern, sorted.
	Glob(ctx context.Context, pattern string) ([]string, error)
	// Open opens path for ranged reads.
	Open(ctx context.Context, path string) (File, error)
	// Create writes path. On object stores the content becomes visible only
	// when Close returns nil; on the local disk it is visible while written.
	// So callers write temporary names and Rename them (relabel's atomic commit).
	Create(ctx context.Context, path string) (io.WriteCloser, error)
	// Rename moves src to dst, replacing dst.
	Rename(ctx context.Context, src, dst string) error
	// Remove deletes path; a missing path is not an error.
	Remove(ctx context.Context, path string) error
	// Exists reports whether path exists.
	Exists(ctx context.Context, path string) (bool, error)
	// MkdirAll makes a directory and its parents (a no-op on object stores).
	MkdirAll(ctx context.Context, path string) error
}

var (
	mu      sync.RWMutex
	schemes = map[string]FS{}
)

// Register makes fs serve paths that start with scheme + "://".
func Register(scheme string, fs FS) {
	mu.Lock()
	defer mu.Unlock()
	schemes[scheme] = fs
}

// For returns the backend serving path: its scheme's, or the local disk.
func For(path string) (FS, error) {
	i := strings.Index(path, "://")
	if i < 0 {
		return Local{}, nil
	}
	mu.RLock()
	defer mu.RUnlock()
	fs, ok := schemes[path[:i]]
	if !ok {
		return nil, fmt.Errorf("blobio: no filesystem registered for %q (path %s)", path[:i], path)
	}
	return fs, nil
}

// Join joins a directory and a name with "/", for local and object paths alike.
func Join(dir, name string) string {
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// Base returns the last element of a local or object path: what follows the
// last "/" (or the whole path when it has none).
func Base(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

// Dir returns everything of path before its last "/", or "." when it has none.
func Dir(path string) string {
	i := strings.LastIndex(path, "/")
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	}
	return path[:i]
}

// Section returns a reader over the whole of f that also seeks: the
// io.ReadSeeker + io.ReaderAt that Parquet and Arrow IPC readers take. Reads go
// to f.ReadAt, so on object stores they stay ranged reads.
func Section(f File) *io.SectionReader {
	return io.NewSectionReader(f, 0, f.Size())
}
