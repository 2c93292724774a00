package blobio

import (
	"context"
	"fmt"
	"io"
)

// ReadFile reads the whole of path from fsys, as os.ReadFile does on the
// local disk. It is for small files (reports, summaries, truth labels): it
// holds the content in memory. The read goes through ReadAt, so on object
// stores it is one ranged download.
func ReadFile(ctx context.Context, fsys FS, path string) ([]byte, error) {
	f, err := fsys.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(Section(f))
	if err != nil {
		return nil, fmt.Errorf("blobio: reading %s: %w", path, err)
	}
	return b, nil
}

// WriteFile writes b as the whole of path on fsys, as os.WriteFile does on the
// local disk: create, write, close. The error of Close is returned, since on
// object stores that is where the upload commits or fails; after a failed
// Write the writer is still closed, so nothing is left open. Create's
// visibility rules apply (FS.Create): for an atomic result write a temporary
// name and Rename it.
func WriteFile(ctx context.Context, fsys FS, path string, b []byte) error {
	w, err := fsys.Create(ctx, path)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return fmt.Errorf("blobio: writing %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("blobio: writing %s: %w", path, err)
	}
	return nil
}
