package pipelines_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
)

// TestRunRefusesLake: Run is for plain runs; a lake configuration (an
// output table, or --incremental) is package lake's, and Run refuses it
// before it plans or writes anything, rather than relabel everything as
// a plain run would (and drop the manifest the next incremental run needs).
func TestRunRefusesLake(t *testing.T) {
	for name, set := range map[string]func(*options.Options){
		"incremental":  func(o *options.Options) { o.Lake.Incremental = true },
		"output-table": func(o *options.Options) { o.Lake.OutputTable = "ns.out" },
	} {
		out := filepath.Join(t.TempDir(), "out")
		o := quickConfig(digits, out)
		set(&o)
		_, err := pipelines.Run(context.Background(), job.NewConfig(o), embedded)
		if err == nil || !strings.Contains(err.Error(), "package lake") {
			t.Errorf("%s: %v, want a refusal naming package lake", name, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: %s was made (%v)", name, out, err)
		}
	}
}
