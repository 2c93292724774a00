package pipelines_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/transforms/crowd"
)

// TestCrowdSpill: annotator-aware runs with their EM batches, models and
// (with features) candidate posteriors spilled to files (what relabel run does on the embedded runner) write the same bytes
// as with them in the runner's memory (--spill-dir none), in label-only mode
// and with features, and remove their spill directory.
func TestCrowdSpill(t *testing.T) {
	const C = 5
	cr := crowd.Simulate(800, C, 3, crowdAnnotators(), 23)
	dir := t.TempDir()
	items := filepath.Join(dir, "items", "items.parquet")
	os.MkdirAll(filepath.Dir(items), 0o755)
	writeCrowdItems(t, items, cr, C, true)
	annDir := filepath.Join(dir, "ann")
	os.MkdirAll(annDir, 0o755)
	writeCrowdAnnotations(t, annDir, cr)
	for _, tc := range []struct{ name, input, annotations string }{
		{"label-only", "", filepath.Join(annDir, "*.parquet")},
		{"features", items, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(spill string) string {
				out := t.TempDir()
				cfg := quickConfig(tc.input, out)
				if tc.input == "" {
					cfg = options.Defaults()
					cfg.Output = out
				}
				cfg.Annotations, cfg.CrowdIters, cfg.SpillDir = tc.annotations, 6, options.Some(spill)
				if _, err := pipelines.Run(ctxT(t), job.NewConfig(cfg), embedded); err != nil {
					t.Fatal(err)
				}
				return out
			}
			spillDir := filepath.Join(t.TempDir(), "spill")
			mem, spilled := run("none"), run(spillDir)
			files, err := os.ReadDir(mem)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range files {
				if f.Name() == "summary.json" || f.Name() == resultio.ReportName {
					continue // timings and paths differ
				}
				a, errA := os.ReadFile(filepath.Join(mem, f.Name()))
				b, errB := os.ReadFile(filepath.Join(spilled, f.Name()))
				if errA != nil || errB != nil {
					t.Fatalf("%s: %v %v", f.Name(), errA, errB)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s: the spilled run wrote different bytes", f.Name())
				}
				n++
			}
			if n < 2 {
				t.Errorf("%d output files compared, want the shards and the annotators file", n)
			}
			if left, err := os.ReadDir(spillDir); err != nil || len(left) != 0 {
				t.Errorf("spill directory after the run: %d entries (%v), want none", len(left), err)
			}
		})
	}
}
