package archcheck

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const (
	module = "github.com/relabel/relabel"
	beam   = "github.com/apache/beam/"
)

// goList runs `go list` with args and returns its output's lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(gobin); err != nil {
		gobin = "go"
	}
	out, err := exec.Command(gobin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// beamUsers returns, for every package matched by pattern, the Beam
// packages among its (non-test) dependencies, keyed by the package.
func beamUsers(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	lines := goList(t, "-f", "{{.ImportPath}}:{{join .Deps \",\"}}", pattern)
	if len(lines) == 0 {
		t.Fatalf("go list %s: no packages", pattern)
	}
	users := map[string][]string{}
	for _, line := range lines {
		pkg, deps, _ := strings.Cut(line, ":")
		for dep := range strings.SplitSeq(deps, ",") {
			if strings.HasPrefix(dep, beam) {
				users[pkg] = append(users[pkg], dep)
			}
		}
	}
	return users
}

// TestTransformsWithoutBeam: transforms/ holds math only; the Beam stages
// that call it live under pipelines/.
func TestTransformsWithoutBeam(t *testing.T) {
	for pkg, deps := range beamUsers(t, module+"/transforms/...") {
		t.Errorf("%s depends on %d Beam packages (first %s): transforms/ must not import Beam", pkg, len(deps), deps[0])
	}
}

// Beam-free packages: the lake (which receives a full run as a function
// value, job.Execute), the resolved job, and the kept-state and output
// codecs it reads and writes. A Beam import anywhere below them would pull
// the SDK back into every lake run's build.
var beamFree = []string{
	module + "/lake",
	module + "/job",
	module + "/io/keptio",
	module + "/io/resultio",
}

// TestBeamFree: none of beamFree depends on a Beam package.
func TestBeamFree(t *testing.T) {
	for _, pattern := range beamFree {
		for pkg, deps := range beamUsers(t, pattern) {
			t.Errorf("%s depends on %d Beam packages (first %s): it must not import Beam", pkg, len(deps), deps[0])
		}
	}
}

// optionsReaders are the packages outside cmd/ and internal/ that may
// import the options package: job, which resolves the options once into
// the Job that every later step (the pipelines, the lake) reads.
var optionsReaders = map[string]bool{module + "/job": true}

// TestOptionsOnce: no package outside cmd/ and internal/ but job imports
// options (its non-test files), so that nothing below the entry reads raw
// options or resolves a default again.
func TestOptionsOnce(t *testing.T) {
	const opts = module + "/options"
	for _, line := range goList(t, "-f", "{{.ImportPath}}:{{join .Imports \",\"}}", module+"/...") {
		pkg, imports, _ := strings.Cut(line, ":")
		rel := strings.TrimPrefix(pkg, module+"/")
		if optionsReaders[pkg] || strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "internal/") {
			continue
		}
		for imp := range strings.SplitSeq(imports, ",") {
			if imp == opts {
				t.Errorf("%s imports %s: only job resolves the options (read the job.Job instead)", pkg, opts)
			}
		}
	}
}
