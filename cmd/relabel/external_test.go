package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/runners"
)

// TestRunExternalFromElsewhere runs on a worker pool whose workers run in
// another directory than relabel run. A relative --input and --output name
// the launcher's files (the workers would look for them in their own
// directory and fail once the job runs): summary.json records the input
// made absolute, and the output is where the launcher's relative path
// says. And the launcher shows every round the workers start, as a run in
// one process does, without the raw lines that carry them.
func TestRunExternalFromElsewhere(t *testing.T) {
	t.Setenv(runners.WorkerTokenEnv, "")
	t.Setenv(runners.WorkerTokenFileEnv, "")
	addr, log := startWorkerPoolIn(t, t.TempDir(), "--max-workers", "2")
	launch := t.TempDir()
	if err := os.Mkdir(filepath.Join(launch, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(onePart)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(launch, "in", "part.parquet"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	const rounds = 3
	cmd := exec.Command(relabelBin, "run", "--input", "in/*.parquet", "--output", "out", "--report=false",
		"--rounds", fmt.Sprint(rounds), "--environment_type=EXTERNAL", "--environment_config="+addr, "--worker_binary="+relabelBin)
	cmd.Dir = launch
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("relabel run with relative paths on a pool elsewhere: %v\nstderr: %s\npool log:\n%s", err, tail(stderr.String(), 3000), tail(log.String(), 3000))
	}
	sb, err := os.ReadFile(filepath.Join(launch, "out", "summary.json"))
	if err != nil {
		t.Fatalf("no summary.json under the launcher's out/: %v", err)
	}
	var sum struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal(sb, &sum); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(launch, "in", "*.parquet"); sum.Input != want {
		t.Errorf("summary.json input %q, want the launcher's relative glob made absolute, %q", sum.Input, want)
	}
	for r := 1; r <= rounds; r++ {
		if want := fmt.Sprintf("relabel: round %d/%d\n", r, rounds); !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q: the workers' round does not reach the launcher:\n%s", want, tail(stderr.String(), 2000))
		}
	}
	if strings.Contains(stderr.String(), "relabel progress ") {
		t.Errorf("stderr shows the relayed lines themselves:\n%s", tail(stderr.String(), 2000))
	}
}

// TestRunExternalRelativeNoWorkingDirectory: a relative --input that cannot
// be made absolute (the launcher's working directory is gone) is refused
// with exit 2 naming the flag and saying why, before anything is submitted
// (the pool address is closed: reaching it would fail with exit 1).
func TestRunExternalRelativeNoWorkingDirectory(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `cd "$1" && rmdir "$1" && exec "$2" run --input 'in/*.parquet' --output /nonexistent/out --environment_type=EXTERNAL --environment_config="$3" --worker_binary="$2"`,
		"sh", gone, relabelBin, freePort(t))
	cmd.Env = append(os.Environ(), runners.WorkerTokenEnv+"=", runners.WorkerTokenFileEnv+"=", "PWD=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\n%s", err, stderr.String())
	}
	for _, want := range []string{"--input in/*.parquet: relative", "other processes", "give an absolute path"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
