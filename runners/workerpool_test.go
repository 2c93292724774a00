package runners_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relabel/relabel/io/icebergio"
	"github.com/relabel/relabel/io/icebergio/icebergiotest"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/runners/runnertest"
)

// TestRelabelOnWorkerPool proves that the pipeline shares nothing between its
// workers and the process that submits it. It builds the relabel
// binary, starts Beam's standalone Prism job server (a separate process in
// this test's private network namespace) and `relabel worker`, the EXTERNAL
// worker pool, which starts every SDK worker as a separate relabel process
// with its own temporary directory. Then `relabel run` submits the exact
// path, the ivf path (which joins per round through the runner's shuffle: no
// spill directory, no rounds in one stage), an annotator-aware run and an
// Iceberg table run with --runner=universal --environment_type=EXTERNAL, and
// each output must be byte-identical to the embedded run's (which spills to
// its local temporary directory and keeps ivf's rounds in one stage). The
// launcher makes its relative input paths absolute for the workers, which
// cannot see its working directory (cmd/relabel's TestRunExternalFromElsewhere
// runs the pool elsewhere); summary.json records them so.
func TestRelabelOnWorkerPool(t *testing.T) {
	// Longer than ctxT's: a cold build of relabel takes minutes on 2 cores.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// The launcher, the pool and its workers are one relabel binary, built
	// as cmd/relabel's tests build theirs (so from the same build cache;
	// runners.BuildWorker's cgo-free cross build would compile everything
	// again), from the module cache alone: the namespace has no network.
	bin := filepath.Join(t.TempDir(), "relabel")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/relabel")
	build.Env = append(os.Environ(), "GOPROXY=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building relabel: %v\n%s", err, out)
	}
	endpoint := runnertest.StartPrism(t)
	poolTmp := t.TempDir()
	pool := startPool(t, bin, poolTmp)

	lake := filepath.Join(t.TempDir(), "lake")
	uri := "sqlite://" + filepath.Join(lake, "catalog.db")
	writeDigitsTable(t, ctx, uri)

	cases := []struct {
		name string
		args []string
		// table: the output is an Iceberg table of this name prefix
		table string
	}{
		{"exact", []string{"--input", digits, "--neighbours", "exact", "--rounds", "4", "--l", "100"}, ""},
		{"ivf", []string{"--input", digits, "--neighbours", "ivf", "--rounds", "4", "--l", "100"}, ""},
		{"annotators", []string{"--input", "../testdata/digits/annotators-5.parquet", "--rounds", "4"}, ""},
		{"iceberg", []string{"--catalog", uri, "--input-table", "ns.items", "--neighbours", "ivf", "--rounds", "3", "--l", "100"}, "ns.out_"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			launcherTmp := t.TempDir()
			embedded, external := t.TempDir(), t.TempDir()
			run := func(out string, extra ...string) {
				t.Helper()
				args := append([]string{"run", "--report=false"}, c.args...)
				if c.table != "" {
					args = append(args, "--output-table", c.table+filepath.Base(out))
				} else {
					args = append(args, "--output", filepath.Join(out, "o"))
				}
				cmd := exec.CommandContext(ctx, bin, append(args, extra...)...)
				cmd.Env = append(os.Environ(), "TMPDIR="+launcherTmp)
				if msg, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("relabel %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, msg)
				}
			}
			run(embedded)
			before := pool.started()
			job := "relabel-pool-" + c.name
			run(external, "--runner=universal", "--endpoint="+endpoint,
				"--environment_type=EXTERNAL", "--environment_config="+pool.addr,
				"--worker_binary="+bin, "--job_name="+job)
			if state := runnertest.Jobs(t, endpoint)[job]; state != "DONE" {
				t.Errorf("the job server reports job %s as %q, want DONE", job, state)
			}
			// The job's SDK workers were processes the pool started, each
			// in a directory of its own under the pool's, none of them the
			// launcher or its temporary directory.
			ws := pool.started()[len(before):]
			if len(ws) == 0 {
				t.Fatalf("the worker pool started no worker for job %s; its log:\n%s", job, pool.log.String())
			}
			dirs := map[string]bool{}
			for _, w := range ws {
				if filepath.Dir(w.dir) != poolTmp || dirs[w.dir] {
					t.Errorf("worker %s ran in %s: want a directory of its own under the pool's %s", w.id, w.dir, poolTmp)
				}
				dirs[w.dir] = true
			}
			if c.table != "" {
				compareTables(t, lake, c.table+filepath.Base(embedded), c.table+filepath.Base(external))
			} else {
				compareOutputs(t, filepath.Join(embedded, "o"), filepath.Join(external, "o"))
			}
			// The launcher's temporary directory is empty: the embedded
			// run's spill directory is gone, the external run made none, and
			// neither left Beam's beamloopbackworker-*.
			if left, _ := os.ReadDir(launcherTmp); len(left) > 0 {
				var names []string
				for _, e := range left {
					names = append(names, e.Name())
				}
				t.Errorf("the launcher's temporary directory holds %v after the runs; want it empty", names)
			}
		})
	}
	// Prism stops a job's workers when it ends; the pool removes their
	// directories as they exit.
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, _ := os.ReadDir(poolTmp)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the worker pool's directory still holds %d worker directories 30 s after the last job", len(left))
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// compareOutputs checks that two output directories hold the same shards,
// byte for byte, and the same summary.json but for where and how long.
func compareOutputs(t *testing.T, wantDir, gotDir string) {
	t.Helper()
	want, got := readRelabelOutput(t, wantDir), readRelabelOutput(t, gotDir)
	if len(want.shards) == 0 || want.summary.Changed == 0 {
		t.Fatalf("embedded run: %d shards, %d changed; want shards and changed labels", len(want.shards), want.summary.Changed)
	}
	for name, w := range want.shards {
		if g, ok := got.shards[name]; !ok {
			t.Errorf("no output shard %s", name)
		} else if !bytes.Equal(g, w) {
			t.Errorf("output shard %s (%d bytes) differs from the embedded run's (%d bytes)", name, len(g), len(w))
		}
	}
	if len(got.shards) != len(want.shards) {
		t.Errorf("%d output shards, embedded run %d", len(got.shards), len(want.shards))
	}
	// The external run read the launcher's relative glob made absolute
	// (runners.Options.WorkerPath: its workers run in the pool's directory),
	// and so its shards' paths.
	sameAbs := func(what string, got *string, want string) {
		t.Helper()
		if abs, err := filepath.Abs(want); err != nil || *got != abs {
			t.Errorf("summary.json %s %q, want the embedded run's %q made absolute", what, *got, want)
		}
		*got = want
	}
	sameAbs("input", &got.summary.Input, want.summary.Input)
	if len(got.summary.Shards) == len(want.summary.Shards) {
		for i := range got.summary.Shards {
			sameAbs("shard input", &got.summary.Shards[i].Input, want.summary.Shards[i].Input)
		}
	}
	// The options differ by the spill directory and the waves, which are
	// the runner's business; what the pipeline computed must not.
	delete(want.summary.Options, "spill-dir")
	delete(got.summary.Options, "spill-dir")
	delete(want.summary.Options, "wave-mib")
	delete(got.summary.Options, "wave-mib")
	if !reflect.DeepEqual(got.summary, want.summary) {
		t.Errorf("summary.json differs from the embedded run's:\n got %+v\nwant %+v", got.summary, want.summary)
	}
}

