package runners

import (
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"
)

// Runner names accepted in Options.Runner.
const (
	Prism     = "prism"     // Beam's Prism, in this process (on 127.0.0.1) unless Endpoint is set
	Universal = "universal" // any portable Beam job server (Job API)
	Flink     = "flink"     // Flink's Beam job server: universal under another name
	Dataflow  = "dataflow"  // Google Cloud Dataflow
)

// Environment types accepted in Options.EnvironmentType: how the runner
// starts the Go SDK harness that executes relabel's DoFns.
const (
	// Loopback runs the harness inside the submitting process; the job server
	// connects back to it. For local testing against a job server on the
	// same machine.
	Loopback = "LOOPBACK"
	// Docker runs the harness in the Go SDK container (EnvironmentConfig is
	// the image, default apache/beam_go_sdk:<Beam version>), which fetches
	// the staged worker binary.
	Docker = "DOCKER"
	// Process runs the Go SDK boot loader as a local command on each worker
	// (EnvironmentConfig: {"command": "/path/to/boot"} or just the path).
	Process = "PROCESS"
	// External asks an already running worker pool (EnvironmentConfig:
	// its host:port) to start harnesses.
	External = "EXTERNAL"
)

// DefaultTimeout bounds a run when Options.Timeout is zero: long enough for
// a large Dataflow job, short enough that a stuck submission ends.
const DefaultTimeout = 24 * time.Hour

// Options says where and how a pipeline runs. The zero value runs on Prism
// in this process.
type Options struct {
	// Runner is prism, universal, flink or dataflow (case-insensitive).
	// Optional, default prism.
	Runner string
	// Endpoint is the job server's host:port. Required for universal and
	// flink; optional for prism (a standalone Prism; default: one started in
	// this process); not used by dataflow.
	Endpoint string
	// EnvironmentType is LOOPBACK, DOCKER, PROCESS or EXTERNAL
	// (case-insensitive). Optional, default LOOPBACK for prism and DOCKER
	// otherwise; dataflow accepts only DOCKER.
	EnvironmentType string
	// EnvironmentConfig configures the environment: the container image for
	// DOCKER, the boot command for PROCESS, the worker pool's host:port for
	// EXTERNAL. Required for PROCESS and EXTERNAL; optional for DOCKER
	// (default Beam's Go SDK image); unused for LOOPBACK.
	EnvironmentConfig string
	// WorkerBinary is a prebuilt linux/amd64 relabel binary that workers run
	// (GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build ./cmd/relabel). Required,
	// or WorkerPackage, for every environment but LOOPBACK and for dataflow
	// (unless DryRun); the binary must hold the same pipeline code as this one.
	WorkerBinary string
	// WorkerPackage is a main package (an import path, or a ./path relative
	// to the current directory) that Run cross-compiles into the worker
	// binary when WorkerBinary is empty. Optional; needs the Go toolchain and
	// the source, so prebuilt binaries are preferred in production.
	WorkerPackage string
	// JobName names the job. Optional, default a generated go-job-N-time name;
	// on dataflow it must match [a-z]([-a-z0-9]*[a-z0-9])?.
	JobName string
	// Timeout bounds the whole run, waiting for the job included. Optional,
	// default DefaultTimeout. On timeout Run returns an error; a job on a
	// remote cluster may still be running there and must be cancelled there.
	Timeout time.Duration

	// WorkerToken is the shared secret of an EXTERNAL worker pool (`relabel
	// worker --token-file`), sent with every StartWorker request. Optional,
	// default the file RELABEL_WORKER_TOKEN_FILE names, else
	// RELABEL_WORKER_TOKEN; used only with EXTERNAL.
	WorkerToken string

	// Dataflow holds the Dataflow settings; used only with runner dataflow.
	Dataflow DataflowOptions
}

// DataflowOptions are the Google Cloud Dataflow settings.
type DataflowOptions struct {
	// Project is the Google Cloud project ID. Required.
	Project string
	// Region is the Dataflow regional endpoint, e.g. us-central1. Required
	// (Beam would otherwise shell out to gcloud to guess it).
	Region string
	// TempLocation is a gs:// prefix for temporary files. Required.
	TempLocation string
	// StagingLocation is a gs:// prefix for the worker binary and pipeline
	// model. Optional, default TempLocation + "/staging".
	StagingLocation string
	// ServiceAccount is the worker service account's email. Optional,
	// default the project's Compute Engine default service account.
	ServiceAccount string
	// Network and Subnetwork place the workers. Optional, default the
	// "default" network. Subnetwork is a full URL or regions/R/subnetworks/S.
	Network    string
	Subnetwork string
	// MachineType is the worker machine type, e.g. n2-standard-8. Optional,
	// default Dataflow's choice.
	MachineType string
	// MaxWorkers caps autoscaling. Optional, default 0: Dataflow's limit.
	MaxWorkers int
	// DryRun prints the job request instead of submitting it; no credentials,
	// uploads or worker binary are needed. Optional, default false.
	DryRun bool
}

// runner returns the normalized runner name, defaulting to prism.
func (o Options) runner() string {
	r := strings.ToLower(strings.TrimSpace(o.Runner))
	if r == "" {
		return Prism
	}
	return r
}

// environment returns the normalized environment type with its default.
func (o Options) environment() string {
	e := strings.ToUpper(strings.TrimSpace(o.EnvironmentType))
	if e != "" {
		return e
	}
	if o.runner() == Prism {
		return Loopback
	}
	return Docker
}

// stagingLocation returns the staging location with its default.
func (d DataflowOptions) stagingLocation() string {
	if d.StagingLocation != "" {
		return d.StagingLocation
	}
	return strings.TrimSuffix(d.TempLocation, "/") + "/staging"
}

