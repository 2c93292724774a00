package main

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relabel/relabel/internal/faults"
)

// A failed or stopped run leaves nothing it created (no
// empty directories, catalogs or spill paths), whatever stopped it: a second
// signal, a full disk, an unreachable job server, or a stop (SIGTERM, what
// a scheduler's or a wrapper's timeout sends; relabel has no timeout flag of
// its own) at each named point of the run.

// leftNothing fails unless base holds exactly keep (the test's own files)
// and spill, when given, is empty.
func leftNothing(t *testing.T, what, base, spill string, keep ...string) {
	t.Helper()
	if got := listDir(t, base); !slices.Equal(got, keep) {
		t.Errorf("%s: %s holds %q, want %q", what, base, got, keep)
	}
	if spill != "" {
		if got := listDir(t, spill); len(got) != 0 {
			t.Errorf("%s: spill directory holds %q", what, got)
		}
	}
}

// startRun starts relabel with env and returns once its rounds run (the
// progress line says "round 1/"): the output's temporary directory, lock
// and spill directory all exist then. wait waits for the exit and returns
// its status and stderr.
func startRun(t *testing.T, env []string, args ...string) (cmd *exec.Cmd, wait func() (int, string)) {
	t.Helper()
	cmd = exec.Command(relabelBin, args...)
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	running, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		seen := false
		for sc.Scan() {
			errb.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), "round 1/") {
				seen = true
				close(running)
			}
		}
	}()
	wait = func() (int, string) {
		<-done
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), errb.String()
	}
	select {
	case <-running:
	case <-done:
		code, stderr := wait()
		t.Fatalf("the run ended (exit %d) before its rounds started: %s", code, tail(stderr, 500))
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("no round started in 2 minutes")
	}
	return cmd, wait
}

// TestRunSecondSignal: a second signal exits at once without waiting for
// the pipeline to stop, yet the run's temporary directory, lock, spill
// directory and the output directory it made are gone. RELABEL_FAULT=
// slow-stop has the first signal not stop the pipeline, as a slow one
// would not, so the second meets every file of the run in place.
func TestRunSecondSignal(t *testing.T) {
	base, spill := t.TempDir(), t.TempDir()
	out := filepath.Join(base, "new", "out")
	cmd, wait := startRun(t, []string{faults.Env + "=slow-stop"}, append(crashArgs(out, spill), "--rounds", "400")...)
	tmps, _ := filepath.Glob(filepath.Join(out, ".relabel-tmp-*"))
	if len(tmps) == 0 || len(listDir(t, spill)) == 0 {
		t.Errorf("while the rounds run: temporary %q, spill %q; want both", tmps, listDir(t, spill))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(out, ".relabel.lock")); err != nil {
		t.Errorf("the first signal (slow-stop) already ended the run: %v", err)
	}
	cmd.Process.Signal(os.Interrupt)
	code, stderr := wait()
	if code != 130 {
		t.Errorf("after SIGTERM then SIGINT: exit %d, want 130; stderr %s", code, tail(stderr, 500))
	}
	leftNothing(t, "second signal", base, spill)
}

// TestRunStoppedAt sends the run SIGTERM at each named point
// (RELABEL_FAULT=sigterm:POINT): before the commit the run stops with 143
// and leaves nothing; once committing, it either stops the same way or
// finishes a complete output; either way no lock, temporary, spill file or
// empty directory remains.
func TestRunStoppedAt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the binary once per point")
	}
	for _, point := range []string{"locked", "pipeline-done", "commit-journal", "commit-file-0", "commit-summary"} {
		t.Run(point, func(t *testing.T) {
			base, spill := t.TempDir(), t.TempDir()
			out := filepath.Join(base, "new", "out")
			r := relabelEnv(t, map[string]string{faults.Env: faults.TermPrefix + point}, crashArgs(out, spill)...)
			t.Logf("SIGTERM at %s: exit %d", point, r.code)
			switch r.code {
			case 143:
				leftNothing(t, "SIGTERM at "+point, base, spill)
			case 0:
				if strings.HasPrefix(point, "locked") || point == "pipeline-done" {
					t.Errorf("SIGTERM at %s: exit 0, want 143 (stopped before the commit)", point)
				}
				leftNothing(t, "SIGTERM at "+point, base, spill, "new")
				got := listDir(t, out)
				for _, n := range got {
					if strings.HasPrefix(n, ".relabel") {
						t.Errorf("SIGTERM at %s: %s left in the output", point, n)
					}
				}
				if !slices.Contains(got, "summary.json") {
					t.Errorf("SIGTERM at %s: exit 0 but the output holds %q", point, got)
				}
			default:
				t.Errorf("SIGTERM at %s: exit %d, want 143 or 0; stderr %s", point, r.code, tail(r.stderr, 500))
			}
		})
	}
}

