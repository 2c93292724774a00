package pipelines_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/runners"
	"github.com/relabel/relabel/transforms/stages"
)

// digits is the test input: two Parquet shards of 1797 rows, C = 10.
const digits = "../testdata/digits/noisy-idn-0.4-part-*.parquet"

// gcsEmulator is fake-gcs-server behind a recording proxy on 127.0.0.1 (the
// pattern of io/blobio's tests). The proxy notes every object download (its
// Range header and the bytes it served) and can cut upload requests after
// their first bytes, as a network failure mid-write would.
type gcsEmulator struct {
	srv  *fakestorage.Server
	host string

	mu        sync.Mutex
	downloads []gcsDownload
	// cut decides, for an upload whose body is longer than cutAfter bytes,
	// whether to drop the connection after reading cutAfter bytes; nil: never.
	cut      func() bool
	cutAfter int
	uploads  struct{ big, cut, ok int } // uploads longer than cutAfter
}

// gcsDownload is one response carrying object content.
type gcsDownload struct {
	object      string
	rangeHeader string
	bytes       int64
}

// recorder keeps the status and counts the body of a response.
type recorder struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *recorder) WriteHeader(s int) { w.status = s; w.ResponseWriter.WriteHeader(s) }

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// startGCS serves an emulator with an empty bucket "bucket", points
// STORAGE_EMULATOR_HOST at it and registers a fresh gs:// backend (whose
// client is made on first use, so it talks to this emulator).
func startGCS(t *testing.T) *gcsEmulator {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	e := &gcsEmulator{host: lis.Addr().String()}
	e.srv, err = fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener:  true,
		Scheme:      "http",
		PublicHost:  e.host,
		ExternalURL: "http://" + e.host,
		Writer:      io.Discard,
	})
	if err != nil {
		t.Fatalf("fake-gcs-server: %v", err)
	}
	e.srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "bucket"})
	hs := &http.Server{Handler: http.HandlerFunc(e.serve)}
	go hs.Serve(lis)
	t.Setenv("STORAGE_EMULATOR_HOST", e.host)
	blobio.Register("gs", &blobio.GCS{})
	t.Cleanup(func() {
		blobio.Register("gs", &blobio.GCS{})
		hs.Close()
		e.srv.Stop()
	})
	return e
}

func (e *gcsEmulator) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/upload/") && r.Body != nil {
		e.mu.Lock()
		cut, n := e.cut, e.cutAfter
		e.mu.Unlock()
		if cut != nil {
			head := make([]byte, n)
			got, err := io.ReadFull(r.Body, head)
			if err == nil { // longer than cutAfter
				e.mu.Lock()
				e.uploads.big++
				drop := cut()
				if drop {
					e.uploads.cut++
				}
				e.mu.Unlock()
				if drop {
					if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
						conn.Close()
					}
					return
				}
				r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(head), r.Body))
				rec := &recorder{ResponseWriter: w}
				e.srv.HTTPHandler().ServeHTTP(rec, r)
				if rec.status == http.StatusOK {
					e.mu.Lock()
					e.uploads.ok++
					e.mu.Unlock()
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(head[:got]))
		}
	}
	rec := &recorder{ResponseWriter: w}
	e.srv.HTTPHandler().ServeHTTP(rec, r)
	if object, ok := downloadObject(r); ok && r.Method == http.MethodGet {
		e.mu.Lock()
		e.downloads = append(e.downloads, gcsDownload{object, r.Header.Get("Range"), rec.n})
		e.mu.Unlock()
	}
}

// downloadObject returns the object whose content r fetches: a JSON-API
// media download (.../b/BUCKET/o/OBJECT?alt=media) or an XML-API GET of
// /BUCKET/OBJECT. Metadata requests and listings are not downloads.
func downloadObject(r *http.Request) (string, bool) {
	p := r.URL.Path
	if r.URL.Query().Get("alt") == "media" {
		_, obj, ok := strings.Cut(p, "/o/")
		return obj, ok
	}
	for _, api := range []string{"/storage/v1/", "/upload/", "/download/", "/_internal/", "/batch/"} {
		if strings.HasPrefix(p, api) {
			return "", false
		}
	}
	_, obj, ok := strings.Cut(strings.TrimPrefix(p, "/bucket"), "/")
	return obj, ok && obj != ""
}

