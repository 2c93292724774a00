package runners

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	"golang.org/x/oauth2/google"
)

// Short limits for the checks that make Run fail fast: a job server that
// does not accept a TCP connection in dialTimeout is reported unreachable
// (Beam itself would wait two minutes), and credentials that cannot be found
// in credsTimeout are reported missing (the metadata-server probe off Google
// Cloud can otherwise take long).
const (
	dialTimeout  = 5 * time.Second
	credsTimeout = 10 * time.Second
	// cancelGrace is how long Run waits, after its deadline, for the runner
	// to notice the cancelled context and clean up (the loopback worker).
	cancelGrace = 5 * time.Second
)

// runMu serializes Run: Beam's runners read their configuration from
// process-wide flags, which Run sets.
var runMu sync.Mutex

// workerToken is the EXTERNAL worker pool's token for the Run holding runMu
// ("" none), which executePortable adds to the pipeline.
var workerToken string

// executors are the entry points, per runner name: Beam's for Dataflow, and
// for the portable runners relabel's own submission (portable.go), whose
// embedded Prism listens on loopback only and which leaves no file behind.
var executors = map[string]func(context.Context, *beam.Pipeline) (beam.PipelineResult, error){
	Prism:     executePrism,
	Universal: executeUniversal,
	Flink:     executeUniversal, // Beam's flink runner is universal under another name
	Dataflow:  dataflow.Execute,
}

// Run validates o, checks what can fail fast (the job server answers, Dataflow
// credentials exist), points Beam's global flags at o and executes p, waiting
// at most o.Timeout for the job to finish. beam.Init must have been called
// (as in main, after flag.Parse). A Dataflow dry run returns a nil result.
// Runs are serialized: Beam's runners read process-wide flags.
func Run(ctx context.Context, p *beam.Pipeline, o Options) (beam.PipelineResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !beam.Initialized() {
		return nil, errors.New("runners: beam.Init() has not been called; call it in main after flag.Parse, before building the pipeline")
	}
	r := o.runner()
	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if o.Endpoint != "" {
		if err := checkEndpoint(ctx, o.Endpoint); err != nil {
			return nil, err
		}
	}
	if o.IsPrism() && o.Endpoint == "" && o.environment() == External {
		// The embedded runner dials the pool itself: check it answers
		// before the worker binary is staged (tens of seconds).
		if err := checkDial(ctx, o.EnvironmentConfig, "the worker pool", "is `relabel worker` running there, and is --environment_config right?"); err != nil {
			return nil, err
		}
	}
	if r == Dataflow && !o.Dataflow.DryRun {
		if err := checkCredentials(ctx); err != nil {
			return nil, err
		}
	}
	if o.needsWorker() && o.WorkerBinary == "" {
		dir, err := os.MkdirTemp("", "relabel-worker-")
		if err != nil {
			return nil, fmt.Errorf("runners: building the worker binary: %w", err)
		}
		defer os.RemoveAll(dir)
		o.WorkerBinary = filepath.Join(dir, "relabel-worker")
		if err := BuildWorker(ctx, o.WorkerPackage, o.WorkerBinary); err != nil {
			return nil, err
		}
	}

	runMu.Lock()
	defer runMu.Unlock()
	if err := setFlags(o); err != nil {
		return nil, err
	}

	type result struct {
		res beam.PipelineResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := executors[r](ctx, p)
		done <- result{res, err}
	}()
	select {
	case out := <-done:
		if out.err != nil {
			return out.res, fmt.Errorf("runners: %s: %w", r, out.err)
		}
		return out.res, nil
	case <-ctx.Done():
		// Give a context-aware runner a moment to stop its loopback worker;
		// Dataflow's waiter ignores the context, so do not wait forever.
		select {
		case <-done:
		case <-time.After(cancelGrace):
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("runners: %s: job did not finish within %v (Options.Timeout); a job on a cluster may still be running there", r, timeout)
		}
		return nil, fmt.Errorf("runners: %s: %w", r, ctx.Err())
	}
}

