package blobio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SameFile reports whether a and b name one file: for local paths, one
// file after symbolic links, ".." and hard links (os.SameFile), however
// spelled; for object-store paths, one path after trailing slashes. A local
// path that does not exist is the same as no other.
func SameFile(a, b string) bool {
	if strings.Contains(a, "://") && !strings.HasPrefix(a, "file://") || strings.Contains(b, "://") && !strings.HasPrefix(b, "file://") {
		return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
	}
	sa, err := os.Stat(localPath(a))
	if err != nil {
		return false
	}
	sb, err := os.Stat(localPath(b))
	if err != nil {
		return false
	}
	return os.SameFile(sa, sb)
}

// ErrNotRegular is wrapped by NotRegular's error.
var ErrNotRegular = errors.New("not a regular file")

// NotRegular returns an error wrapping ErrNotRegular when the local path
// exists and is not a regular file: a symbolic link (even to a regular
// file), a directory, a FIFO, a device or a socket. A command's --overwrite
// replaces regular files only: renaming a page over a link replaces the
// link (as root, /dev/stdout itself), and over a device or FIFO, the device.
// A path that does not exist, and object-store paths, are nil.
func NotRegular(path string) error {
	if strings.Contains(path, "://") && !strings.HasPrefix(path, "file://") {
		return nil
	}
	st, err := os.Lstat(localPath(path))
	if err != nil {
		return nil
	}
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s is %s, %w: relabel replaces only regular files", path, FileKind(st.Mode()), ErrNotRegular)
}

// FileKind names a file mode's type for messages.
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// Canonical is path as an absolute local path with symbolic links resolved
// (of its directory, when the path itself does not exist yet), for
// comparing where two spellings point; object-store paths come back as they
// are.
func Canonical(path string) string {
	if strings.Contains(path, "://") && !strings.HasPrefix(path, "file://") {
		return path
	}
	abs, err := filepath.Abs(localPath(path))
	if err != nil {
		return filepath.Clean(localPath(path))
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(r, filepath.Base(abs))
	}
	return abs
}