// TestRunFullDisk: the disk fills while the run writes (a tmpfs the test
// mounts, filled once the run holds its lock, after the plan's free-space
// check): the run fails naming the full disk and leaves nothing on it but
// the test's own filler and spill directory; once where the spill
// directory is (ivf), once where the output is (exact, nothing spilled).
// Needs root and tmpfs (skipped otherwise).
func TestRunFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	for _, tc := range []struct {
		name  string
		spill bool
	}{{"spill", true}, {"output", false}} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := t.TempDir()
			if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
				t.Skipf("cannot mount a tmpfs: %v %s", err, b)
			}
			defer exec.Command("umount", mnt).Run()
			out := filepath.Join(mnt, "new", "out")
			args := []string{"run", "--input", digitsShards, "--output", out, "--rounds", "20", "--neighbours", "exact"}
			keep, spill := []string{"filler"}, ""
			if tc.spill {
				spill = filepath.Join(mnt, "spill")
				if err := os.Mkdir(spill, 0o755); err != nil {
					t.Fatal(err)
				}
				args, keep = append(crashArgs(out, spill), "--rounds", "20"), []string{"filler", "spill"}
			}
			cmd := exec.Command(relabelBin, args...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Once the lock exists the plan (and its free-space check) is
			// done: fill the disk.
			filled := false
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(out, ".relabel.lock")); err == nil {
					f, err := os.Create(filepath.Join(mnt, "filler"))
					if err != nil {
						t.Fatal(err)
					}
					f.Write(make([]byte, 2<<20)) // stops at the 1 MiB: what matters is that it filled
					f.Close()
					filled = true
					break
				}
			}
			err := cmd.Wait()
			if !filled {
				t.Fatalf("the run never took its lock: %v %s", err, tail(errb.String(), 500))
			}
			t.Logf("full disk (%s): %s", tc.name, lastLine(errb.String()))
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(errb.String(), "no space left") {
				t.Errorf("full disk: exit %d, stderr %q; want 1 saying no space is left", code, tail(errb.String(), 500))
			}
			leftNothing(t, "full disk ("+tc.name+")", mnt, spill, keep...)
		})
	}
}

// TestRunJobServerUnreachable: a run submitted to a job server that is not
// there (a closed port) fails and leaves no output directory and no spill
// directory.
func TestRunJobServerUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // closed: nothing accepts there
	base, spill := t.TempDir(), t.TempDir()
	out := filepath.Join(base, "new", "out")
	r := relabelEnv(t, nil, append(crashArgs(out, spill), "--runner=flink", "--endpoint="+addr, "--environment_type=LOOPBACK")...)
	if r.code != 1 || !strings.Contains(r.stderr, "unreachable") {
		t.Errorf("job server at %s: exit %d, stderr %q; want 1 saying unreachable", addr, r.code, tail(r.stderr, 500))
	}
	leftNothing(t, "unreachable job server", base, spill)
}

// TestLakeTableSecondSignal: a table run (full, --incremental, ivf: its
// pipeline keeps the partitioning in the run's directory beside the table's
// data) stopped by a second signal while its rounds run leaves the warehouse
// as it found it: no run directory, kept partitioning or data file.
func TestLakeTableSecondSignal(t *testing.T) {
	base := t.TempDir()
	uri := "sqlite://" + filepath.Join(base, "catalog.db")
	appendTableRows(t, uri, lakeRows(0, 3000))
	before := warehouseFiles(t, base)
	cmd, wait := startRun(t, []string{faults.Env + "=slow-stop"}, "run", "--catalog", uri, "--input-table", "ns.items", "--output-table", "ns.out",
		"--incremental", "--neighbours", "ivf", "--partitions", "8", "--nprobe", "3", "--rounds", "2000", "--l", "40", "--spill-dir", "none")
	if during := warehouseFiles(t, base); len(during) <= len(before) {
		t.Errorf("while the rounds run the warehouse holds %d files, as before the run: the test no longer sees the run's files", len(during))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	if code, stderr := wait(); code != 130 {
		t.Fatalf("after SIGTERM then SIGINT: exit %d, want 130; stderr %s", code, tail(stderr, 500))
	}
	if after := warehouseFiles(t, base); !slices.Equal(after, before) {
		t.Errorf("a second signal left files in the warehouse:\nbefore %q\nafter  %q", before, after)
	}
}

// warehouseFiles lists the files and directories under base but the
// catalog's own database files, relative and sorted.
func warehouseFiles(t *testing.T, base string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		if rel != "." && !strings.HasPrefix(rel, "catalog.db") {
			got = append(got, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}
