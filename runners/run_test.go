package runners_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/relabel/relabel/runners"
	"github.com/relabel/relabel/runners/runnertest"
)

// TestMain moves the tests into a private network namespace, so the Prism
// job server they start is reachable from them only.
func TestMain(m *testing.M) { runnertest.Main(m) }

func init() {
	register.Function1x2[int, int, int](byResidue)
	beam.RegisterDoFn(reflect.TypeOf((*writeFn)(nil)).Elem())
	register.Iter1[int]()
	beam.RegisterDoFn(reflect.TypeOf((*sleepFn)(nil)).Elem())
}

// byResidue keys n by n mod 3, so the pipeline shuffles.
func byResidue(n int) (int, int) { return n % 3, n }

// writeFn writes one file per key with the key's sorted values and their
// sum: a side effect the runner must perform on its workers.
type writeFn struct {
	Dir string
}

func (f *writeFn) ProcessElement(key int, values func(*int) bool) error {
	var vs []int
	for v := 0; values(&v); {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	sum := 0
	for _, v := range vs {
		sum += v * v
	}
	out := fmt.Sprintf("key %d values %v sum of squares %d\n", key, vs, sum)
	return os.WriteFile(filepath.Join(f.Dir, fmt.Sprintf("key-%d.txt", key)), []byte(out), 0o644)
}

// testPipeline writes key-{0,1,2}.txt under dir.
func testPipeline(dir string) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	ns := make([]int, 30)
	for i := range ns {
		ns[i] = i + 1
	}
	kv := beam.ParDo(s, byResidue, beam.CreateList(s, ns))
	beam.ParDo0(s, &writeFn{Dir: dir}, beam.GroupByKey(s, kv))
	return p
}

// readDir returns every file under dir by name.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestUniversalMatchesEmbedded submits the pipeline to Beam's standalone
// Prism job server, a separate process, as runner universal with a LOOPBACK
// environment, and checks it writes exactly what the embedded run writes.
func TestUniversalMatchesEmbedded(t *testing.T) {
	ctx := ctxT(t)
	embedded, remote := t.TempDir(), t.TempDir()
	if _, err := runners.Run(ctx, testPipeline(embedded), runners.Options{}); err != nil {
		t.Fatalf("embedded prism run: %v", err)
	}
	endpoint := runnertest.StartPrism(t)
	if _, err := runners.Run(ctx, testPipeline(remote), runners.Options{
		Runner:          runners.Universal,
		Endpoint:        endpoint,
		EnvironmentType: runners.Loopback,
		JobName:         "relabel-runners-test",
		Timeout:         3 * time.Minute,
	}); err != nil {
		t.Fatalf("universal run against %s: %v", endpoint, err)
	}
	if got := runnertest.Jobs(t, endpoint)["relabel-runners-test"]; got != "DONE" {
		t.Errorf("the standalone job server reports job relabel-runners-test as %q, want DONE", got)
	}
	want, got := readDir(t, embedded), readDir(t, remote)
	if len(want) != 3 || !strings.Contains(want["key-0.txt"], "sum of squares 3465") {
		t.Fatalf("embedded run wrote %q, want key-{0,1,2}.txt with key 0's sum of squares 3465", want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("universal run wrote %q, embedded run wrote %q", got, want)
	}
	// And again, to check flags from the previous Run do not leak: an
	// embedded run after a universal one must not reuse its endpoint.
	again := t.TempDir()
	if _, err := runners.Run(ctx, testPipeline(again), runners.Options{Runner: "prism"}); err != nil {
		t.Fatalf("second embedded run: %v", err)
	}
	if got := readDir(t, again); !reflect.DeepEqual(got, want) {
		t.Errorf("second embedded run wrote %q, want %q", got, want)
	}
}

// sleepFn blocks until its context ends or a minute passes.
type sleepFn struct{}

func (sleepFn) ProcessElement(ctx context.Context, _ int) error {
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
	}
	return nil
}

// TestRunTimeout checks a job that does not finish in Options.Timeout ends
// the wait with an error instead of hanging.
func TestRunTimeout(t *testing.T) {
	endpoint := runnertest.StartPrism(t)
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, &sleepFn{}, beam.Create(s, 1))
	start := time.Now()
	_, err := runners.Run(ctxT(t), p, runners.Options{
		Runner: runners.Universal, Endpoint: endpoint, EnvironmentType: runners.Loopback,
		Timeout: 2 * time.Second,
	})
	elapsed := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 2s") {
		t.Errorf("Run of a stuck job = %v, want a timeout error", err)
	}
	if elapsed > 20*time.Second {
		t.Errorf("Run of a stuck job returned after %v, want soon after its 2s timeout", elapsed)
	}
}

// TestRunUnreachableEndpoint checks a wrong job server address fails in
// seconds, on one line that names it.
func TestRunUnreachableEndpoint(t *testing.T) {
	for _, endpoint := range []string{
		"127.0.0.1:1",       // nothing listens: refused
		"10.255.255.1:8099", // no route (or a silent drop: the dial timeout)
	} {
		for _, runner := range []string{runners.Universal, runners.Flink, runners.Prism} {
			start := time.Now()
			_, err := runners.Run(ctxT(t), testPipeline(t.TempDir()), runners.Options{
				Runner: runner, Endpoint: endpoint, EnvironmentType: runners.Loopback,
			})
			elapsed := time.Since(start)
			switch {
			case err == nil:
				t.Errorf("%s %s: Run succeeded", runner, endpoint)
			case !strings.Contains(err.Error(), "job server at "+endpoint+" is unreachable"):
				t.Errorf("%s %s: Run error %q does not say the endpoint is unreachable", runner, endpoint, err)
			case strings.Contains(err.Error(), "\n"):
				t.Errorf("%s %s: Run error is not one line: %q", runner, endpoint, err)
			}
			if elapsed > 10*time.Second {
				t.Errorf("%s %s: Run took %v to fail", runner, endpoint, elapsed)
			}
		}
	}
}

