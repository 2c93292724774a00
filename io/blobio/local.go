package blobio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Local is the FS of the local disk. Paths are ordinary OS paths; a "file://"
// prefix is accepted and removed, so that file:///data/x.parquet and
// /data/x.parquet name the same file.
type Local struct{}

func init() { Register("file", Local{}) }

var _ FS = Local{}

// localPath strips the file:// scheme, if any.
func localPath(path string) string {
	return strings.TrimPrefix(path, "file://")
}

// Glob returns the paths matching pattern (filepath.Match syntax: *, ?, [...]),
// sorted. Directories are left out: every caller wants files (shards), and a
// directory that happens to match data/* would fail later with a less clear
// error. A pattern without metacharacters matches the one file it names, if
// it exists. Paths are returned with the file:// prefix when the pattern had
// one, so that they round-trip through For.
func (Local) Glob(ctx context.Context, pattern string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prefix := ""
	if strings.HasPrefix(pattern, "file://") {
		prefix = "file://"
	}
	matches, err := filepath.Glob(localPath(pattern))
	if err != nil {
		return nil, fmt.Errorf("blobio: glob %q: %w", pattern, err)
	}
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		st, err := os.Stat(m)
		if err != nil {
			// Removed between the listing and the stat: it does not match any more.
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("blobio: glob %q: %w", pattern, err)
		}
		if st.IsDir() {
			continue
		}
		out = append(out, prefix+m)
	}
	sort.Strings(out)
	return out, nil
}

// localFile adds Size to an *os.File.
type localFile struct {
	*os.File
	size int64
}

func (f *localFile) Size() int64 { return f.size }

// Open opens path for ranged reads. Opening a directory is an error.
func (Local) Open(ctx context.Context, path string) (File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(localPath(path))
	if err != nil {
		return nil, fmt.Errorf("blobio: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("blobio: open %s: %w", path, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("blobio: open %s: is a directory", path)
	}
	return &localFile{File: f, size: st.Size()}, nil
}

// Create creates or truncates path and writes straight to it: on the local disk
// a half-written file is visible while it is written, so callers that need
// atomicity write a temporary name and Rename it, as FS documents. The parent
// directory must exist (MkdirAll).
func (Local) Create(ctx context.Context, path string) (io.WriteCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Create(localPath(path))
	if err != nil {
		return nil, fmt.Errorf("blobio: %w", err)
	}
	return f, nil
}

// Rename moves src to dst, replacing dst (atomic within one file system).
func (Local) Rename(ctx context.Context, src, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(localPath(src), localPath(dst)); err != nil {
		return fmt.Errorf("blobio: %w", err)
	}
	return nil
}

// Remove deletes the file path; a missing path is not an error.
func (Local) Remove(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Remove(localPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobio: %w", err)
	}
	return nil
}

// Exists reports whether path exists (a file or a directory).
func (Local) Exists(ctx context.Context, path string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	_, err := os.Stat(localPath(path))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("blobio: %w", err)
	}
}

// MkdirAll makes the directory path and its parents.
func (Local) MkdirAll(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(localPath(path), 0o755); err != nil {
		return fmt.Errorf("blobio: %w", err)
	}
	return nil
}
