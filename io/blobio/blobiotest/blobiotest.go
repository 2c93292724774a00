// Package blobiotest serves a fake Cloud Storage for tests of code that reads
// and writes gs:// paths through blobio: fake-gcs-server (the emulator the
// Cloud Storage client supports through STORAGE_EMULATOR_HOST) behind a
// recording proxy on 127.0.0.1. The proxy notes every object download (its
// Range header and the bytes served, to prove reads are ranged) and can drop
// chosen requests mid-body, as a network cut would, to test failed uploads.
package blobiotest

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/relabel/relabel/io/blobio"
)

// Server is a running emulator with one bucket.
type Server struct {
	// Bucket is the bucket Start made.
	Bucket string
	// Host is the proxy's 127.0.0.1:port (STORAGE_EMULATOR_HOST).
	Host string

	srv *fakestorage.Server

	mu        sync.Mutex
	downloads []Download
	requests  []*http.Request          // a copy of each request line and header
	abort     func(*http.Request) bool // nil: abort nothing
	cut       func() bool              // nil: cut no upload
	cutAfter  int
	uploads   Uploads
}

// Download is one response carrying object content.
type Download struct {
	// Object is the object's name within the bucket.
	Object string
	// Range is the request's Range header ("" for a whole-object read).
	Range string
	// Bytes is the size of the body served.
	Bytes int64
}

// Uploads counts the upload requests whose body was longer than the cut
// threshold of CutUploads: Cut of them were dropped, OK answered 200.
type Uploads struct{ Big, Cut, OK int }

// Start serves an emulator with the empty bucket, points
// STORAGE_EMULATOR_HOST at it and registers a fresh gs:// backend (whose
// client is made on first use, so it talks to this emulator) for the test's
// duration; the cleanup registers another fresh one, so no later test talks
// to a stopped server.
func Start(t testing.TB, bucket string) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("blobiotest: listen: %v", err)
	}
	s := &Server{Bucket: bucket, Host: lis.Addr().String()}
	s.srv, err = fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true,
		Scheme:     "http",
		// Requests for http://host/bucket/object are XML-API downloads only
		// when the server knows it is that host; resumable uploads continue
		// at ExternalURL, which must be the proxy so they are seen too.
		PublicHost:  s.Host,
		ExternalURL: "http://" + s.Host,
		Writer:      io.Discard,
	})
	if err != nil {
		t.Fatalf("blobiotest: fake-gcs-server: %v", err)
	}
	s.srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	hs := &http.Server{Handler: http.HandlerFunc(s.serve)}
	go hs.Serve(lis)
	t.Setenv("STORAGE_EMULATOR_HOST", s.Host)
	blobio.Register("gs", &blobio.GCS{})
	t.Cleanup(func() {
		blobio.Register("gs", &blobio.GCS{})
		hs.Close()
		s.srv.Stop()
	})
	return s
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

// drop reads a little of r's body, so the client is mid-send, then closes
// the connection without a response.
func drop(w http.ResponseWriter, r *http.Request) {
	io.CopyN(io.Discard, r.Body, 1024)
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Clone(context.Background()))
	abort := s.abort != nil && s.abort(r)
	cut, after := s.cut, s.cutAfter
	s.mu.Unlock()
	if abort {
		drop(w, r)
		return
	}
	if cut != nil && strings.HasPrefix(r.URL.Path, "/upload/") && r.Body != nil {
		head := make([]byte, after)
		got, err := io.ReadFull(r.Body, head)
		if err == nil { // longer than the threshold
			s.mu.Lock()
			s.uploads.Big++
			dropIt := cut()
			if dropIt {
				s.uploads.Cut++
			}
			s.mu.Unlock()
			if dropIt {
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
				return
			}
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(head), r.Body))
			rec := &recorder{ResponseWriter: w}
			s.srv.HTTPHandler().ServeHTTP(rec, r)
			if rec.status == http.StatusOK {
				s.mu.Lock()
				s.uploads.OK++
				s.mu.Unlock()
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(head[:got]))
	}
	rec := &recorder{ResponseWriter: w}
	s.srv.HTTPHandler().ServeHTTP(rec, r)
	if object, ok := s.downloadObject(r); ok && r.Method == http.MethodGet {
		s.mu.Lock()
		s.downloads = append(s.downloads, Download{object, r.Header.Get("Range"), rec.n})
		s.mu.Unlock()
	}
}

// downloadObject returns the object whose content r fetches: a JSON-API
// media download (.../b/BUCKET/o/OBJECT?alt=media) or an XML-API GET of
// /BUCKET/OBJECT. Metadata requests and listings are not downloads.
func (s *Server) downloadObject(r *http.Request) (string, bool) {
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
	obj, ok := strings.CutPrefix(p, "/"+s.Bucket+"/")
	return obj, ok && obj != ""
}

// Put stores content as the object name of the bucket.
func (s *Server) Put(name string, content []byte) {
	s.srv.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: s.Bucket, Name: name},
		Content:     content,
	})
}

// Objects returns the content of every object under prefix, by name.
func (s *Server) Objects(t testing.TB, prefix string) map[string][]byte {
	t.Helper()
	attrs, _, err := s.srv.ListObjectsWithOptions(s.Bucket, fakestorage.ListOptions{Prefix: prefix})
	if err != nil {
		t.Fatalf("blobiotest: listing gs://%s/%s: %v", s.Bucket, prefix, err)
	}
	out := map[string][]byte{}
	for _, a := range attrs {
		o, err := s.srv.GetObject(s.Bucket, a.Name)
		if err != nil {
			t.Fatalf("blobiotest: reading gs://%s/%s: %v", s.Bucket, a.Name, err)
		}
		out[a.Name] = o.Content
	}
	return out
}

// TakeDownloads returns the downloads since the last call.
func (s *Server) TakeDownloads() []Download {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.downloads
	s.downloads = nil
	return d
}

// ListPrefixes returns the prefix= of every object listing seen so far.
func (s *Server) ListPrefixes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/o") {
			out = append(out, r.URL.Query().Get("prefix"))
		}
	}
	return out
}

// SetAbort makes the proxy drop every request for which abort returns true,
// after reading a little of its body; nil aborts nothing. abort is called
// with the server's lock held.
func (s *Server) SetAbort(abort func(*http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abort = abort
}

// CutUploads makes the proxy read the first after bytes of each upload
// request and, for those longer than that, ask cut whether to drop the
// connection there; nil cuts nothing. cut is called with the server's lock
// held. Uploads counts what happened.
func (s *Server) CutUploads(after int, cut func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut, s.cutAfter = cut, after
}

// Uploads returns the counts of the uploads CutUploads has seen.
func (s *Server) Uploads() Uploads {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uploads
}