// compareTables checks that two Iceberg output tables of the lake hold data
// files with the same bytes (their names are the writer's own).
func compareTables(t *testing.T, lake, want, got string) {
	t.Helper()
	files := func(name string) []string {
		_, tbl, _ := strings.Cut(name, ".")
		var sums []string
		root := filepath.Join(lake, "warehouse")
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".parquet") && strings.Contains(filepath.ToSlash(p), "/"+tbl+"/") {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				s := sha256.Sum256(b)
				sums = append(sums, hex.EncodeToString(s[:]))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("reading the warehouse %s: %v", root, err)
		}
		sort.Strings(sums)
		return sums
	}
	w, g := files(want), files(got)
	if len(w) == 0 {
		t.Fatalf("the embedded run's table %s has no data files under %s/warehouse", want, lake)
	}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("table %s's data files (sha256 %v) differ from the embedded run's table %s (%v)", got, g, want, w)
	}
}

// writeDigitsTable writes the committed digits shards as the table ns.items
// of the SQLite catalog at uri, in one snapshot.
func writeDigitsTable(t *testing.T, ctx context.Context, uri string) {
	t.Helper()
	shards, err := shardio.Scan(ctx, digits, shardio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := shardio.ReadAll(ctx, shards, shardio.ReadOptions{Classes: 10, D: shards[0].D})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(strings.TrimPrefix(filepath.Dir(uri), "sqlite://"), 0o755); err != nil {
		t.Fatal(err)
	}
	cat, err := icebergio.OpenCatalog(ctx, uri, icebergio.CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	icebergiotest.Append(t, icebergiotest.CreateTable(t, cat.Iceberg(), "ns.items"), rows...)
}

// pool is a running `relabel worker`.
type pool struct {
	addr string
	log  *lockedBuffer
}

type poolWorker struct{ id, dir string }

var startedLine = regexp.MustCompile(`started worker (\S+) as process (\d+) in (\S+)`)

// started lists the workers the pool has started so far, in order.
func (p *pool) started() []poolWorker {
	var ws []poolWorker
	for _, m := range startedLine.FindAllStringSubmatch(p.log.String(), -1) {
		ws = append(ws, poolWorker{id: m[1], dir: m[3]})
	}
	return ws
}

// startPool starts `bin worker` on a free port of 127.0.0.1 with its worker
// directories under dir; it stops with the test, and its log is printed if
// the test failed.
func startPool(t *testing.T, bin, dir string) *pool {
	t.Helper()
	cmd := exec.Command(bin, "worker", "--listen", "127.0.0.1:0", "--work-dir", dir)
	log := &lockedBuffer{}
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s worker: %v", bin, err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("relabel worker did not stop within 20 s of SIGINT")
		}
		if t.Failed() {
			t.Logf("relabel worker log:\n%s", log.String())
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "relabel worker: serving the worker pool on "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("relabel worker exited before serving:\n%s", log.String())
		}
		return &pool{addr: a, log: log}
	case <-time.After(time.Minute):
		t.Fatalf("relabel worker did not say where it listens within a minute:\n%s", log.String())
		return nil
	}
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
