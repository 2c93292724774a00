package pipelines_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/pipelines"
)

// TestBuildDevice: every round stage of the graph Build makes (exact mode,
// ivf with every round in one stage, ivf joined per round) carries the
// run's --device, which its Setup resolves: a stage left with none would
// take auto, and the GPU, on a run that asked for the CPU.
func TestBuildDevice(t *testing.T) {
	base := options.Defaults()
	base.Rounds = 2
	base.Input = "../testdata/digits/noisy-idn-0.4-part-*.parquet"
	base.Device = "cpu"
	for _, c := range []struct {
		name string
		set  func(o *options.Options)
		want []string // the round DoFns' types
	}{
		{"exact", func(o *options.Options) { o.Neighbours = options.NeighboursExact }, []string{"headRoundsFn"}},
		{"exact without the head", func(o *options.Options) {
			o.Neighbours, o.Head = options.NeighboursExact, options.Some(options.HeadOff)
		}, []string{"roundsFn"}},
		{"ivf one stage", func(o *options.Options) {
			o.Neighbours, o.SpillDir = options.NeighboursIVF, options.Some(t.TempDir())
		}, []string{"localRoundsFn"}},
		// The given-label model reads the last round's states, so no round
		// is a lastRoundFn.
		{"ivf joined", func(o *options.Options) {
			o.Neighbours, o.SpillDir, o.LocalMiB = options.NeighboursIVF, options.Some(t.TempDir()), 0
		}, []string{"overlapRoundFn"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.set(&cfg)
			cfg.Output = t.TempDir()
			plan, err := job.Resolve(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			p, s := beam.NewPipelineWithRoot()
			pipelines.Build(s, plan, job.Dirs{Tmp: t.TempDir()})
			edges, _, err := p.Build()
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, e := range edges {
				if e.DoFn == nil {
					continue
				}
				v := reflect.ValueOf(e.DoFn.Recv)
				if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
					continue
				}
				name := v.Elem().Type().Name()
				d := v.Elem().FieldByName("Device")
				if !strings.Contains(strings.ToLower(name), "round") || !d.IsValid() {
					continue
				}
				if d.String() != "cpu" {
					t.Errorf("%s: Device %q, want the run's cpu", name, d.String())
				}
				if !slices.Contains(found, name) {
					found = append(found, name)
				}
			}
			slices.Sort(found)
			if !slices.Equal(found, c.want) {
				t.Errorf("round stages %v, want %v", found, c.want)
			}
		})
	}
}
