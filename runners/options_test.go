package runners_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relabel/relabel/runners"
)

// workerBinaries returns a linux/amd64 executable (this test binary), a copy
// of it claiming to be arm64, and a text file.
func workerBinaries(t *testing.T) (amd64, arm64, text string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	arm64 = filepath.Join(dir, "worker-arm64")
	binary.LittleEndian.PutUint16(b[18:], 183) // e_machine = EM_AARCH64
	if err := os.WriteFile(arm64, b, 0o755); err != nil {
		t.Fatal(err)
	}
	text = filepath.Join(dir, "worker.sh")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return self, arm64, text
}

func TestValidate(t *testing.T) {
	amd64, arm64, text := workerBinaries(t)
	df := runners.DataflowOptions{Project: "p", Region: "us-central1", TempLocation: "gs://b/tmp"}
	withDF := func(f func(*runners.DataflowOptions)) runners.DataflowOptions {
		d := df
		f(&d)
		return d
	}
	tests := []struct {
		name string
		o    runners.Options
		want []string // substrings of the error; none: valid
	}{
		{"zero value is embedded prism", runners.Options{}, nil},
		{"standalone prism", runners.Options{Endpoint: "localhost:8073"}, nil},
		{"endpoint without port", runners.Options{Endpoint: "localhost"}, []string{`endpoint "localhost"`}},
		{"unknown runner", runners.Options{Runner: "spark"}, []string{`runner "spark"`}},
		{"runner is case-insensitive", runners.Options{Runner: "Flink", Endpoint: "h:8099", EnvironmentType: "loopback"}, nil},
		{"universal needs endpoint", runners.Options{Runner: "universal", EnvironmentType: "LOOPBACK"}, []string{"needs --endpoint"}},
		{"flink needs endpoint", runners.Options{Runner: "flink", WorkerBinary: amd64}, []string{"needs --endpoint"}},
		{"unknown environment", runners.Options{EnvironmentType: "KUBERNETES"}, []string{`environment_type "KUBERNETES"`}},
		{"docker default needs worker", runners.Options{Runner: "flink", Endpoint: "h:8099"}, []string{"needs --worker_binary", "GOOS=linux GOARCH=amd64"}},
		{"docker with worker", runners.Options{Runner: "flink", Endpoint: "h:8099", WorkerBinary: amd64}, nil},
		{"docker with worker package", runners.Options{Runner: "flink", Endpoint: "h:8099", WorkerPackage: "./cmd/relabel"}, nil},
		{"worker is a script", runners.Options{Runner: "flink", Endpoint: "h:8099", WorkerBinary: text}, []string{"not a linux executable"}},
		{"worker is arm64", runners.Options{Runner: "flink", Endpoint: "h:8099", WorkerBinary: arm64}, []string{"not a linux/amd64 executable"}},
		{"worker missing", runners.Options{Runner: "flink", Endpoint: "h:8099", WorkerBinary: "/nonexistent/relabel"}, []string{"worker_binary", "/nonexistent/relabel"}},
		{"loopback needs no worker", runners.Options{Runner: "universal", Endpoint: "h:8099", EnvironmentType: "LOOPBACK"}, nil},
		{"process needs config", runners.Options{Runner: "universal", Endpoint: "h:8099", EnvironmentType: "PROCESS", WorkerBinary: amd64}, []string{"PROCESS", "boot"}},
		{"process with path", runners.Options{Runner: "universal", Endpoint: "h:8099", EnvironmentType: "process", EnvironmentConfig: "/opt/apache/beam/boot", WorkerBinary: amd64}, nil},
		{"process with json", runners.Options{Runner: "universal", Endpoint: "h:8099", EnvironmentType: "PROCESS", EnvironmentConfig: `{"command": "/opt/boot"}`, WorkerBinary: amd64}, nil},
		{"process json without command", runners.Options{Runner: "universal", Endpoint: "h:8099", EnvironmentType: "PROCESS", EnvironmentConfig: `{"env": {}}`, WorkerBinary: amd64}, []string{`no "command"`}},
		{"process bad json", runners.Options{Runner: "universal", Endpoint: "h:8099", EnvironmentType: "PROCESS", EnvironmentConfig: `{"command":`, WorkerBinary: amd64}, []string{"not valid JSON"}},
		{"external needs pool address", runners.Options{Runner: "universal", Endpoint: "h:8099", EnvironmentType: "EXTERNAL", WorkerBinary: amd64}, []string{"EXTERNAL", "HOST:PORT"}},
		{"external", runners.Options{Runner: "universal", Endpoint: "h:8099", EnvironmentType: "EXTERNAL", EnvironmentConfig: "localhost:50000", WorkerBinary: amd64}, nil},
		{"negative timeout", runners.Options{Timeout: -time.Second}, []string{"timeout"}},

		{"dataflow", runners.Options{Runner: "dataflow", WorkerBinary: amd64, Dataflow: df}, nil},
		{"dataflow with everything", runners.Options{Runner: "dataflow", WorkerBinary: amd64, JobName: "relabel-2024-01", Dataflow: withDF(func(d *runners.DataflowOptions) {
			d.StagingLocation, d.ServiceAccount, d.Network, d.Subnetwork = "gs://b/stage", "w@p.iam.gserviceaccount.com", "net", "regions/us-central1/subnetworks/s"
			d.MachineType, d.MaxWorkers = "n2-standard-8", 20
		})}, nil},
		{"dataflow needs project region temp", runners.Options{Runner: "dataflow", WorkerBinary: amd64}, []string{"--project", "--region", "--temp_location"}},
		{"dataflow temp not gs", runners.Options{Runner: "dataflow", WorkerBinary: amd64, Dataflow: withDF(func(d *runners.DataflowOptions) { d.TempLocation = "/tmp/x" })}, []string{`temp_location "/tmp/x" must be gs://`}},
		{"dataflow temp without bucket", runners.Options{Runner: "dataflow", WorkerBinary: amd64, Dataflow: withDF(func(d *runners.DataflowOptions) { d.TempLocation = "gs:///x" })}, []string{"temp_location"}},
		{"dataflow staging not gs", runners.Options{Runner: "dataflow", WorkerBinary: amd64, Dataflow: withDF(func(d *runners.DataflowOptions) { d.StagingLocation = "s3://b/x" })}, []string{"staging_location"}},
		{"dataflow loopback", runners.Options{Runner: "dataflow", EnvironmentType: "LOOPBACK", Dataflow: df}, []string{"must be DOCKER"}},
		{"dataflow endpoint", runners.Options{Runner: "dataflow", Endpoint: "h:1", WorkerBinary: amd64, Dataflow: df}, []string{"does not use --endpoint"}},
		{"dataflow needs worker", runners.Options{Runner: "dataflow", Dataflow: df}, []string{"needs --worker_binary"}},
		{"dataflow dry run needs no worker", runners.Options{Runner: "dataflow", Dataflow: withDF(func(d *runners.DataflowOptions) { d.DryRun = true })}, nil},
		{"dataflow job name", runners.Options{Runner: "dataflow", WorkerBinary: amd64, JobName: "My_Job", Dataflow: df}, []string{`job_name "My_Job"`}},
		{"dataflow service account", runners.Options{Runner: "dataflow", WorkerBinary: amd64, Dataflow: withDF(func(d *runners.DataflowOptions) { d.ServiceAccount = "worker" })}, []string{"service_account"}},
		{"dataflow max workers", runners.Options{Runner: "dataflow", WorkerBinary: amd64, Dataflow: withDF(func(d *runners.DataflowOptions) { d.MaxWorkers = -1 })}, []string{"max_workers"}},
		{"dataflow settings ignored elsewhere", runners.Options{Dataflow: runners.DataflowOptions{TempLocation: "/not/gs"}}, nil},
	}
	for _, tc := range tests {
		err := tc.o.Validate()
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: Validate() = %v, want nil", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Validate() = nil, want an error mentioning %q", tc.name, tc.want)
			continue
		}
		if tc.name == "unknown runner" && strings.Contains(err.Error(), "worker_binary") {
			t.Errorf("%s: Validate() = %q also asks for a worker binary (a Docker hint for a runner that does not exist)", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Validate() = %q, want it to mention %q", tc.name, err, w)
			}
		}
	}
}