// takeDownloads returns the downloads since the last call.
func (e *gcsEmulator) takeDownloads() []gcsDownload {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.downloads
	e.downloads = nil
	return d
}

// put stores content as bucket/name.
func (e *gcsEmulator) put(name string, content []byte) {
	e.srv.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "bucket", Name: name},
		Content:     content,
	})
}

// objects returns the content of every object under prefix, by name.
func (e *gcsEmulator) objects(t *testing.T, prefix string) map[string][]byte {
	t.Helper()
	attrs, _, err := e.srv.ListObjectsWithOptions("bucket", fakestorage.ListOptions{Prefix: prefix})
	if err != nil {
		t.Fatalf("listing gs://bucket/%s: %v", prefix, err)
	}
	out := map[string][]byte{}
	for _, a := range attrs {
		o, err := e.srv.GetObject("bucket", a.Name)
		if err != nil {
			t.Fatalf("reading gs://bucket/%s: %v", a.Name, err)
		}
		out[a.Name] = o.Content
	}
	return out
}

// uploadDigits copies the digits shards to gs://bucket/in/ and returns their
// sizes by object name.
func uploadDigits(t *testing.T, e *gcsEmulator) map[string]int64 {
	t.Helper()
	paths, err := filepath.Glob(digits)
	if err != nil || len(paths) != 2 {
		t.Fatalf("glob %s = %v, %v; want two shards", digits, paths, err)
	}
	sizes := map[string]int64{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := "in/" + filepath.Base(p)
		e.put(name, b)
		sizes[name] = int64(len(b))
	}
	return sizes
}

// embedded executes on Beam's Prism in this process, through runners.Run as
// `relabel run` does (TestMain has called beam.Init).
func embedded(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	return runners.Run(ctx, p, runners.Options{})
}

