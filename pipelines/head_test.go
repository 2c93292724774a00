package pipelines_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
)

// TestHeadRun: relabel run fits the linear head in exact mode as --head
// says (the default options.DefaultHead), records it in summary.json and
// writes the same bytes at 1 and 3 workers; --head off and a fixed share
// give other posteriors (the head has a say on these blobs in the first
// rounds). In ivf mode the head is the default where the rounds run in one
// stage (spilled, within --local-rounds-mib: pipelines/ivfstages' local
// rounds); with a join per round (not spilled: a distributed runner, or
// --local-rounds-mib 0) it is off and recorded so unless asked for, and
// asking is refused, naming the flag.
func TestHeadRun(t *testing.T) {
	const n, c, d = 600, 5, 6
	in := t.TempDir()
	writePairNoise(t, in, n, c, d)
	ctx := context.Background()
	run := func(workers int, head string) (*resultio.Summary, map[string][]byte) {
		t.Helper()
		o := options.Defaults()
		o.Input, o.Output, o.Rounds, o.L, o.Workers, o.Report = filepath.Join(in, "*.parquet"), t.TempDir(), 3, 30, options.Some(workers), false
		if head != "" {
			o.Head = options.Some(head)
		}
		sum, err := pipelines.Run(ctx, job.NewConfig(o), embedded)
		if err != nil {
			t.Fatal(err)
		}
		return sum, readOutputs(t, o.Output, "a.arrow", "b.arrow")
	}
	sum1, files1 := run(1, "")
	if got := sum1.Options["head"]; got != options.DefaultHead {
		t.Errorf("recorded head %q, want the default %q", got, options.DefaultHead)
	}
	_, files3 := run(3, "")
	for name, b := range files1 {
		if !bytes.Equal(b, files3[name]) {
			t.Errorf("%s: 1 and 3 workers wrote different bytes", name)
		}
	}
	for _, h := range []string{options.HeadOff, "0.3"} {
		if h == options.DefaultHead {
			continue
		}
		sum, files := run(2, h)
		if sum.Options["head"] != h {
			t.Errorf("--head %s: recorded %q", h, sum.Options["head"])
		}
		// The files record the options, so compare what the states make:
		// the transition estimated from the posteriors.
		if reflect.DeepEqual(sum.Transition, sum1.Transition) || len(files) != len(files1) {
			t.Errorf("--head %s: the same posteriors as the default's", h)
		}
	}

	o := options.Defaults()
	o.Input, o.Output, o.Neighbours = filepath.Join(in, "*.parquet"), t.TempDir(), options.NeighboursIVF
	plan, err := job.Resolve(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Recorded()["head"]; got != options.HeadOff {
		t.Errorf("ivf mode: recorded head %q, want off (not fitted there)", got)
	}
	o.Head = options.Some(options.HeadFit)
	var oe *options.Error
	if _, err := job.Resolve(ctx, o); !errors.As(err, &oe) || oe.Flag != "head" {
		t.Errorf("ivf mode with --head fit: %v, want an error naming --head", err)
	}
	o.Head = options.Some(options.HeadOff)
	if _, err := job.Resolve(ctx, o); err != nil {
		t.Errorf("ivf mode with --head off: %v", err)
	}
	o.Head, o.SpillDir = options.Opt[string]{}, options.Some(t.TempDir())
	for _, c := range []struct {
		local int
		want  string
	}{{options.DefaultLocalRoundsMiB, options.HeadOff}, {0, options.HeadOff}} {
		o.LocalMiB, o.Head = c.local, options.Opt[string]{}
		plan, err := job.Resolve(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := plan.Recorded()["head"]; got != c.want {
			t.Errorf("ivf mode, spilled, --local-rounds-mib %d: recorded head %q, want %q", c.local, got, c.want)
		}
		o.Head = options.Some("0.3")
		_, err = job.Resolve(ctx, o)
		if refused := errors.As(err, &oe) && oe.Flag == "head"; refused != (c.local == 0) {
			t.Errorf("ivf mode, spilled, --local-rounds-mib %d, --head 0.3: %v", c.local, err)
		}
	}
}

// readOutputs reads the named files of an output directory.
func readOutputs(t *testing.T, dir string, names ...string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}
