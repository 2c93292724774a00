package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relabel/relabel/runners"
)

// onePart is one shard of the committed digits slice (899 rows): the small
// input of the runs below.
const onePart = "../../testdata/digits/noisy-idn-0.4-part-0000.parquet"

// TestEmbeddedRunListensOnLoopbackOnly: while an
// embedded `relabel run` runs, every TCP socket the process listens on is
// bound to loopback. Beam's prism.Execute served the job API on every
// interface (":0"), where anyone reaching the host could read the job's
// options, cancel it or submit a pipeline that starts any executable. The
// test polls the process's own sockets (its /proc/PID/fd socket inodes,
// looked up in /proc/PID/net/tcp and tcp6, state 0A = LISTEN) through the
// run, and also requires that it saw a listener: the job server's.
func TestEmbeddedRunListensOnLoopbackOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	tmp := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, relabelBin, "run", "--input", onePart, "--output", out, "--report=false")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := map[string]bool{} // every listening address seen, with its verdict
	polls := 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("relabel run: %v\n%s", err, tail(errb.String(), 2000))
			}
			running = false
		case <-time.After(10 * time.Millisecond):
			ls, err := listeners(cmd.Process.Pid)
			if err != nil {
				continue // the process is exiting
			}
			polls++
			for _, l := range ls {
				seen[l.String()] = l.IP.IsLoopback()
			}
		}
	}
	if len(seen) == 0 {
		t.Fatalf("saw no listening socket of relabel run in %d polls: the probe is broken (the embedded runner's job server listens during the run)", polls)
	}
	for addr, loopback := range seen {
		if !loopback {
			t.Errorf("relabel run listened on %s, which is not loopback: the embedded runner must serve on 127.0.0.1 (or ::1) only", addr)
		}
	}
	t.Logf("listening addresses seen in %d polls: %v", polls, seen)
}

// listeners returns the local addresses of the TCP sockets process pid
// listens on: its socket inodes (/proc/PID/fd) matched against the LISTEN
// rows of its network namespace's tables (/proc/PID/net/tcp, tcp6).
func listeners(pid int) ([]*net.TCPAddr, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(l, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var out []*net.TCPAddr
	for _, table := range []string{"tcp", "tcp6"} {
		rows, err := procTCP(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.state == "0A" && inodes[r.inode] {
				out = append(out, r.local)
			}
		}
	}
	return out, nil
}

// tcpRow is one socket of /proc/net/tcp or tcp6.
type tcpRow struct {
	local        *net.TCPAddr
	state, inode string
}

// procTCP parses a /proc/net/tcp or tcp6 table: local_address is the
// address as 32-bit words in host (little-endian) order, in hex, then the
// port in hex; st is the state (0A: LISTEN); inode the tenth column.
func procTCP(path string) ([]tcpRow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []tcpRow
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		addr, err := parseProcAddr(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", path, f[1], err)
		}
		rows = append(rows, tcpRow{local: addr, state: f[3], inode: f[9]})
	}
	return rows, sc.Err()
}

func parseProcAddr(s string) (*net.TCPAddr, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("no port")
	}
	raw, err := hex.DecodeString(hexIP)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, fmt.Errorf("bad address")
	}
	for i := 0; i < len(raw); i += 4 { // each 32-bit word is little-endian
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return nil, err
	}
	return &net.TCPAddr{IP: net.IP(raw), Port: int(port)}, nil
}