// checkEndpoint dials the job server once, briefly, so that a wrong address
// fails in seconds with one line instead of Beam's two-minute dial.
func checkEndpoint(ctx context.Context, endpoint string) error {
	return checkDial(ctx, endpoint, "job server", "is the job server running, and is the address right?")
}

// checkDial dials what at addr once, briefly; the error says hint.
func checkDial(ctx context.Context, addr, what, hint string) error {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("runners: %s at %s is unreachable (%s): %s", what, addr, hint, oneLine(err))
	}
	c.Close()
	return nil
}

// checkCredentials looks for Application Default Credentials, as the Dataflow
// runner will, but with a deadline and a message that says how to fix it.
func checkCredentials(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, credsTimeout)
	defer cancel()
	found := make(chan error, 1)
	go func() {
		_, err := google.FindDefaultCredentials(ctx, "https://www.googleapis.com/auth/cloud-platform")
		found <- err
	}()
	var err error
	select {
	case err = <-found:
	case <-ctx.Done():
		err = fmt.Errorf("none found within %v", credsTimeout)
	}
	if err != nil {
		return fmt.Errorf("runners: dataflow: no Google Cloud credentials (run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file): %s", oneLine(err))
	}
	return nil
}

// oneLine flattens a multi-line error message.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// BuildWorker cross-compiles the main package pkg (an import path, or a
// ./path relative to the current directory) into a static linux/amd64 binary
// at dst, as Beam's containers and Dataflow's workers need.
func BuildWorker(ctx context.Context, pkg, dst string) error {
	if pkg == "" {
		return errors.New("runners: building the worker binary: no package given")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("runners: building the worker binary from %s needs the Go toolchain on PATH (or pass a prebuilt --worker_binary): %w", pkg, err)
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-o", dst, pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("runners: building the worker binary from %s: %v: %s", pkg, err, oneLine(errors.New(string(out))))
	}
	return nil
}

// setFlags points every Beam flag Run manages at o, resetting those o leaves
// empty, so that nothing leaks from an earlier Run or from the command line.
func setFlags(o Options) error {
	r, env := o.runner(), o.environment()
	envConfig := o.EnvironmentConfig
	if env == Process {
		envConfig, _ = processConfig(envConfig) // checked by Validate
	}
	if env == Loopback {
		envConfig = ""
	}
	d := o.Dataflow
	staging := ""
	if r == Dataflow {
		staging = d.stagingLocation()
	}
	values := []struct{ name, value string }{
		// jobopts
		{"endpoint", o.Endpoint},
		{"environment_type", strings.ToLower(env)},
		{"environment_config", envConfig},
		{"worker_binary", o.WorkerBinary},
		{"job_name", o.JobName},
		// gcpopts
		{"project", d.Project},
		{"region", d.Region},
		// dataflow
		{"temp_location", d.TempLocation},
		{"staging_location", staging},
		{"service_account_email", d.ServiceAccount},
		{"network", d.Network},
		{"subnetwork", d.Subnetwork},
		{"worker_machine_type", d.MachineType},
		{"machine_type", ""}, // Beam's alias, which would win over an empty worker_machine_type
		{"max_num_workers", strconv.Itoa(d.MaxWorkers)},
		{"dry_run", strconv.FormatBool(d.DryRun)},
	}
	workerToken = ""
	if env == External {
		t, err := o.workerToken() // checked by Validate
		if err != nil {
			return err
		}
		workerToken = t
	}
	for _, v := range values {
		if flag.Lookup(v.name) == nil {
			return fmt.Errorf("runners: Beam flag --%s is not registered (Beam version mismatch?)", v.name)
		}
		if err := flag.Set(v.name, v.value); err != nil {
			return fmt.Errorf("runners: setting Beam flag --%s=%q: %w", v.name, v.value, err)
		}
	}
	return nil
}
