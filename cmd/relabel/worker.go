package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/apache/beam/sdks/v2/go/container/tools"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/runners"
)

// `relabel worker` is a Beam worker pool (the EXTERNAL environment) that starts
// every SDK worker a job server asks for as a separate relabel process, each
// in its own temporary directory. It is what runs beside each Flink
// TaskManager (a sidecar container on Kubernetes) when jobs are submitted
// with --environment_type=EXTERNAL --environment_config=HOST:PORT, and what
// runners' TestRelabelOnWorkerPool runs against a standalone Prism.
//
// Beam's Go SDK has a worker pool (sdks/go/container/pool), but it starts the
// Go container's boot loader, which downloads the staged worker binary
// through the artifact API into one shared semi-persistent directory and
// needs the container's layout; this pool runs its own executable, which
// already is the worker (main hands over to Beam on --worker), and gives each
// worker a directory of its own. Like the boot loader it fetches the job's
// pipeline options from the provision API and hands them over in
// PIPELINE_OPTIONS_FILE.
const workerUsage = `Usage: relabel worker [--listen HOST:PORT] [--work-dir DIR] [--max-workers N]
                      [--allow-remote --token-file FILE]

Serves Beam's worker pool API (BeamFnExternalWorkerPool) and starts each SDK
worker a job server asks for as a separate relabel process, with its own
temporary directory (TMPDIR) under --work-dir, removed when the worker exits;
workers run in the pool's working directory.
Submit with --environment_type=EXTERNAL --environment_config=HOST:PORT.
The workers run this binary: it must be the same build as the relabel that
submits (the DoFns are looked up by name). It prints the address it listens
on, then runs until SIGINT or SIGTERM, which stops its workers.

Anyone who reaches the pool can start workers. It listens on loopback unless
--allow-remote is given, and then only with a shared secret (--token-file, or
the environment variable ` + runners.WorkerTokenEnv + `): a StartWorker request
must carry it, as the environment parameter ` + runners.WorkerTokenParam + `
(relabel run adds it from the same variable or ` + runners.WorkerTokenFileEnv + `)
or the gRPC metadata ` + runners.WorkerTokenParam + `. At most --max-workers
workers run at once; further requests are refused.

`

func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("relabel worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, workerUsage)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "localhost:50000", "address to serve the worker pool API on (HOST:PORT; port 0 picks a free one). Anyone who reaches it can start workers: a non-loopback address needs --allow-remote and a token")
	workDir := fs.String("work-dir", "", "directory for the workers' temporary directories (default: the system temporary directory)")
	maxWorkers := fs.Int("max-workers", runtime.NumCPU(), "the most workers running at once (each runs its bundles on every core); further StartWorker requests are refused")
	allowRemote := fs.Bool("allow-remote", false, "allow a --listen address that is not loopback (it then needs a token)")
	tokenFile := fs.String("token-file", "", "file holding the shared secret every StartWorker request must carry (at least 16 characters; default: the environment variable "+runners.WorkerTokenEnv+"; none: no check, loopback only)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(*listen)
	if err != nil || port == "" {
		return usageError{fmt.Errorf("--listen %q: want HOST:PORT", *listen)}
	}
	if *maxWorkers < 1 {
		return usageError{fmt.Errorf("--max-workers %d: want at least 1", *maxWorkers)}
	}
	token, err := poolToken(*tokenFile)
	if err != nil {
		return usageError{err}
	}
	if !loopbackHost(host) {
		switch {
		case !*allowRemote:
			return usageError{fmt.Errorf("--listen %s is not a loopback address: anyone who reaches it could start workers; pass --allow-remote, with a token (--token-file or %s), to serve beyond this machine", *listen, runners.WorkerTokenEnv)}
		case token == "":
			return usageError{fmt.Errorf("--listen %s with --allow-remote needs a token (--token-file or %s) that every StartWorker request must carry", *listen, runners.WorkerTokenEnv)}
		}
	}
	dir := *workDir
	if dir == "" {
		dir = os.TempDir()
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageError{fmt.Errorf("--work-dir %s: not a directory", dir)}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("relabel worker: finding this executable: %w", err)
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("relabel worker: --listen %s: %w", *listen, err)
	}
	p := newWorkerPool(exe, dir, stderr, *maxWorkers, token)
	srv := grpc.NewServer()
	fnpb.RegisterBeamFnExternalWorkerPoolServer(srv, p)
	fmt.Fprintf(stdout, "relabel worker: serving the worker pool on %s\n", lis.Addr())
	auth := "no token: loopback only"
	if token != "" {
		auth = "requests must carry the token"
	}
	p.logf("relabel worker: at most %d workers at once; %s", p.max, auth)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	srv.Stop()
	p.stopAll()
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("relabel worker: %w", err)
	}
	return nil
}

