package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/metadata"

	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/runners"
)

// TestWorkerBadFlags: `relabel worker` refuses a bad --listen or --work-dir
// with exit status 2 and a message naming the flag, before listening.
func TestWorkerBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--listen", "no-port"}, "--listen"},
		{[]string{"--listen", "localhost:50000", "--work-dir", filepath.Join(t.TempDir(), "missing")}, "--work-dir"},
		{[]string{"--bogus"}, "-bogus"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), append([]string{"worker"}, c.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.flag) {
			t.Errorf("relabel worker %q: exit %d, stderr %q; want 2 naming %s", c.args, code, errb.String(), c.flag)
		}
		if out.Len() != 0 {
			t.Errorf("relabel worker %q printed %q: it must not serve", c.args, out.String())
		}
	}
}

// TestWorkerListenNeedsConsent: a --listen address
// beyond loopback (every interface, a LAN address, a host name) is refused
// with exit 2 unless --allow-remote is given, and then unless there is a
// token; loopback needs neither.
func TestWorkerListenNeedsConsent(t *testing.T) {
	t.Setenv(runners.WorkerTokenEnv, "")
	t.Setenv(runners.WorkerTokenFileEnv, "")
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string // "" serves
	}{
		{[]string{"--listen", ":0"}, "--allow-remote"},
		{[]string{"--listen", "0.0.0.0:0"}, "--allow-remote"},
		{[]string{"--listen", "[::]:0"}, "--allow-remote"},
		{[]string{"--listen", "example.org:0"}, "--allow-remote"},
		{[]string{"--listen", "0.0.0.0:0", "--allow-remote"}, "needs a token"},
		{[]string{"--listen", "0.0.0.0:0", "--allow-remote", "--token-file", short}, "at least 16"},
		{[]string{"--listen", "127.0.0.1:0", "--max-workers", "0"}, "--max-workers"},
		{[]string{"--listen", "127.0.0.1:0"}, ""},
		{[]string{"--listen", "localhost:0"}, ""},
		{[]string{"--listen", "127.0.0.1:0", "--token-file", token}, ""},
		{[]string{"--listen", "0.0.0.0:0", "--allow-remote", "--token-file", token}, ""},
	} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() { done <- dispatch(ctx, append([]string{"worker"}, c.args...), &out, &errb) }()
		var code int
		if c.want != "" {
			code = <-done
			cancel()
			if code != 2 || !strings.Contains(errb.String(), c.want) {
				t.Errorf("relabel worker %q: exit %d, stderr %q; want 2 naming %s", c.args, code, errb.String(), c.want)
			}
			continue
		}
		// It serves: stop it at once.
		time.Sleep(200 * time.Millisecond)
		cancel()
		code = <-done
		if code != 0 || !strings.Contains(out.String(), "serving the worker pool on") {
			t.Errorf("relabel worker %q: exit %d, stdout %q, stderr %q; want it to serve", c.args, code, out.String(), errb.String())
		}
	}
}

// fakeWorkerExe is a stand-in for the relabel binary a pool starts: a script
// that runs until killed, whatever its arguments.
func fakeWorkerExe(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "worker.sh")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

func startReq(id string, params map[string]string) *fnpb.StartWorkerRequest {
	ep := &pipepb.ApiServiceDescriptor{Url: "127.0.0.1:1"}
	return &fnpb.StartWorkerRequest{WorkerId: id, ControlEndpoint: ep, LoggingEndpoint: ep, Params: params}
}

