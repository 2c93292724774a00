package pipelines_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/io/blobio/blobiotest"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/runners"
	"github.com/relabel/relabel/transforms/engine"
)

// digits is the test input: two Parquet shards of 1797 rows, C = 10.
const digits = "../testdata/digits/noisy-idn-0.4-part-*.parquet"

// uploadDigits copies the digits shards to gs://bucket/in/ and returns their
// sizes by object name.
func uploadDigits(t *testing.T, e *blobiotest.Server) map[string]int64 {
	t.Helper()
	paths, err := filepath.Glob(digits)
	if err != nil || len(paths) != 2 {
		t.Fatalf("glob %s = %v, %v; want two shards", digits, paths, err)
	}
	sizes := map[string]int64{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := "in/" + filepath.Base(p)
		e.Put(name, b)
		sizes[name] = int64(len(b))
	}
	return sizes
}

// embedded executes on Beam's Prism in this process, through runners.Run as
// `relabel run` does (TestMain has called beam.Init).
func embedded(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	return runners.Run(ctx, p, runners.Options{})
}

// quickConfig relabels in with fewer rounds and samples than the defaults:
// enough to change hundreds of labels, quick enough for a test.
func quickConfig(in, out string) options.Options {
	o := options.Defaults()
	o.Rounds, o.L = 4, 100
	// The given-label model reads the neighbours' final states, which 4
	// rounds leave short of settled: it then keeps nearly every label
	// (docs/QUALITY.md). These tests are about the pipeline, not the model.
	o.GivenLabel = options.Some(engine.GivenVote)
	o.Input, o.Output, o.Format = in, out, shardio.Parquet
	return o
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// comparable clears what legitimately differs between two runs of the same
// input at different places: paths and timings.
func comparable(s resultio.Summary) resultio.Summary {
	s.Input, s.Output, s.Timings = "", "", nil
	s.Shards = append([]resultio.ShardReport(nil), s.Shards...)
	for i := range s.Shards {
		s.Shards[i].Input = ""
	}
	return s
}

// TestRunGCS relabels gs://bucket/in/*.parquet into gs://bucket/out/ on the
// emulator and checks the result equals a local run's byte for byte, that
// nothing temporary is left, and that every read was a ranged read.
func TestRunGCS(t *testing.T) {
	ctx := ctxT(t)
	localDir := t.TempDir()
	localSum, err := pipelines.Run(ctx, job.NewConfig(quickConfig(digits, localDir)), embedded)
	if err != nil {
		t.Fatalf("local run: %v", err)
	}
	if localSum.Rows != 1797 || localSum.Changed < 100 {
		t.Fatalf("local run: %d rows, %d changed; want 1797 rows and at least 100 changed", localSum.Rows, localSum.Changed)
	}

	e := blobiotest.Start(t, "bucket")
	sizes := uploadDigits(t, e)
	cfg := quickConfig("gs://bucket/in/*.parquet", "gs://bucket/out/")

	// Planning reads the footers and the label column only (to find C):
	// a column-projected read, far less than the objects.
	if _, err := job.Resolve(ctx, cfg); err != nil {
		t.Fatalf("MakePlan: %v", err)
	}
	served := map[string]int64{}
	for _, d := range e.TakeDownloads() {
		served[d.Object] += d.Bytes
		if d.Range == "" {
			t.Errorf("planning downloaded %s without a Range header (%d bytes)", d.Object, d.Bytes)
		}
	}
	for name, size := range sizes {
		t.Logf("planning read %d of the %d bytes of %s", served[name], size, name)
		if served[name] == 0 || served[name] > size/4 {
			t.Errorf("planning read %d of the %d bytes of %s; want some, and at most a quarter (footer and label column)", served[name], size, name)
		}
	}

	gsSum, err := pipelines.Run(ctx, job.NewConfig(cfg), embedded)
	if err != nil {
		t.Fatalf("gs:// run: %v", err)
	}
	// Every read of the run is ranged; none fetches a whole object.
	downloads := e.TakeDownloads()
	if len(downloads) == 0 {
		t.Errorf("the gs:// run downloaded nothing from the emulator")
	}
	for _, d := range downloads {
		size, isInput := sizes[d.Object]
		switch {
		case !isInput:
		case d.Range == "":
			t.Errorf("the run downloaded %s without a Range header (%d bytes)", d.Object, d.Bytes)
		case d.Bytes >= size:
			t.Errorf("the run downloaded all %d bytes of %s in one request (Range %s)", size, d.Object, d.Range)
		}
	}

	got := e.Objects(t, "out/")
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	wantNames := []string{"out/noisy-idn-0.4-part-0000.parquet", "out/noisy-idn-0.4-part-0001.parquet", "out/summary.json"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("objects under gs://bucket/out/ = %q, want %q (and no temporary ones)", names, wantNames)
	}
	for _, name := range wantNames[:2] {
		want, err := os.ReadFile(filepath.Join(localDir, strings.TrimPrefix(name, "out/")))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[name], want) {
			t.Errorf("gs://bucket/%s (%d bytes) differs from the local run's output (%d bytes)", name, len(got[name]), len(want))
		}
	}
	var fromGCS resultio.Summary
	if err := json.Unmarshal(got["out/summary.json"], &fromGCS); err != nil {
		t.Fatalf("gs://bucket/out/summary.json: %v", err)
	}
	if fromGCS.Output != "gs://bucket/out/" || fromGCS.Input != cfg.Input {
		t.Errorf("summary.json names input %q and output %q, want %q and %q", fromGCS.Input, fromGCS.Output, cfg.Input, cfg.Output)
	}
	if a, b := comparable(fromGCS), comparable(*localSum); !reflect.DeepEqual(a, b) {
		t.Errorf("gs:// summary.json differs from the local run's:\n got %+v\nwant %+v", a, b)
	}
	if a, b := comparable(*gsSum), comparable(*localSum); !reflect.DeepEqual(a, b) {
		t.Errorf("gs:// Run's summary differs from the local run's:\n got %+v\nwant %+v", a, b)
	}

	// The output exists now: a second run refuses to replace it.
	if _, err := pipelines.Run(ctx, job.NewConfig(cfg), embedded); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("second run into gs://bucket/out/ = %v, want an error asking for --overwrite", err)
	}
}