// workerPool implements fnpb.BeamFnExternalWorkerPoolServer by starting
// relabel processes.
type workerPool struct {
	fnpb.UnimplementedBeamFnExternalWorkerPoolServer
	exe, dir string
	max      int    // the most workers at once (reserved ones included)
	token    string // the shared secret a StartWorker must carry; "" none

	log     *syncWriter // the pool's and its workers' output
	mu      sync.Mutex
	workers map[string]*poolWorker
	stopped bool
	// stopping ends with stopAll: it cancels provisioning in flight.
	stopping context.Context
	stop     context.CancelFunc
}

func newWorkerPool(exe, dir string, log io.Writer, max int, token string) *workerPool {
	ctx, cancel := context.WithCancel(context.Background())
	return &workerPool{exe: exe, dir: dir, log: &syncWriter{w: log}, workers: map[string]*poolWorker{},
		max: max, token: token, stopping: ctx, stop: cancel}
}

// poolWorker is a worker the pool runs, or one it is starting (cmd nil: its
// slot is reserved while the pool provisions it).
type poolWorker struct {
	cmd  *exec.Cmd     // set, with the process started, under the pool's lock
	done chan struct{} // closed when the worker is gone and its slot free
	host string        // the host that asked for it
}

// provisionTimeout bounds the wait for the job server's provision API.
const provisionTimeout = time.Minute

