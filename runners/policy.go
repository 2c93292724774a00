package runners

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Runner policy: what relabel decides from where it runs. It lives here, as
// methods of Options, so that the CLI only asks.

// IsPrism reports whether the pipeline runs on Prism (in this process or a
// standalone one). Beam's "direct" runner name is taken as Prism: the Go
// direct runner is deprecated and Prism is its replacement.
func (o Options) IsPrism() bool {
	r := o.runner()
	return r == Prism || r == "direct"
}

// Loopback reports whether the SDK workers run inside this process, and so
// share its disk and memory.
func (o Options) Loopback() bool { return o.environment() == Loopback }

// WorkerPath resolves a local path the workers open (relabel's --input,
// --output, --annotations) for where they run. Workers in this process
// (LOOPBACK) resolve it as this process does, so it is returned as it is.
// Workers in other processes (a worker pool, a PROCESS command, containers)
// would resolve a relative path against their own working directory, not
// this one, and read or write other files or none, and only once the job
// runs: so a relative path is made absolute against this process's working
// directory, which names the same files wherever the workers see this
// machine's files at the same place (a pool on this machine, a volume
// mounted alike). URLs (gs://) and absolute paths are returned as they are.
// The error, when this process cannot tell its own working directory, says
// why the path cannot stay relative.
func (o Options) WorkerPath(p string) (string, error) {
	if p == "" || o.Loopback() || strings.Contains(p, "://") || filepath.IsAbs(p) {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%s: relative, and the workers run in other processes, which resolve it against their own working directory; this process cannot tell its own (%v) to make it absolute: give an absolute path", p, err)
	}
	return filepath.Join(wd, p), nil
}

// Spill resolves ivf's spill directory: requested is the --spill-dir value
// (set says whether it was given). Spilling keeps blocks and states out of
// Prism's in-memory shuffle; it needs workers that share this process's disk
// (LOOPBACK), while a distributed runner's own shuffle spreads over workers
// and disks. It returns "" for no spilling, and an error naming the flag when
// spilling is asked for where it cannot work.
func (o Options) Spill(requested string, set bool) (string, error) {
	switch {
	case set && requested == "none":
		return "", nil
	case set && !o.Loopback():
		return "", fmt.Errorf("--spill-dir %s: spilling needs workers in this process (the embedded runner, or --environment_type=LOOPBACK)", requested)
	case set:
		return requested, nil
	case o.IsPrism() && o.Loopback():
		return os.TempDir(), nil
	}
	return "", nil
}

// Waves reports whether ivf's shuffles should be cut into waves by default:
// waves bound the embedded runner's memory; elsewhere they only add stages.
func (o Options) Waves() bool { return o.IsPrism() }

// CheckAsync refuses Beam's --async: relabel commits its output after the
// job, and an asynchronous submission returns before there is anything to
// commit.
func CheckAsync(async string) error {
	if strings.EqualFold(async, "true") {
		return errors.New("--async is not supported: relabel waits for the job to finish, then commits its output")
	}
	return nil
}

// IsDryRun reports whether the run only prints a Dataflow job request.
func (o Options) IsDryRun() bool { return o.runner() == Dataflow && o.Dataflow.DryRun }