// needsWorker reports whether the runner will stage a worker binary.
func (o Options) needsWorker() bool {
	if o.runner() == Dataflow {
		return !o.Dataflow.DryRun
	}
	return o.environment() != Loopback
}

// dataflowJobName is Dataflow's rule for job names.
var dataflowJobName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// Validate checks every option that can be checked without the network,
// before anything is uploaded or started. All problems are reported, one per
// line, each naming the option.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("runners: "+format, args...))
	}
	r, env := o.runner(), o.environment()
	switch r {
	case Prism, Universal, Flink, Dataflow:
	default:
		bad("runner %q: want prism, universal, flink or dataflow", o.Runner)
	}
	switch env {
	case Loopback, Docker, Process, External:
	default:
		bad("environment_type %q: want LOOPBACK, DOCKER, PROCESS or EXTERNAL", o.EnvironmentType)
	}

	switch r {
	case Universal, Flink:
		if o.Endpoint == "" {
			bad("runner %s needs --endpoint=HOST:PORT of the job server (Flink's job server listens on 8099 by default)", r)
		}
	case Dataflow:
		if o.Endpoint != "" {
			bad("runner dataflow does not use --endpoint (%q); it submits to the Dataflow API of --region", o.Endpoint)
		}
		if env != Docker {
			bad("runner dataflow runs workers in containers only: environment_type must be DOCKER, not %s", env)
		}
		errs = append(errs, o.Dataflow.validate(o.JobName)...)
	}
	if o.Endpoint != "" {
		if _, port, err := net.SplitHostPort(o.Endpoint); err != nil || port == "" {
			bad("endpoint %q: want HOST:PORT", o.Endpoint)
		}
	}

	switch env {
	case Process:
		if _, err := processConfig(o.EnvironmentConfig); err != nil {
			bad("environment_type PROCESS: %v", err)
		}
	case External:
		if _, port, err := net.SplitHostPort(o.EnvironmentConfig); err != nil || port == "" {
			bad("environment_type EXTERNAL needs --environment_config=HOST:PORT of the worker pool, got %q", o.EnvironmentConfig)
		}
		if _, err := o.workerToken(); err != nil {
			bad("environment_type EXTERNAL: %v", err)
		}
	}

	if known := r == Prism || r == Universal || r == Flink || r == Dataflow; known && o.needsWorker() {
		switch {
		case o.WorkerBinary != "":
			if err := checkWorkerBinary(o.WorkerBinary); err != nil {
				bad("worker_binary: %v", err)
			}
		case o.WorkerPackage == "":
			bad("runner %s with environment %s runs relabel on remote workers and needs --worker_binary, "+
				"a linux/amd64 build: GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -o relabel-worker ./cmd/relabel", r, env)
		}
	}
	if o.Timeout < 0 {
		bad("timeout %v is negative", o.Timeout)
	}
	return errors.Join(errs...)
}

func (d DataflowOptions) validate(jobName string) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("runners: dataflow: "+format, args...))
	}
	if d.Project == "" {
		bad("needs --project, the Google Cloud project ID")
	}
	if d.Region == "" {
		bad("needs --region, e.g. us-central1 (see https://cloud.google.com/dataflow/docs/resources/locations)")
	}
	switch {
	case d.TempLocation == "":
		bad("needs --temp_location=gs://BUCKET/PATH")
	case !validGS(d.TempLocation):
		bad("temp_location %q must be gs://BUCKET/...", d.TempLocation)
	}
	if d.StagingLocation != "" && !validGS(d.StagingLocation) {
		bad("staging_location %q must be gs://BUCKET/...", d.StagingLocation)
	}
	if d.ServiceAccount != "" && !strings.Contains(d.ServiceAccount, "@") {
		bad("service_account %q is not a service account email (NAME@PROJECT.iam.gserviceaccount.com)", d.ServiceAccount)
	}
	if d.MaxWorkers < 0 {
		bad("max_workers %d is negative", d.MaxWorkers)
	}
	if jobName != "" && !dataflowJobName.MatchString(jobName) {
		bad("job_name %q: Dataflow job names are lowercase letters, digits and '-', starting with a letter", jobName)
	}
	return errs
}

// validGS reports whether p is gs://bucket or gs://bucket/...
func validGS(p string) bool {
	rest, ok := strings.CutPrefix(p, "gs://")
	bucket, _, _ := strings.Cut(rest, "/")
	return ok && bucket != ""
}

// processConfig turns the PROCESS environment config into the JSON Beam
// expects: a JSON object with "command", or a bare command path.
func processConfig(cfg string) (string, error) {
	cfg = strings.TrimSpace(cfg)
	if cfg == "" {
		return "", errors.New(`needs --environment_config, the Go SDK boot loader command: /path/to/boot or {"command": "/path/to/boot"}`)
	}
	if !strings.HasPrefix(cfg, "{") {
		b, _ := json.Marshal(map[string]string{"command": cfg})
		return string(b), nil
	}
	var p struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal([]byte(cfg), &p); err != nil {
		return "", fmt.Errorf("environment_config %q is not valid JSON: %v", cfg, err)
	}
	if p.Command == "" {
		return "", fmt.Errorf(`environment_config %q has no "command"`, cfg)
	}
	return cfg, nil
}

// checkWorkerBinary checks path is a linux/amd64 executable, the only kind
// Beam's Go containers and Dataflow's workers run.
func checkWorkerBinary(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not a linux executable (%v); build it with GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -o relabel-worker ./cmd/relabel", path, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s is a %v %v %v file, not a linux/amd64 executable; build it with GOOS=linux GOARCH=amd64 CGO_ENABLED=0", path, f.Class, f.Machine, f.Type)
	}
	return nil
}
