package blobio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Fingerprint identifies one version of a file's content, so that a later
// run can tell whether the file changed: on Cloud Storage the object's
// generation (a new one on every write, read from its metadata without
// reading the content), elsewhere a SHA-256 of the content (a modification
// time survives a copy that changed nothing and misses a rewrite within the
// clock's resolution, so it is not trusted).
type Fingerprint struct {
	Size int64 `json:"size"`
	// Version is "generation:N" on gs://, "sha256:HEX" elsewhere.
	Version string `json:"version"`
}

// FingerprintOf returns path's fingerprint.
func FingerprintOf(ctx context.Context, path string) (Fingerprint, error) {
	fs, err := For(path)
	if err != nil {
		return Fingerprint{}, err
	}
	if g, ok := fs.(*GCS); ok {
		obj, err := g.object(ctx, path)
		if err != nil {
			return Fingerprint{}, err
		}
		attrs, err := obj.Attrs(ctx)
		if err != nil {
			return Fingerprint{}, fmt.Errorf("blobio: %s: %w", path, notExist(err))
		}
		return Fingerprint{Size: attrs.Size, Version: "generation:" + strconv.FormatInt(attrs.Generation, 10)}, nil
	}
	if _, ok := fs.(Local); ok {
		f, err := os.Open(localPath(path))
		if err != nil {
			return Fingerprint{}, fmt.Errorf("blobio: %w", err)
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(h, f)
		if err != nil {
			return Fingerprint{}, fmt.Errorf("blobio: reading %s: %w", path, err)
		}
		return Fingerprint{Size: n, Version: "sha256:" + hex.EncodeToString(h.Sum(nil))}, nil
	}
	// Any other backend: hash through its ranged reader.
	f, err := fs.Open(ctx, path)
	if err != nil {
		return Fingerprint{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, Section(f)); err != nil {
		return Fingerprint{}, fmt.Errorf("blobio: reading %s: %w", path, err)
	}
	return Fingerprint{Size: f.Size(), Version: "sha256:" + hex.EncodeToString(h.Sum(nil))}, nil
}