// TestParseProcAddr pins the /proc/net/tcp address format the listener test
// relies on.
func TestParseProcAddr(t *testing.T) {
	for _, c := range []struct {
		in, want string
		loopback bool
	}{
		{"0100007F:1F90", "127.0.0.1:8080", true},
		{"00000000:0050", "0.0.0.0:80", false},
		{"00000000000000000000000001000000:C350", "[::1]:50000", true},
		{"00000000000000000000000000000000:C350", "[::]:50000", false},
		{"0000000000000000FFFF00000100007F:0016", "127.0.0.1:22", true},
		{"0000000000000000FFFF00000B00000A:0016", "10.0.0.11:22", false},
	} {
		a, err := parseProcAddr(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if a.String() != c.want || a.IP.IsLoopback() != c.loopback {
			t.Errorf("%s: got %s (loopback %v), want %s (loopback %v)", c.in, a, a.IP.IsLoopback(), c.want, c.loopback)
		}
	}
}

// TestRunLeavesNoBeamFiles: a run leaves nothing in
// TMPDIR. Beam's runnerlib created an empty beamloopbackworker-N there on
// every LOOPBACK submission and never removed it; relabel submits with a
// placeholder of its own, removed with the run.
func TestRunLeavesNoBeamFiles(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(relabelBin, "run", "--input", onePart, "--output", out, "--report=false")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("relabel run: %v\n%s", err, tail(string(msg), 2000))
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Errorf("TMPDIR holds %v after a successful run; want it empty", names)
	}
}

// freePort returns a loopback address where nothing listens.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// failedRun runs `relabel run` on the small input with extra flags, a fresh
// TMPDIR and an output directory that does not exist, and checks the failure
// the issue asks for: the exit code, a message with want and no goroutine
// dump, within limit, and nothing left behind (no output directory, lock or
// temporary file).
func failedRun(t *testing.T, code int, want string, limit time.Duration, extra ...string) {
	t.Helper()
	tmp := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithTimeout(context.Background(), limit+time.Minute)
	defer cancel()
	args := append([]string{"run", "--input", onePart, "--output", out, "--report=false"}, extra...)
	cmd := exec.CommandContext(ctx, relabelBin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	got := 0
	if ee, ok := err.(*exec.ExitError); ok {
		got = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("relabel %s: %v", strings.Join(args, " "), err)
	}
	msg := stderr.String()
	if got != code || !strings.Contains(msg, want) {
		t.Errorf("relabel %s: exit %d in %.1fs, stderr:\n%s\nwant exit %d and a message with %q", strings.Join(extra, " "), got, wall.Seconds(), tail(msg, 3000), code, want)
	}
	if strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic") {
		t.Errorf("relabel %s: a panic or goroutine dump on stderr:\n%s", strings.Join(extra, " "), tail(msg, 3000))
	}
	if wall > limit {
		t.Errorf("relabel %s: took %.1fs, want the failure within %v", strings.Join(extra, " "), wall.Seconds(), limit)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("relabel %s: the output directory %s exists after the failed run (%v); want it never made or removed", strings.Join(extra, " "), out, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("relabel %s: TMPDIR holds %v after the failed run; want it empty", strings.Join(extra, " "), names)
	}
	t.Logf("relabel %s: exit %d in %.1fs: %s", strings.Join(extra, " "), got, wall.Seconds(), lastLine(msg))
}

// TestRunExternalNoPool: EXTERNAL with no worker pool
// at the address fails the run with exit 1 (a runner error, as README's exit
// codes say) and a message naming the pool, where Prism panicked with a
// goroutine dump (exit 2) and left the output directory, its lock and the
// temporary directory behind.
func TestRunExternalNoPool(t *testing.T) {
	t.Run("nothing listens", func(t *testing.T) {
		addr := freePort(t)
		failedRun(t, 1, "worker pool at "+addr+" is unreachable", 30*time.Second,
			"--environment_type=EXTERNAL", "--environment_config="+addr, "--worker_binary="+relabelBin)
	})
	// A port that accepts connections but is no worker pool: the embedded
	// runner's StartWorker fails there (where Prism panicked).
	t.Run("not a pool", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		failedRun(t, 1, "the SDK worker pool at "+l.Addr().String()+" did not start a worker", 2*time.Minute,
			"--environment_type=EXTERNAL", "--environment_config="+l.Addr().String(), "--worker_binary="+relabelBin)
	})
}

