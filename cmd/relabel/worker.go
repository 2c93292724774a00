package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/container/tools"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/grpc"
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
const workerUsage = `Usage: relabel worker [--listen HOST:PORT] [--work-dir DIR]

Serves Beam's worker pool API (BeamFnExternalWorkerPool) and starts each SDK
worker a job server asks for as a separate relabel process, with its own
temporary directory (TMPDIR) under --work-dir, removed when the worker exits;
workers run in the pool's working directory.
Submit with --environment_type=EXTERNAL --environment_config=HOST:PORT.
The workers run this binary: it must be the same build as the relabel that
submits (the DoFns are looked up by name). It prints the address it listens
on, then runs until SIGINT or SIGTERM, which stops its workers.

`

func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("relabel worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, workerUsage)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "localhost:50000", "address to serve the worker pool API on (HOST:PORT; port 0 picks a free one). Anyone who reaches it can start workers: keep it on localhost or a private network")
	workDir := fs.String("work-dir", "", "directory for the workers' temporary directories (default: the system temporary directory)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, port, err := net.SplitHostPort(*listen); err != nil || port == "" {
		return usageError{fmt.Errorf("--listen %q: want HOST:PORT", *listen)}
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
	p := &workerPool{exe: exe, dir: dir, log: &syncWriter{w: stderr}, workers: map[string]*poolWorker{}}
	srv := grpc.NewServer()
	fnpb.RegisterBeamFnExternalWorkerPoolServer(srv, p)
	fmt.Fprintf(stdout, "relabel worker: serving the worker pool on %s\n", lis.Addr())
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

	log     *syncWriter // the pool's and its workers' output
	mu      sync.Mutex
	workers map[string]*poolWorker
	stopped bool
}

type poolWorker struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// provisionTimeout bounds the wait for the job server's provision API.
const provisionTimeout = time.Minute

// StartWorker starts one SDK worker: it fetches the job's pipeline options,
// makes the worker's directory and runs this executable in worker mode there.
func (p *workerPool) StartWorker(ctx context.Context, req *fnpb.StartWorkerRequest) (*fnpb.StartWorkerResponse, error) {
	id := req.GetWorkerId()
	fail := func(format string, args ...any) (*fnpb.StartWorkerResponse, error) {
		msg := fmt.Sprintf("relabel worker %s: "+format, append([]any{id}, args...)...)
		p.logf("%s", msg)
		return &fnpb.StartWorkerResponse{Error: msg}, nil
	}
	switch {
	case id == "":
		return fail("no worker id")
	case req.GetControlEndpoint().GetUrl() == "" || req.GetLoggingEndpoint().GetUrl() == "":
		return fail("the request lacks the control or logging endpoint")
	case req.GetControlEndpoint().GetAuthentication() != nil || req.GetLoggingEndpoint().GetAuthentication() != nil:
		return fail("authenticated endpoints are not supported")
	}
	p.mu.Lock()
	_, dup := p.workers[id]
	stopped := p.stopped
	p.mu.Unlock()
	if stopped {
		return fail("the pool is stopping")
	}
	if dup {
		return fail("a worker with this id is running")
	}

	dir, err := os.MkdirTemp(p.dir, "relabel-worker-")
	if err != nil {
		return fail("%v", err)
	}
	env := append(os.Environ(), "TMPDIR="+dir)
	if ep := req.GetProvisionEndpoint().GetUrl(); ep != "" {
		pctx, cancel := context.WithTimeout(grpcx.WriteWorkerID(context.Background(), id), provisionTimeout)
		info, err := tools.ProvisionInfo(pctx, ep)
		cancel()
		if err != nil {
			os.RemoveAll(dir)
			return fail("provision info from %s: %v", ep, err)
		}
		opts, err := tools.ProtoToJSON(info.GetPipelineOptions())
		if err != nil {
			os.RemoveAll(dir)
			return fail("pipeline options: %v", err)
		}
		file := filepath.Join(dir, "pipeline_options.json")
		if err := os.WriteFile(file, []byte(opts), 0o600); err != nil {
			os.RemoveAll(dir)
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
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return fail("starting %s: %v", p.exe, err)
	}
	w := &poolWorker{cmd: cmd, done: make(chan struct{})}
	p.mu.Lock()
	p.workers[id] = w
	p.mu.Unlock()
	p.logf("relabel worker: started worker %s as process %d in %s", id, cmd.Process.Pid, dir)
	go func() {
		err := cmd.Wait()
		os.RemoveAll(dir)
		p.mu.Lock()
		if p.workers[id] == w {
			delete(p.workers, id)
		}
		p.mu.Unlock()
		p.logf("relabel worker: worker %s (process %d) exited: %s", id, cmd.Process.Pid, exitText(err))
		close(w.done)
	}()
	return &fnpb.StartWorkerResponse{}, nil
}

// StopWorker ends a worker: SIGTERM, then SIGKILL after a grace period.
func (p *workerPool) StopWorker(_ context.Context, req *fnpb.StopWorkerRequest) (*fnpb.StopWorkerResponse, error) {
	p.mu.Lock()
	w, ok := p.workers[req.GetWorkerId()]
	p.mu.Unlock()
	if !ok {
		// Already gone (it exits by itself when the job ends).
		return &fnpb.StopWorkerResponse{}, nil
	}
	w.stop()
	return &fnpb.StopWorkerResponse{}, nil
}

// stopGrace is how long a worker has to exit after SIGTERM.
const stopGrace = 10 * time.Second

func (w *poolWorker) stop() {
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