// StartWorker starts one SDK worker: it fetches the job's pipeline options,
// makes the worker's directory and runs this executable in worker mode there.
func (p *workerPool) StartWorker(ctx context.Context, req *fnpb.StartWorkerRequest) (*fnpb.StartWorkerResponse, error) {
	id := req.GetWorkerId()
	// The id comes from the caller: logged and returned only escaped and
	// bounded (safeID), and refused when it is not a plausible id.
	fail := func(format string, args ...any) (*fnpb.StartWorkerResponse, error) {
		msg := fmt.Sprintf("relabel worker %s: "+format, append([]any{safeID(id)}, args...)...)
		p.logf("%s (request from %s)", msg, peerAddr(ctx))
		return &fnpb.StartWorkerResponse{Error: msg}, nil
	}
	if !p.authorized(ctx, req) {
		return fail("refused: the request does not carry the pool's token (set %s or %s for relabel run)", runners.WorkerTokenEnv, runners.WorkerTokenFileEnv)
	}
	switch {
	case id == "":
		return fail("no worker id")
	case !validID(id):
		return fail("refused: a worker id is at most %d bytes of printable text", maxIDLen)
	case req.GetControlEndpoint().GetUrl() == "" || req.GetLoggingEndpoint().GetUrl() == "":
		return fail("the request lacks the control or logging endpoint")
	case req.GetControlEndpoint().GetAuthentication() != nil || req.GetLoggingEndpoint().GetAuthentication() != nil:
		return fail("authenticated endpoints are not supported")
	}
	// Reserve the worker's slot (and its id) before the slow part, so that
	// concurrent requests cannot pass the cap or start one id twice.
	w := &poolWorker{done: make(chan struct{}), host: peerHost(ctx)}
	p.mu.Lock()
	_, dup := p.workers[id]
	stopped, full := p.stopped, len(p.workers) >= p.max
	if !stopped && !dup && !full {
		p.workers[id] = w
	}
	p.mu.Unlock()
	switch {
	case stopped:
		return fail("the pool is stopping")
	case dup:
		return fail("a worker with this id is running")
	case full:
		return fail("refused: the pool already runs %d workers, its --max-workers", p.max)
	}
	release := func() {
		p.mu.Lock()
		if p.workers[id] == w {
			delete(p.workers, id)
		}
		p.mu.Unlock()
		close(w.done)
	}

	dir, err := os.MkdirTemp(p.dir, "relabel-worker-")
	if err != nil {
		release()
		return fail("%v", err)
	}
	env := append(os.Environ(), "TMPDIR="+dir)
	if ep := req.GetProvisionEndpoint().GetUrl(); ep != "" {
		pctx, cancel := context.WithTimeout(grpcx.WriteWorkerID(p.stopping, id), provisionTimeout)
		info, err := tools.ProvisionInfo(pctx, ep)
		cancel()
		if err != nil {
			os.RemoveAll(dir)
			release()
			return fail("provision info from %s: %v", progress.Safe(ep), err)
		}
		opts, err := tools.ProtoToJSON(info.GetPipelineOptions())
		if err != nil {
			os.RemoveAll(dir)
			release()
			return fail("pipeline options: %v", err)
		}
		file := filepath.Join(dir, "pipeline_options.json")
		if err := os.WriteFile(file, []byte(opts), 0o600); err != nil {
			os.RemoveAll(dir)
			release()
			return fail("%v", err)
		}
		env = append(env, "PIPELINE_OPTIONS_FILE="+file)
		if s := info.GetStatusEndpoint().GetUrl(); s != "" {
			env = append(env, "STATUS_ENDPOINT="+s)
		}
		if caps := info.GetRunnerCapabilities(); len(caps) > 0 {
			env = append(env, "RUNNER_CAPABILITIES="+strings.Join(caps, " "))
		}
	}
	cmd := exec.Command(p.exe,
		"--worker=true",
		"--id="+id,
		"--control_endpoint="+req.GetControlEndpoint().GetUrl(),
		"--logging_endpoint="+req.GetLoggingEndpoint().GetUrl(),
		"--semi_persist_dir="+dir,
	)
	// The worker runs in the pool's working directory, where relative local
	// paths of a job resolve (the launcher's are not visible from here: give
	// absolute paths or gs://); its temporary files go to its own dir.
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = p.log, p.log
	p.mu.Lock()
	stopped = p.stopped
	if !stopped {
		w.cmd = cmd
		err = cmd.Start()
	}
	p.mu.Unlock()
	if stopped || err != nil {
		os.RemoveAll(dir)
		release()
		if stopped {
			return fail("the pool is stopping")
		}
		return fail("starting %s: %v", p.exe, err)
	}
	p.logf("relabel worker: started worker %s as process %d in %s (request from %s)", safeID(id), cmd.Process.Pid, dir, peerAddr(ctx))
	go func() {
		err := cmd.Wait()
		os.RemoveAll(dir)
		p.logf("relabel worker: worker %s (process %d) exited: %s", safeID(id), cmd.Process.Pid, exitText(err))
		release()
	}()
	return &fnpb.StartWorkerResponse{}, nil
}

