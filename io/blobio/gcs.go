package blobio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
)

// The default gs:// backend makes its client on first use, so that a binary
// that never touches gs:// never looks for Google credentials.
func init() { Register("gs", &GCS{}) }

var _ FS = (*GCS)(nil)

// GCS is the FS of Cloud Storage, serving gs://bucket/object paths.
//
// Objects are read with ranged reads (one request per ReadAt), so a Parquet
// reader fetches the footer and the row groups it needs, never the whole
// object. Writes become visible only when Close succeeds: Cloud Storage
// finalizes an upload atomically, so a failed or abandoned write leaves no
// object behind, not even a partial one under the temporary name.
type GCS struct {
	// Client is used as-is when set (tests, custom credentials). Optional,
	// default: a client made on first use by storage.NewClient, which talks to
	// the emulator named by STORAGE_EMULATOR_HOST when it is set and otherwise
	// uses Application Default Credentials.
	Client *storage.Client

	// ChunkSize is the resumable-upload chunk size of Create, in bytes.
	// Optional, default 16 MiB (the storage client's); each open writer buffers
	// one chunk.
	ChunkSize int

	// ChunkRetryDeadline bounds the retries of one upload chunk before Create's
	// writer gives up. Optional, default 32 s (the storage client's).
	ChunkRetryDeadline time.Duration

	mu sync.Mutex
}

// client returns the configured client, creating it on first use. A failed
// creation is not remembered, so that fixing the environment and retrying works.
func (g *GCS) client(ctx context.Context) (*storage.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.Client != nil {
		return g.Client, nil
	}
	c, err := storage.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("blobio: gs: creating Cloud Storage client (set up Application Default Credentials, or STORAGE_EMULATOR_HOST for an emulator): %w", err)
	}
	g.Client = c
	return c, nil
}

// parseGS splits gs://bucket/object into its bucket and object name.
func parseGS(p string) (bucket, object string, err error) {
	rest, ok := strings.CutPrefix(p, "gs://")
	if !ok {
		return "", "", fmt.Errorf("blobio: %q is not a gs:// path", p)
	}
	bucket, object, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("blobio: %q has no bucket name", p)
	}
	return bucket, object, nil
}

// object resolves a path that must name an object (not just a bucket).
func (g *GCS) object(ctx context.Context, p string) (*storage.ObjectHandle, error) {
	bucket, name, err := parseGS(p)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("blobio: %q names a bucket, not an object", p)
	}
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	return c.Bucket(bucket).Object(name), nil
}

// notExist makes Cloud Storage's not-found error match fs.ErrNotExist too, so
// callers test one error for local and gs:// paths alike.
func notExist(err error) error {
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("%w (%w)", fs.ErrNotExist, err)
	}
	return err
}