// TestRunGCSFailedWrite cuts the connection of every output upload but the
// first, part-way through its body: the run must fail and leave nothing under
// gs://bucket/out/, neither a final object nor the temporary shard that was
// written before the failure.
func TestRunGCSFailedWrite(t *testing.T) {
	e := blobiotest.Start(t, "bucket")
	uploadDigits(t, e)
	allowed := 1
	// The shards are ~40 KiB; reports are smaller.
	e.CutUploads(16<<10, func() bool { // called with e's lock held
		if allowed > 0 {
			allowed--
			return false
		}
		return true
	})

	start := time.Now()
	_, err := pipelines.Run(ctxT(t), job.NewConfig(quickConfig("gs://bucket/in/*.parquet", "gs://bucket/out/")), embedded)
	if err == nil {
		t.Fatalf("the run succeeded although an output upload was cut")
	}
	t.Logf("run failed after %v: %v", time.Since(start).Round(time.Millisecond), firstLine(err))
	up := e.Uploads()
	if up.OK != 1 || up.Cut < 1 {
		t.Fatalf("shard uploads: %d completed, %d cut; the test needs one completed (a temporary object to clean up) and one cut", up.OK, up.Cut)
	}
	if left := e.Objects(t, "out/"); len(left) != 0 {
		var names []string
		for name := range left {
			names = append(names, name)
		}
		sort.Strings(names)
		t.Errorf("after the failed run gs://bucket/out/ holds %q, want nothing", names)
	}
	if in := e.Objects(t, "in/"); len(in) != 2 {
		t.Errorf("after the failed run gs://bucket/in/ holds %d objects, want the 2 inputs untouched", len(in))
	}
}

func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}
