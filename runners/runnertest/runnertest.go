package runnertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/relabel/relabel/runners/internal/netns"
)

// prismPkg is the standalone job server's main package in the Beam module.
const prismPkg = "github.com/apache/beam/sdks/v2/go/cmd/prism"

// isolationErr says why the tests are not isolated; nil when they are.
var isolationErr = fmt.Errorf("runnertest: TestMain must call runnertest.Main for StartPrism to work")

// Main is a TestMain: it runs the test binary again inside a private network
// namespace with only loopback up, and there runs the tests like ptest.Main
// (flag.Parse, beam.Init, m.Run). Where no namespace can be made (not Linux,
// or neither root nor unprivileged user namespaces), the tests run here and
// StartPrism fails saying why.
func Main(m *testing.M) {
	if !netns.Inside() {
		code, err := netns.Reexec()
		if err == nil {
			os.Exit(code)
		}
		isolationErr = err
	} else {
		isolationErr = netns.LoopbackUp()
	}
	os.Exit(ptest.MainRet(m))
}

var (
	buildOnce sync.Once
	prismBin  string
	buildErr  error
)

// PrismBinary returns the path of Beam's standalone Prism job server, built
// from the Beam module this binary was built with. The build is kept in the
// user cache directory, keyed by the Beam version, so later runs reuse it.
func PrismBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { prismBin, buildErr = buildPrism() })
	if buildErr != nil {
		t.Fatalf("runnertest: %v", buildErr)
	}
	return prismBin
}

func buildPrism() (string, error) {
	// The job server is built from the Beam module of the main module's
	// go.mod, the same one linked into this binary, whose version is this.
	version := core.SdkVersion
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "relabel", "runnertest")
	bin := filepath.Join(dir, fmt.Sprintf("prism-%s-%s-%s", version, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("building prism: %w", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// Build next to the final name and rename, so that test binaries of
	// several packages building at once never run a half-written file.
	tmp, err := os.CreateTemp(dir, "prism-build-*")
	if err != nil {
		return "", fmt.Errorf("building prism: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", tmp.Name(), prismPkg)
	// The namespace has no network: use only the module cache.
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", prismPkg, err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", fmt.Errorf("building prism: %w", err)
	}
	return bin, nil
}

// StartPrism starts Beam's standalone Prism job server as a separate process
// and returns its job endpoint (localhost:PORT). It stops with the test; its
// log is printed if the test failed. The test binary must run under Main.
func StartPrism(t testing.TB) string {
	t.Helper()
	if isolationErr != nil {
		t.Fatalf("runnertest: refusing to start Prism, which listens on all interfaces, outside a private network namespace: %v", isolationErr)
	}
	if only, err := netns.OnlyLoopback(); err != nil || !only {
		t.Fatalf("runnertest: the network namespace has interfaces other than loopback (%v); refusing to start Prism", err)
	}
	bin := PrismBinary(t)
	cmd := exec.Command(bin,
		"--job_port=0",       // any free port; read back from the log
		"--serve_http=false", // no web UI, no second port
		"--log_kind=json",
		// Belt and braces: a server orphaned by a killed test exits by itself.
		"--idle_shutdown_timeout=10m",
	)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("runnertest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("runnertest: starting %s: %v", bin, err)
	}
	log := &syncBuffer{}
	endpoint := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Bytes()
			log.Write(append(line, '\n'))
			if sent {
				continue
			}
			var rec struct {
				Msg      string `json:"msg"`
				Endpoint string `json:"endpoint"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "Serving JobManagement" && rec.Endpoint != "" {
				endpoint <- rec.Endpoint
				sent = true
			}
		}
		io.Copy(io.Discard, stderr)
		close(endpoint)
	}()
	waited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(waited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-waited
		if t.Failed() {
			t.Logf("prism job server log:\n%s", log.String())
		}
	})
	select {
	case ep, ok := <-endpoint:
		if !ok {
			<-waited
			t.Fatalf("runnertest: prism exited before serving:\n%s", log.String())
		}
		return ep
	case <-time.After(time.Minute):
		t.Fatalf("runnertest: prism did not report its endpoint within a minute:\n%s", log.String())
		return ""
	}
}

// Jobs asks the job server at endpoint, through the Job API, for the jobs it
// knows, and returns each job's state (DONE, FAILED, ...) by job name. A test
// uses it to prove a run went to that server and finished there.
func Jobs(t testing.TB, endpoint string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("runnertest: connecting to %s: %v", endpoint, err)
	}
	defer cc.Close()
	resp, err := jobpb.NewJobServiceClient(cc).GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatalf("runnertest: listing the jobs of %s: %v", endpoint, err)
	}
	out := map[string]string{}
	for _, j := range resp.GetJobInfo() {
		out[j.GetJobName()] = j.GetState().String()
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