// noCredentials makes Application Default Credentials unfindable.
func noCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
}

// TestDataflowNoCredentials checks a Dataflow submission without credentials
// fails before uploading anything, fast, on one clear line.
func TestDataflowNoCredentials(t *testing.T) {
	noCredentials(t)
	self, _ := os.Executable()
	start := time.Now()
	_, err := runners.Run(ctxT(t), testPipeline(t.TempDir()), runners.Options{
		Runner:       runners.Dataflow,
		WorkerBinary: self,
		Dataflow:     runners.DataflowOptions{Project: "p", Region: "us-central1", TempLocation: "gs://b/tmp"},
	})
	elapsed := time.Since(start)
	if err == nil {
		t.Fatalf("Run without credentials succeeded")
	}
	for _, want := range []string{"no Google Cloud credentials", "gcloud auth application-default login", "missing.json"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("took %v to fail", elapsed)
	}
}

// TestDataflowInvalidBeforeCredentials checks option errors come first, from
// Validate, before anything looks for credentials or the network.
func TestDataflowInvalidBeforeCredentials(t *testing.T) {
	noCredentials(t)
	_, err := runners.Run(ctxT(t), testPipeline(t.TempDir()), runners.Options{
		Runner:   runners.Dataflow,
		Dataflow: runners.DataflowOptions{Project: "p", TempLocation: "gs://b/tmp", DryRun: true},
	})
	if err == nil || !strings.Contains(err.Error(), "--region") || strings.Contains(err.Error(), "credentials") {
		t.Errorf("Run without a region = %v, want the missing --region reported (and not credentials)", err)
	}
}

// TestDataflowDryRun checks a dry run translates the job without
// credentials, a worker binary or the network.
func TestDataflowDryRun(t *testing.T) {
	noCredentials(t)
	start := time.Now()
	res, err := runners.Run(ctxT(t), testPipeline(t.TempDir()), runners.Options{
		Runner:   runners.Dataflow,
		JobName:  "relabel-dry-run",
		Dataflow: runners.DataflowOptions{Project: "p", Region: "us-central1", TempLocation: "gs://b/tmp", MaxWorkers: 3, DryRun: true},
	})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if res != nil {
		t.Errorf("dry run returned a result %v, want nil (nothing ran)", res)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("dry run took %v", d)
	}
	for name, want := range map[string]string{"staging_location": "gs://b/tmp/staging", "max_num_workers": "3", "dry_run": "true"} {
		if got := flag.Lookup(name).Value.String(); got != want {
			t.Errorf("Beam flag --%s = %q, want %q", name, got, want)
		}
	}
}

// TestFromFlags checks Options round-trip through Beam's flags.
func TestFromFlags(t *testing.T) {
	set := map[string]string{
		"runner": "dataflow", "endpoint": "", "environment_type": "docker", "environment_config": "img:1",
		"worker_binary": "/w", "job_name": "j", "project": "p", "region": "r", "temp_location": "gs://b/t",
		"staging_location": "gs://b/s", "service_account_email": "a@b", "network": "n", "subnetwork": "s",
		"worker_machine_type": "", "machine_type": "m1", "max_num_workers": "7", "dry_run": "true",
	}
	for name, v := range set {
		old := flag.Lookup(name).Value.String()
		if err := flag.Set(name, v); err != nil {
			t.Fatalf("flag.Set(%s): %v", name, err)
		}
		t.Cleanup(func() { flag.Set(name, old) })
	}
	want := runners.Options{
		Runner: "dataflow", EnvironmentType: "docker", EnvironmentConfig: "img:1", WorkerBinary: "/w", JobName: "j",
		Dataflow: runners.DataflowOptions{
			Project: "p", Region: "r", TempLocation: "gs://b/t", StagingLocation: "gs://b/s", ServiceAccount: "a@b",
			Network: "n", Subnetwork: "s", MachineType: "m1", MaxWorkers: 7, DryRun: true,
		},
	}
	if got := runners.FromFlags(); !reflect.DeepEqual(got, want) {
		t.Errorf("FromFlags() = %+v, want %+v", got, want)
	}
}

// TestBuildWorker cross-compiles a tiny main package and checks the result
// is accepted as a worker binary.
func TestBuildWorker(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/worker\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(src)
	dst := filepath.Join(t.TempDir(), "worker")
	if err := runners.BuildWorker(ctxT(t), ".", dst); err != nil {
		t.Fatalf("BuildWorker: %v", err)
	}
	o := runners.Options{Runner: "flink", Endpoint: "h:8099", WorkerBinary: dst}
	if err := o.Validate(); err != nil {
		t.Errorf("the built worker is rejected: %v", err)
	}
	if err := runners.BuildWorker(ctxT(t), "./nonexistent", dst); err == nil || !strings.Contains(err.Error(), "./nonexistent") {
		t.Errorf("BuildWorker(./nonexistent) = %v, want an error naming the package", err)
	}
}
