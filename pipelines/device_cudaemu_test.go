//go:build cudaemu

package pipelines_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/internal/progress"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/schemas"
)

// TestDeviceRuns relabels testdata/digits with --device cuda, the kernels
// (kNN, LLC and the rounds) run by the CPU emulator, and with --device cpu,
// in exact mode, in ivf mode with every round in one stage (the blocks as
// one batch a round on the device) and in ivf mode joined round by round
// (--local-rounds-mib 0): the emulator computes the CPU's bits (gpu/README.md),
// so the two runs write the same values (the files' bytes differ only in
// the options they record, --device among them), and the summary records
// the device that ran them.
func TestDeviceRuns(t *testing.T) {
	if !gpu.Available() {
		t.Fatalf("the emulated device is unavailable: %v", gpu.Err())
	}
	base := options.Defaults()
	base.Rounds, base.L = 3, 50
	base.Input = "../testdata/digits/noisy-idn-0.4-part-*.parquet"
	for _, c := range []struct {
		name     string
		set      func(o *options.Options)
		oneStage bool
	}{
		{"exact", func(o *options.Options) { o.Neighbours = options.NeighboursExact }, false},
		{"ivf one stage", func(o *options.Options) { ivfSpilled(t, o, -1) }, true},
		{"ivf joined", func(o *options.Options) { ivfSpilled(t, o, 0) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			outs := map[string]string{}
			for _, device := range []string{"cpu", "cuda"} {
				cfg := base
				c.set(&cfg)
				cfg.Device = device
				cfg.Output = t.TempDir()
				var mu sync.Mutex
				oneStage := false
				restore := progress.Install(func(e progress.Event) {
					mu.Lock()
					defer mu.Unlock()
					oneStage = oneStage || e.Kind == progress.Note && strings.Contains(e.Text, "rounds in one stage")
				})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				sum, err := pipelines.Run(ctx, job.NewConfig(cfg), ivfExec)
				cancel()
				restore()
				if err != nil {
					t.Fatalf("--device %s: %v", device, err)
				}
				if !strings.HasPrefix(sum.Device, device) {
					t.Errorf("--device %s: summary.json's device %q", device, sum.Device)
				}
				if want := int64(cfg.Rounds) * sum.Rows; sum.Metrics["item_rounds"] != want {
					t.Errorf("--device %s: %d item-rounds, want %d", device, sum.Metrics["item_rounds"], want)
				}
				mu.Lock()
				if cfg.Neighbours == options.NeighboursIVF && oneStage != c.oneStage {
					t.Errorf("--device %s: rounds in one stage %v, want %v", device, oneStage, c.oneStage)
				}
				mu.Unlock()
				outs[device] = cfg.Output
			}
			sameShards(t, outs["cpu"], outs["cuda"])
		})
	}
}

// ivfSpilled sets o to ivf mode spilled to a spill directory, as relabel
// run does on the embedded runner, with --local-rounds-mib local (< 0:
// the default, which holds digits' blocks).
func ivfSpilled(t *testing.T, o *options.Options, local int) {
	o.Neighbours = options.NeighboursIVF
	o.Partitions, o.NProbe = options.Some(16), options.Some(4)
	o.SpillDir = options.Some(filepath.Join(t.TempDir(), "spill"))
	if local >= 0 {
		o.LocalMiB = local
	}
}

// sameShards checks that directories a (--device cpu) and b (cuda) hold
// the same output files (summary.json aside, which records the device and
// timings) with the same columns, value for value, and the same metadata
// but the options' record, which holds --device.
func sameShards(t *testing.T, a, b string) {
	t.Helper()
	names := func(dir string) []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			if e.Name() != "summary.json" {
				out = append(out, e.Name())
			}
		}
		return out
	}
	na, nb := names(a), names(b)
	if strings.Join(na, " ") != strings.Join(nb, " ") || len(na) == 0 {
		t.Fatalf("output files differ: cpu %v, cuda %v", na, nb)
	}
	for _, n := range na {
		ma, ra := shard(t, filepath.Join(a, n))
		mb, rb := shard(t, filepath.Join(b, n))
		if len(ra) != len(rb) {
			t.Fatalf("%s: %d record batches with --device cpu, %d with cuda", n, len(ra), len(rb))
		}
		for i := range ra {
			if !array.RecordEqual(ra[i], rb[i]) {
				t.Errorf("%s: record batch %d: --device cuda wrote other values than --device cpu", n, i)
			}
			ra[i].Release()
			rb[i].Release()
		}
		for k, v := range ma {
			if mb[k] != v && k != schemas.MetaOptionPrefix+"device" {
				t.Errorf("%s: metadata %q: cpu %q, cuda %q", n, k, v, mb[k])
			}
		}
	}
}

// shard is an output file's schema metadata and its record batches
// (retained: the caller releases them).
func shard(t *testing.T, path string) (map[string]string, []arrow.RecordBatch) {
	t.Helper()
	var md map[string]string
	var recs []arrow.RecordBatch
	err := resultio.Scan(context.Background(), path, memory.DefaultAllocator, func(f *resultio.File, rec arrow.RecordBatch, _ int64) error {
		if md == nil {
			md = f.Schema.Metadata().ToMap()
		}
		rec.Retain()
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return md, recs
}
