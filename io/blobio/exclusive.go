package blobio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
)

// ErrExist is returned by CreateExclusive when path already exists.
var ErrExist = fs.ErrExist

// CreateExclusive writes b to path only if path does not exist yet, in one
// step that two writers cannot both win: O_EXCL on the local disk, a
// generation-match precondition (DoesNotExist) on Cloud Storage. It is what
// relabel's output lock is made of.
func CreateExclusive(ctx context.Context, path string, b []byte) error {
	fsys, err := For(path)
	if err != nil {
		return err
	}
	switch f := fsys.(type) {
	case Local:
		return f.createExclusive(path, b)
	case *GCS:
		return f.createExclusive(ctx, path, b)
	}
	return fmt.Errorf("blobio: %s: exclusive create not supported by %T", path, fsys)
}

func (Local) createExclusive(path string, b []byte) error {
	p := localPath(path)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("blobio: %s: %w", path, ErrExist)
		}
		return fmt.Errorf("blobio: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(p)
		return fmt.Errorf("blobio: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(p)
		return fmt.Errorf("blobio: closing %s: %w", path, err)
	}
	return nil
}

func (g *GCS) createExclusive(ctx context.Context, path string, b []byte) error {
	obj, err := g.object(ctx, path)
	if err != nil {
		return err
	}
	w := obj.If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
	if _, err := w.Write(b); err != nil {
		w.Close()
		return preconditionErr(path, err)
	}
	return preconditionErr(path, w.Close())
}

func preconditionErr(path string, err error) error {
	if err == nil {
		return nil
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed {
		return fmt.Errorf("blobio: %s: %w", path, ErrExist)
	}
	return fmt.Errorf("blobio: writing %s: %w", path, err)
}