// StopWorker ends a worker: SIGTERM, then SIGKILL after a grace period.
//
// Beam's StopWorkerRequest has no room for the token (and job servers send
// no metadata), so with a token StopWorker is honoured only from the host
// that asked for the worker; the worker exits by itself anyway when its job
// server closes the control connection.
func (p *workerPool) StopWorker(ctx context.Context, req *fnpb.StopWorkerRequest) (*fnpb.StopWorkerResponse, error) {
	p.mu.Lock()
	w, ok := p.workers[req.GetWorkerId()]
	started := ok && w.cmd != nil
	p.mu.Unlock()
	if !started {
		// Already gone (it exits by itself when the job ends), or not
		// started yet.
		return &fnpb.StopWorkerResponse{}, nil
	}
	if p.token != "" && !p.authorized(ctx, nil) && peerHost(ctx) != w.host {
		msg := fmt.Sprintf("relabel worker %s: refused to stop it: the request comes from %s, not from the host that started it", safeID(req.GetWorkerId()), peerAddr(ctx))
		p.logf("%s", msg)
		return &fnpb.StopWorkerResponse{Error: msg}, nil
	}
	w.stop()
	return &fnpb.StopWorkerResponse{}, nil
}

// stopGrace is how long a worker has to exit after SIGTERM.
const stopGrace = 10 * time.Second

func (w *poolWorker) stop() {
	if w.cmd == nil || w.cmd.Process == nil {
		<-w.done // being started: the pool's stop refuses to start it
		return
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(stopGrace):
		w.cmd.Process.Kill()
		<-w.done
	}
}

// stopAll stops every worker and refuses new ones.
func (p *workerPool) stopAll() {
	p.stop()
	p.mu.Lock()
	p.stopped = true
	ws := make([]*poolWorker, 0, len(p.workers))
	for _, w := range p.workers {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.stop()
		}()
	}
	wg.Wait()
}

func (p *workerPool) logf(format string, args ...any) {
	fmt.Fprintf(p.log, format+"\n", args...)
}

// syncWriter serialises writes from the pool and its workers' output copies.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

// authorized reports whether a request may start (or stop) a worker: always
// without a token; with one, when the request carries it, as an environment
// parameter of req (what job servers forward from the pipeline) or as gRPC
// metadata.
func (p *workerPool) authorized(ctx context.Context, req *fnpb.StartWorkerRequest) bool {
	if p.token == "" {
		return true
	}
	same := func(s string) bool { return subtle.ConstantTimeCompare([]byte(s), []byte(p.token)) == 1 }
	if req != nil && same(req.GetParams()[runners.WorkerTokenParam]) {
		return true
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get(runners.WorkerTokenParam) {
		if same(v) {
			return true
		}
	}
	return false
}

// poolToken is the pool's shared secret: --token-file's, else the
// environment's (runners.WorkerToken); "" for none.
func poolToken(file string) (string, error) {
	if file != "" {
		t, err := runners.ReadWorkerToken(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		return t, nil
	}
	return runners.WorkerToken()
}

// loopbackHost reports whether --listen's host is this machine's loopback
// only: "localhost" or a loopback address. An empty host (every interface),
// a wildcard address or any other name is not.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// maxIDLen bounds the worker ids the pool accepts; logIDLen the part of an id
// a log line shows.
const (
	maxIDLen = 1024
	logIDLen = 200
)

// validID reports whether a worker id is one the pool accepts: UTF-8 of at
// most maxIDLen bytes without control characters (what Beam's job servers
// send: job-001[go-job-1-...]_go and the like). It also becomes a worker's
// --id argument.
func validID(id string) bool {
	return len(id) <= maxIDLen && progress.Safe(id) == id
}

// safeID is a worker id as a log line or an error may show it: control
// characters, escape sequences and bytes that are not UTF-8 escaped
// (progress.Safe), cut to logIDLen bytes with the length said, so that a
// caller can neither forge log lines nor flood the log.
func safeID(id string) string {
	if len(id) <= logIDLen {
		return progress.Safe(id)
	}
	cut := logIDLen
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%s...(%d bytes)", progress.Safe(id[:cut]), len(id))
}

// peerAddr is the caller's address, for the log.
func peerAddr(ctx context.Context) string {
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
		return pr.Addr.String()
	}
	return "an unknown address"
}

// peerHost is the caller's host, without the port.
func peerHost(ctx context.Context) string {
	a := peerAddr(ctx)
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}