// TestRunProcessCommandFails: a PROCESS environment
// whose command fails (/bin/false; a config that is no command) fails the run
// at once, where Prism waited forever for a worker; a config that is broken
// JSON is bad usage, refused before anything starts.
func TestRunProcessCommandFails(t *testing.T) {
	if _, err := os.Stat("/bin/false"); err != nil {
		t.Skip("no /bin/false")
	}
	t.Run("false", func(t *testing.T) {
		failedRun(t, 1, `PROCESS environment's command "/bin/false" ended`, 2*time.Minute,
			"--environment_type=PROCESS", "--environment_config=/bin/false", "--worker_binary="+relabelBin)
	})
	t.Run("no such command", func(t *testing.T) {
		failedRun(t, 1, "did not start", 2*time.Minute,
			"--environment_type=PROCESS", "--environment_config=not a command", "--worker_binary="+relabelBin)
	})
	t.Run("not JSON", func(t *testing.T) {
		failedRun(t, 2, "not valid JSON", time.Minute,
			"--environment_type=PROCESS", `--environment_config={"command": /bin/false`, "--worker_binary="+relabelBin)
	})
}

// TestRunOnTokenPool: `relabel worker --token-file`
// refuses a run that does not carry its token (exit 1 naming the reason, no
// panic, nothing left behind) and serves one that does (relabel run reads it
// from RELABEL_WORKER_TOKEN_FILE and sends it as an environment parameter,
// which the job server, here the embedded one, forwards to the pool).
func TestRunOnTokenPool(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(runners.WorkerTokenEnv, "")
	t.Setenv(runners.WorkerTokenFileEnv, "")
	addr, log := startWorkerPool(t, "--token-file", token, "--max-workers", "2")
	pool := []string{"--environment_type=EXTERNAL", "--environment_config=" + addr, "--worker_binary=" + relabelBin}
	t.Run("without the token", func(t *testing.T) {
		failedRun(t, 1, "does not carry the pool's token", 2*time.Minute, pool...)
	})
	t.Run("with the token", func(t *testing.T) {
		t.Setenv(runners.WorkerTokenFileEnv, token)
		out := filepath.Join(t.TempDir(), "out")
		tmp := t.TempDir()
		cmd := exec.Command(relabelBin, append([]string{"run", "--input", onePart, "--output", out, "--report=false", "--rounds", "2"}, pool...)...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("relabel run on the pool with its token: %v\n%s\npool log:\n%s", err, tail(string(msg), 3000), tail(log.String(), 3000))
		}
		if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
			t.Errorf("no summary.json after the run: %v", err)
		}
		if !strings.Contains(log.String(), "started worker") {
			t.Errorf("the pool started no worker:\n%s", log.String())
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("TMPDIR holds %d entries after the run; want it empty", len(left))
		}
	})
	if strings.Contains(log.String(), "0123456789abcdef") {
		t.Errorf("the pool's log holds the token")
	}
}

// startWorkerPool starts `relabel worker` on a free loopback port with args,
// in this directory, and returns its address and log; it stops with the
// test.
func startWorkerPool(t *testing.T, args ...string) (string, *lockedBuffer) {
	t.Helper()
	return startWorkerPoolIn(t, "", args...)
}

// startWorkerPoolIn is startWorkerPool with the pool, and so its workers,
// in directory dir ("": this one).
func startWorkerPoolIn(t *testing.T, dir string, args ...string) (string, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(relabelBin, append([]string{"worker", "--listen", "127.0.0.1:0", "--work-dir", t.TempDir()}, args...)...)
	cmd.Dir = dir
	log := &lockedBuffer{}
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "relabel worker: serving the worker pool on "); ok {
			go io.Copy(io.Discard, stdout)
			return a, log
		}
	}
	t.Fatalf("relabel worker did not serve:\n%s", log.String())
	return "", nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