// Glob returns the objects matching pattern (path.Match syntax: *, ?, [...],
// where * does not cross "/"), sorted, as gs:// paths. The listing is limited
// to the prefix before the first metacharacter, so a pattern such as
// gs://b/in/*.parquet lists in/ only. The bucket name cannot have wildcards.
func (g *GCS) Glob(ctx context.Context, pattern string) ([]string, error) {
	bucket, objPattern, err := parseGS(pattern)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(bucket, `*?[\`) {
		return nil, fmt.Errorf("blobio: glob %q: wildcards in the bucket name are not supported", pattern)
	}
	// Reject a malformed pattern even when nothing would be listed, as
	// filepath.Glob does for the local disk.
	if _, err := path.Match(objPattern, ""); err != nil {
		return nil, fmt.Errorf("blobio: glob %q: %w", pattern, err)
	}
	prefix := objPattern
	if i := strings.IndexAny(objPattern, `*?[\`); i >= 0 {
		prefix = objPattern[:i]
	}
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	q := &storage.Query{Prefix: prefix}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return nil, fmt.Errorf("blobio: glob %q: %w", pattern, err)
	}
	var out []string
	it := c.Bucket(bucket).Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("blobio: glob %q: listing gs://%s/%s: %w", pattern, bucket, prefix, notExist(err))
		}
		// path.Match cannot fail here: the pattern was checked above.
		if ok, _ := path.Match(objPattern, attrs.Name); ok {
			out = append(out, "gs://"+bucket+"/"+attrs.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// gcsFile reads one generation of an object with a ranged request per ReadAt.
type gcsFile struct {
	ctx  context.Context
	obj  *storage.ObjectHandle
	path string
	size int64
}

func (f *gcsFile) Size() int64  { return f.size }
func (f *gcsFile) Close() error { return nil }

// ReadAt reads len(b) bytes at off with one ranged GET, following the
// io.ReaderAt contract (io.EOF when the range runs past the end).
func (f *gcsFile) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("blobio: read %s: negative offset %d", f.path, off)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	want := min(int64(len(b)), f.size-off)
	if want == 0 {
		return 0, nil
	}
	r, err := f.obj.NewRangeReader(f.ctx, off, want)
	if err != nil {
		return 0, fmt.Errorf("blobio: read %s [%d,%d): %w", f.path, off, off+want, notExist(err))
	}
	defer r.Close()
	n, err := io.ReadFull(r, b[:want])
	if err != nil {
		return n, fmt.Errorf("blobio: read %s [%d,%d): %w", f.path, off, off+want, err)
	}
	if want < int64(len(b)) {
		return n, io.EOF
	}
	return n, nil
}

// Open opens the object at path for ranged reads. Reads are pinned to the
// generation seen at Open, so replacing the object meanwhile makes reads fail
// rather than mix two versions. ctx is used for every later ReadAt as well.
func (g *GCS) Open(ctx context.Context, p string) (File, error) {
	obj, err := g.object(ctx, p)
	if err != nil {
		return nil, err
	}
	attrs, err := obj.Attrs(ctx)
	if err != nil {
		return nil, fmt.Errorf("blobio: open %s: %w", p, notExist(err))
	}
	// ReadCompressed: an object stored with Content-Encoding: gzip would
	// otherwise be decompressed on the fly, and offsets would not match Size.
	obj = obj.Generation(attrs.Generation).ReadCompressed(true)
	return &gcsFile{ctx: ctx, obj: obj, path: p, size: attrs.Size}, nil
}

// gcsWriter closes the upload and releases its context.
type gcsWriter struct {
	w      *storage.Writer
	cancel context.CancelFunc
	path   string
}

func (w *gcsWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	if err != nil {
		w.cancel()
		return n, fmt.Errorf("blobio: write %s: %w", w.path, err)
	}
	return n, nil
}

func (w *gcsWriter) Close() error {
	defer w.cancel()
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("blobio: write %s: %w", w.path, err)
	}
	return nil
}

// Create starts an upload to path. The object appears, complete, only when
// Close returns nil; until then (and forever, if the upload fails or ctx is
// cancelled) no object exists under that name.
func (g *GCS) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	obj, err := g.object(ctx, p)
	if err != nil {
		return nil, err
	}
	// Cancelling the upload's context is how the storage client aborts an
	// upload; a writer whose Write failed is cancelled at once.
	ctx, cancel := context.WithCancel(ctx)
	w := obj.NewWriter(ctx)
	if g.ChunkSize > 0 {
		w.ChunkSize = g.ChunkSize
	}
	if g.ChunkRetryDeadline > 0 {
		w.ChunkRetryDeadline = g.ChunkRetryDeadline
	}
	return &gcsWriter{w: w, cancel: cancel, path: p}, nil
}

// Rename copies src to dst, then deletes src. The copy is server-side and
// dst appears complete or not at all, so readers never see a partial dst;
// if the delete fails, src is left behind and the error says so.
func (g *GCS) Rename(ctx context.Context, src, dst string) error {
	so, err := g.object(ctx, src)
	if err != nil {
		return err
	}
	do, err := g.object(ctx, dst)
	if err != nil {
		return err
	}
	if _, err := do.CopierFrom(so).Run(ctx); err != nil {
		return fmt.Errorf("blobio: rename %s to %s: copy: %w", src, dst, notExist(err))
	}
	if err := so.Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("blobio: rename %s to %s: copied, but deleting the source failed: %w", src, dst, err)
	}
	return nil
}

// Remove deletes the object at path; a missing object is not an error.
func (g *GCS) Remove(ctx context.Context, p string) error {
	obj, err := g.object(ctx, p)
	if err != nil {
		return err
	}
	if err := obj.Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("blobio: remove %s: %w", p, err)
	}
	return nil
}

// Exists reports whether path names an object or, like a directory on the
// local disk, a prefix that objects live under (gs://b/out when gs://b/out/x
// exists). A bucket path (gs://b) exists when the bucket does.
func (g *GCS) Exists(ctx context.Context, p string) (bool, error) {
	bucket, name, err := parseGS(p)
	if err != nil {
		return false, err
	}
	c, err := g.client(ctx)
	if err != nil {
		return false, err
	}
	b := c.Bucket(bucket)
	if name == "" {
		_, err := b.Attrs(ctx)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, storage.ErrBucketNotExist):
			return false, nil
		default:
			return false, fmt.Errorf("blobio: exists %s: %w", p, err)
		}
	}
	if !strings.HasSuffix(name, "/") {
		_, err = b.Object(name).Attrs(ctx)
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, storage.ErrObjectNotExist):
			return false, fmt.Errorf("blobio: exists %s: %w", p, err)
		}
	}
	q := &storage.Query{Prefix: strings.TrimSuffix(name, "/") + "/"}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return false, fmt.Errorf("blobio: exists %s: %w", p, err)
	}
	it := b.Objects(ctx, q)
	it.PageInfo().MaxSize = 1
	switch _, err := it.Next(); {
	case err == nil:
		return true, nil
	case errors.Is(err, iterator.Done):
		return false, nil
	default:
		return false, fmt.Errorf("blobio: exists %s: %w", p, notExist(err))
	}
}

// MkdirAll only checks the path: object stores have no directories, an
// object's name carries its "parents".
func (g *GCS) MkdirAll(ctx context.Context, p string) error {
	_, _, err := parseGS(p)
	return err
}