// TestWorkerPoolCap: the pool runs at most --max-workers
// workers at once, refusing further requests until one exits.
func TestWorkerPoolCap(t *testing.T) {
	var log bytes.Buffer
	p := newWorkerPool(fakeWorkerExe(t), t.TempDir(), &log, 2, "")
	defer p.stopAll()
	ctx := context.Background()
	for i, id := range []string{"w1", "w2", "w3"} {
		resp, err := p.StartWorker(ctx, startReq(id, nil))
		if err != nil {
			t.Fatal(err)
		}
		refused := resp.GetError() != ""
		if want := i >= 2; refused != want {
			t.Fatalf("worker %s: refused %v (%q), want %v", id, refused, resp.GetError(), want)
		}
		if refused && !strings.Contains(resp.GetError(), "--max-workers") {
			t.Errorf("worker %s refused with %q: want the reason (--max-workers)", id, resp.GetError())
		}
	}
	// A duplicate id is refused too; stopping one frees its slot.
	if resp, _ := p.StartWorker(ctx, startReq("w1", nil)); !strings.Contains(resp.GetError(), "is running") {
		t.Errorf("a second w1: %q, want refused as running", resp.GetError())
	}
	if _, err := p.StopWorker(ctx, &fnpb.StopWorkerRequest{WorkerId: "w1"}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := p.StartWorker(ctx, startReq("w3", nil)); resp.GetError() != "" {
		t.Errorf("w3 after w1 stopped: refused %q", resp.GetError())
	}
}

// TestWorkerPoolToken: with a token, a StartWorker
// request must carry it, as the environment parameter job servers forward or
// as gRPC metadata.
func TestWorkerPoolToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	var log bytes.Buffer
	p := newWorkerPool(fakeWorkerExe(t), t.TempDir(), &log, 4, token)
	defer p.stopAll()
	bg := context.Background()
	withMD := func(v string) context.Context {
		return metadata.NewIncomingContext(bg, metadata.Pairs(runners.WorkerTokenParam, v))
	}
	for _, c := range []struct {
		name   string
		ctx    context.Context
		params map[string]string
		ok     bool
	}{
		{"none", bg, nil, false},
		{"wrong param", bg, map[string]string{runners.WorkerTokenParam: token + "x"}, false},
		{"prefix", bg, map[string]string{runners.WorkerTokenParam: token[:16]}, false},
		{"wrong metadata", withMD("nope"), nil, false},
		{"param", bg, map[string]string{runners.WorkerTokenParam: token}, true},
		{"metadata", withMD(token), nil, true},
	} {
		resp, err := p.StartWorker(c.ctx, startReq("w-"+strings.ReplaceAll(c.name, " ", "-"), c.params))
		if err != nil {
			t.Fatal(err)
		}
		if ok := resp.GetError() == ""; ok != c.ok {
			t.Errorf("%s: started %v (%q), want %v", c.name, ok, resp.GetError(), c.ok)
		}
	}
	if strings.Contains(log.String(), token) {
		t.Errorf("the pool's log holds the token:\n%s", log.String())
	}
}

// TestWorkerIDSanitised: a worker id is the caller's
// text; the pool refuses one with control characters or over maxIDLen bytes,
// and its log shows ids only escaped and bounded, so that no id can forge a
// log line, move the cursor or flood the log.
func TestWorkerIDSanitised(t *testing.T) {
	var log bytes.Buffer
	p := newWorkerPool(fakeWorkerExe(t), t.TempDir(), &log, 4, "")
	defer p.stopAll()
	long := strings.Repeat("x", 5000)
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"job-001[go-job-1-1764262800]_go", true},
		{"job with spaces[name]_go", true},
		{"w\nrelabel worker: started worker evil as process 1 in /", false},
		{"w\x1b]0;title\x07", false},
		{"w\x1b[2J", false},
		{"w\r", false},
		{"w\u202eevil", false},
		{"w\xff", false},
		{long, false},
	} {
		resp, _ := p.StartWorker(context.Background(), startReq(c.id, nil))
		if ok := resp.GetError() == ""; ok != c.ok {
			t.Errorf("id %q: started %v (%q), want %v", c.id, ok, resp.GetError(), c.ok)
		}
		if msg := resp.GetError(); len(msg) > 400 || progress.Safe(msg) != msg {
			t.Errorf("id %q: the error is unsafe or unbounded (%d bytes): %q", c.id, len(msg), msg)
		}
	}
	for i, line := range strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n") {
		if progress.Safe(line) != line || len(line) > 600 {
			t.Errorf("log line %d is unsafe or unbounded (%d bytes): %q", i, len(line), line)
		}
		if strings.HasPrefix(line, "relabel worker: started worker evil") {
			t.Errorf("log line %d is forged: %q", i, line)
		}
	}
}

// TestSafeID: safeID's output is always printable and bounded, whatever the
// id; a plain id is unchanged.
func TestSafeID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"job-001[go-job-1]_go", "job-001[go-job-1]_go"},
		{"a\nb", `a\nb`},
		{"\x1b[31m", `\x1b[31m`},
		{strings.Repeat("é", 150), strings.Repeat("é", 100) + "...(300 bytes)"},
	} {
		if got := safeID(c.in); got != c.want {
			t.Errorf("safeID(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzSafeID(f *testing.F) {
	for _, s := range []string{"", "job-001[x]_go", "a\nb", "\x1b]0;t\x07", "\xff\xfe", strings.Repeat("é", 300), "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got := safeID(id)
		if progress.Safe(got) != got {
			t.Fatalf("safeID(%q) = %q: not printable", id, got)
		}
		if len(got) > 4*logIDLen+32 {
			t.Fatalf("safeID of %d bytes is %d bytes: unbounded", len(id), len(got))
		}
		if strings.ContainsAny(got, "\n\r\x1b") {
			t.Fatalf("safeID(%q) = %q: holds a control character", id, got)
		}
		if validID(id) && len(id) <= logIDLen && got != id {
			t.Fatalf("safeID changed a valid short id %q to %q", id, got)
		}
	})
}