// quickConfig relabels in with fewer rounds and samples than the defaults:
// enough to change hundreds of labels, quick enough for a test.
func quickConfig(in, out string) pipelines.Options {
	o := pipelines.Defaults()
	o.Rounds, o.L = 4, 100
	o.Input, o.Output, o.Format = in, out, shardio.Parquet
	return o
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// comparable clears what legitimately differs between two runs of the same
// input at different places: paths and timings.
func comparable(s pipelines.Summary) pipelines.Summary {
	s.Input, s.Output, s.Timings = "", "", nil
	s.Shards = append([]stages.ShardReport(nil), s.Shards...)
	for i := range s.Shards {
		s.Shards[i].Input = ""
	}
	return s
}

// TestRunGCS relabels gs://bucket/in/*.parquet into gs://bucket/out/ on the
// emulator and checks the result equals a local run's byte for byte, that
// nothing temporary is left, and that every read was a ranged read.
func TestRunGCS(t *testing.T) {
	ctx := ctxT(t)
	localDir := t.TempDir()
	localSum, err := pipelines.Run(ctx, quickConfig(digits, localDir), embedded)
	if err != nil {
		t.Fatalf("local run: %v", err)
	}
	if localSum.Rows != 1797 || localSum.Changed < 100 {
		t.Fatalf("local run: %d rows, %d changed; want 1797 rows and at least 100 changed", localSum.Rows, localSum.Changed)
	}

	e := startGCS(t)
	sizes := uploadDigits(t, e)
	cfg := quickConfig("gs://bucket/in/*.parquet", "gs://bucket/out/")

	// Planning reads the footers and the label column only (to find C):
	// a column-projected read, far less than the objects.
	if _, err := pipelines.MakePlan(ctx, cfg); err != nil {
		t.Fatalf("MakePlan: %v", err)
	}
	served := map[string]int64{}
	for _, d := range e.takeDownloads() {
		served[d.object] += d.bytes
		if d.rangeHeader == "" {
			t.Errorf("planning downloaded %s without a Range header (%d bytes)", d.object, d.bytes)
		}
	}
	for name, size := range sizes {
		t.Logf("planning read %d of the %d bytes of %s", served[name], size, name)
		if served[name] == 0 || served[name] > size/4 {
			t.Errorf("planning read %d of the %d bytes of %s; want some, and at most a quarter (footer and label column)", served[name], size, name)
		}
	}

	gsSum, err := pipelines.Run(ctx, cfg, embedded)
	if err != nil {
		t.Fatalf("gs:// run: %v", err)
	}
	// Every read of the run is ranged; none fetches a whole object.
	downloads := e.takeDownloads()
	if len(downloads) == 0 {
		t.Errorf("the gs:// run downloaded nothing from the emulator")
	}
	for _, d := range downloads {
		size, isInput := sizes[d.object]
		switch {
		case !isInput:
		case d.rangeHeader == "":
			t.Errorf("the run downloaded %s without a Range header (%d bytes)", d.object, d.bytes)
		case d.bytes >= size:
			t.Errorf("the run downloaded all %d bytes of %s in one request (Range %s)", size, d.object, d.rangeHeader)
		}
	}

	got := e.objects(t, "out/")
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	wantNames := []string{"out/noisy-idn-0.4-part-0000.parquet", "out/noisy-idn-0.4-part-0001.parquet", "out/summary.json"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("objects under gs://bucket/out/ = %q, want %q (and no temporary ones)", names, wantNames)
	}
	for _, name := range wantNames[:2] {
		want, err := os.ReadFile(filepath.Join(localDir, strings.TrimPrefix(name, "out/")))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[name], want) {
			t.Errorf("gs://bucket/%s (%d bytes) differs from the local run's output (%d bytes)", name, len(got[name]), len(want))
		}
	}
	var fromGCS pipelines.Summary
	if err := json.Unmarshal(got["out/summary.json"], &fromGCS); err != nil {
		t.Fatalf("gs://bucket/out/summary.json: %v", err)
	}
	if fromGCS.Output != "gs://bucket/out/" || fromGCS.Input != cfg.Input {
		t.Errorf("summary.json names input %q and output %q, want %q and %q", fromGCS.Input, fromGCS.Output, cfg.Input, cfg.Output)
	}
	if a, b := comparable(fromGCS), comparable(*localSum); !reflect.DeepEqual(a, b) {
		t.Errorf("gs:// summary.json differs from the local run's:\n got %+v\nwant %+v", a, b)
	}
	if a, b := comparable(*gsSum), comparable(*localSum); !reflect.DeepEqual(a, b) {
		t.Errorf("gs:// Run's summary differs from the local run's:\n got %+v\nwant %+v", a, b)
	}

	// The output exists now: a second run refuses to replace it.
	if _, err := pipelines.Run(ctx, cfg, embedded); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("second run into gs://bucket/out/ = %v, want an error asking for --overwrite", err)
	}
}

// TestRunGCSFailedWrite cuts the connection of every output upload but the
// first, part-way through its body: the run must fail and leave nothing under
// gs://bucket/out/, neither a final object nor the temporary shard that was
// written before the failure.
func TestRunGCSFailedWrite(t *testing.T) {
	e := startGCS(t)
	uploadDigits(t, e)
	e.mu.Lock()
	e.cutAfter = 16 << 10 // the shards are ~40 KiB; reports are smaller
	allowed := 1
	e.cut = func() bool { // called with e.mu held
		if allowed > 0 {
			allowed--
			return false
		}
		return true
	}
	e.mu.Unlock()

	start := time.Now()
	_, err := pipelines.Run(ctxT(t), quickConfig("gs://bucket/in/*.parquet", "gs://bucket/out/"), embedded)
	if err == nil {
		t.Fatalf("the run succeeded although an output upload was cut")
	}
	t.Logf("run failed after %v: %v", time.Since(start).Round(time.Millisecond), firstLine(err))
	e.mu.Lock()
	up := e.uploads
	e.mu.Unlock()
	if up.ok != 1 || up.cut < 1 {
		t.Fatalf("shard uploads: %d completed, %d cut; the test needs one completed (a temporary object to clean up) and one cut", up.ok, up.cut)
	}
	if left := e.objects(t, "out/"); len(left) != 0 {
		var names []string
		for name := range left {
			names = append(names, name)
		}
		sort.Strings(names)
		t.Errorf("after the failed run gs://bucket/out/ holds %q, want nothing", names)
	}
	if in := e.objects(t, "in/"); len(in) != 2 {
		t.Errorf("after the failed run gs://bucket/in/ holds %d objects, want the 2 inputs untouched", len(in))
	}
}

func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}
