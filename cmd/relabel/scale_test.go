package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scaleResult is one run of the relabel binary that TestMain built.
type scaleResult struct {
	code           int
	stdout, stderr string
	wall           time.Duration
}

// relabelEnv runs the binary with args, the environment changed by env (an
// empty value removes the variable).
func relabelEnv(t *testing.T, env map[string]string, args ...string) scaleResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, relabelBin, args...)
	for _, kv := range os.Environ() {
		if _, ok := env[strings.SplitN(kv, "=", 2)[0]]; !ok {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		if v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var outb, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &errb
	start := time.Now()
	err := cmd.Run()
	r := scaleResult{stdout: outb.String(), stderr: errb.String(), wall: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("relabel %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// noGoogle is an environment without Google credentials: the key file named
// does not exist, and no gcloud configuration can be found.
func noGoogle(t *testing.T) map[string]string {
	return map[string]string{
		"GOOGLE_APPLICATION_CREDENTIALS": filepath.Join(t.TempDir(), "missing.json"),
		"HOME":                           t.TempDir(),
		"CLOUDSDK_CONFIG":                t.TempDir(),
		"STORAGE_EMULATOR_HOST":          "",
	}
}

// watchStorage points STORAGE_EMULATOR_HOST at a listener on 127.0.0.1 and
// returns a count of the connections made to it: any use of gs:// (a read,
// an upload) connects there.
func watchStorage(t *testing.T, env map[string]string) *atomic.Int32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	env["STORAGE_EMULATOR_HOST"] = lis.Addr().String()
	return &n
}

// TestScaleOptionsValidated checks that `relabel run` with bad runner options
// exits 2 naming every missing or wrong option, before it reads the input,
// uploads anything, looks for credentials or asks gcloud.
func TestScaleOptionsValidated(t *testing.T) {
	paths := []string{"run", "--input", "gs://bucket/in/*.parquet", "--output", "gs://bucket/out/"}
	worker := "--worker_binary=" + relabelBin
	tests := []struct {
		name string
		args []string
		want []string // in stderr
		not  []string // not in stderr
	}{
		{"dataflow without project, region, temp_location",
			[]string{"--runner=dataflow", worker},
			[]string{"needs --project", "needs --region", "needs --temp_location=gs://"}, []string{"credentials"}},
		{"dataflow without region",
			[]string{"--runner=dataflow", "--project=p", "--temp_location=gs://bucket/tmp", worker},
			[]string{"needs --region"}, []string{"--project", "--temp_location", "credentials"}},
		{"dataflow temp_location not on gs://",
			[]string{"--runner=dataflow", "--project=p", "--region=us-central1", "--temp_location=/tmp/x", worker},
			[]string{`temp_location "/tmp/x" must be gs://`}, []string{"credentials"}},
		{"dataflow without worker binary",
			[]string{"--runner=dataflow", "--project=p", "--region=us-central1", "--temp_location=gs://bucket/tmp"},
			[]string{"needs --worker_binary", "GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build"}, []string{"credentials"}},
		{"dataflow with a loopback environment",
			[]string{"--runner=dataflow", "--project=p", "--region=us-central1", "--temp_location=gs://bucket/tmp", "--environment_type=LOOPBACK", worker},
			[]string{"environment_type must be DOCKER"}, nil},
		{"flink without endpoint",
			[]string{"--runner=flink", "--environment_type=LOOPBACK"},
			[]string{"runner flink needs --endpoint=HOST:PORT"}, nil},
		{"unknown runner",
			[]string{"--runner=spark"},
			[]string{`runner "spark"`}, nil},
		{"async",
			[]string{"--runner=flink", "--endpoint=localhost:8099", "--environment_type=LOOPBACK", "--async"},
			[]string{"--async is not supported"}, nil},
		{"spill directory with workers in containers",
			[]string{"--runner=flink", "--endpoint=localhost:8099", "--environment_type=DOCKER", "--worker_binary=" + relabelBin, "--spill-dir=/tmp/spill"},
			[]string{"--spill-dir /tmp/spill: spilling needs workers in this process"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := noGoogle(t)
			conns := watchStorage(t, env)
			r := relabelEnv(t, env, append(append([]string(nil), paths...), tc.args...)...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2 (bad usage); stderr:\n%s", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(r.stderr, w) {
					t.Errorf("stderr mentions %q, which is not the problem:\n%s", w, r.stderr)
				}
			}
			if n := conns.Load(); n != 0 {
				t.Errorf("%d connections to Cloud Storage before the options were rejected, want none", n)
			}
			if r.wall > 10*time.Second {
				t.Errorf("took %v to reject the options", r.wall)
			}
		})
	}
}

// TestScaleFailsFast checks the runs that cannot start fail in seconds, with
// one line on stderr that says what to fix, and leave no output behind:
// Dataflow without credentials (gs:// paths, as Dataflow needs, and local
// ones, which reach the Dataflow runner's own check), and a Flink job server
// that is not there.
func TestScaleFailsFast(t *testing.T) {
	dataflow := []string{"--runner=dataflow", "--project=p", "--region=us-central1",
		"--temp_location=gs://bucket/tmp", "--worker_binary=" + relabelBin}
	tests := []struct {
		name   string
		local  bool // local input and output; else gs://
		args   []string
		want   []string
		within time.Duration
	}{
		{"dataflow on gs:// without credentials", false, dataflow,
			[]string{"Application Default Credentials", "missing.json"}, 5 * time.Second},
		{"dataflow without credentials", true, dataflow,
			[]string{"runners: dataflow: no Google Cloud credentials", "gcloud auth application-default login", "missing.json"}, 10 * time.Second},
		{"flink job server unreachable", true,
			[]string{"--runner=flink", "--endpoint=127.0.0.1:1", "--environment_type=LOOPBACK"},
			[]string{"job server at 127.0.0.1:1 is unreachable"}, 15 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, out := "gs://bucket/in/*.parquet", "gs://bucket/out/"
			if tc.local {
				in, out = "../../testdata/digits/noisy-idn-0.4-part-*.parquet", filepath.Join(t.TempDir(), "out")
			}
			r := relabelEnv(t, noGoogle(t), append([]string{"run", "--input", in, "--output", out}, tc.args...)...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1 (a failed run); stderr:\n%s", r.code, r.stderr)
			}
			// Progress lines may come first (the plan was made); the
			// failure is one line, the last, and nothing else is Beam's.
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			msg := lines[len(lines)-1]
			for _, l := range lines[:len(lines)-1] {
				if !strings.HasPrefix(l, "relabel: ") || strings.Contains(l, "beam") {
					t.Errorf("stderr has a line other than progress before the error: %q\n%s", l, r.stderr)
				}
			}
			if !strings.HasPrefix(msg, "relabel run: ") {
				t.Errorf("stderr %q does not start with %q", msg, "relabel run: ")
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not say %q", msg, w)
				}
			}
			if r.wall > tc.within {
				t.Errorf("took %v to fail, want at most %v", r.wall, tc.within)
			}
			if tc.local {
				if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) != 0 {
					t.Errorf("the failed run left %q in its output directory", left)
				}
				if hidden, _ := filepath.Glob(filepath.Join(out, ".*")); len(hidden) != 0 {
					t.Errorf("the failed run left %q in its output directory", hidden)
				}
			}
		})
	}
}

// TestScaleDataflowDryRun checks `relabel run --runner=dataflow --dry_run`
// prints the job request and succeeds without credentials or a worker binary,
// and writes no output. (No STORAGE_EMULATOR_HOST here: Beam's Dataflow
// runner asks Cloud Storage for the staging bucket's soft-delete policy even
// on a dry run, skipping that only when it cannot make a client.)
func TestScaleDataflowDryRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	r := relabelEnv(t, noGoogle(t), "run", "--input", "../../testdata/digits/noisy-idn-0.4-part-*.parquet", "--output", out,
		"--runner=dataflow", "--project=p", "--region=us-central1", "--temp_location=gs://bucket/tmp",
		"--job_name=relabel-dry-run", "--dry_run")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", r.code, tail(r.stderr, 2000))
	}
	for _, want := range []string{"relabel-dry-run", "beam_go_sdk:2.77.0", "gs://bucket/tmp/staging"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the printed job request does not mention %q:\n%s", want, tail(r.stderr, 2000))
		}
	}
	if !strings.Contains(r.stdout, "dry run") {
		t.Errorf("stdout %q does not say it was a dry run", r.stdout)
	}
	if r.wall > 30*time.Second {
		t.Errorf("the dry run took %v", r.wall)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) != 0 {
		t.Errorf("the dry run wrote %q", left)
	}
	if hidden, _ := filepath.Glob(filepath.Join(out, ".*")); len(hidden) != 0 {
		t.Errorf("the dry run left %q", hidden)
	}
}
