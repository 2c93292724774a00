package grid

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

// sweepVariants are the one-at-a-time departures from options.Defaults
// that docs/QUALITY.md records: every knob issue 4 names (K, mu, gamma,
// rounds, L, N, C0, EM variant, standardisation) and the method extensions
// (neighbour weights, annotation weight), each moved to both sides of its
// default where it has two.
func sweepVariants() []Variant {
	vs := []Variant{{"default", job.Defaults()}}
	add := func(name string, change func(*options.Options)) {
		o := options.Defaults()
		change(&o)
		vs = append(vs, Variant{name, job.NewConfig(o)})
	}
	add("k=5", func(o *options.Options) { o.K = 5 })
	add("k=20", func(o *options.Options) { o.K = 20 })
	add("mu=0.3", func(o *options.Options) { o.Mu = 0.3 })
	add("mu=0.7", func(o *options.Options) { o.Mu = 0.7 })
	add("gamma=0.95 (paper)", func(o *options.Options) { o.Gamma = 0.95 })
	add("gamma=0 (authors' code)", func(o *options.Options) { o.Gamma = 0 })
	add("rounds=3", func(o *options.Options) { o.Rounds = 3 })
	add("rounds=20", func(o *options.Options) { o.Rounds = 20 })
	add("l=250", func(o *options.Options) { o.L = 250 })
	add("draws=iid (paper)", func(o *options.Options) { o.Draws = mixture.IID })
	add("draws=iid l=250", func(o *options.Options) { o.Draws = mixture.IID; o.L = 250 })
	add("l=50", func(o *options.Options) { o.L = 50 })
	add("n=29 (default 2 c0 - 1)", func(o *options.Options) { o.N = options.Some(29) })
	add("c0=10 (before issue 14)", func(o *options.Options) { o.C0 = options.Some(10) })
	add("c0=3", func(o *options.Options) { o.C0 = options.Some(3) })
	add("rounds=5 gamma=0.25", func(o *options.Options) { o.Rounds = 5; o.Gamma = 0.25 })
	add("rounds=6 gamma=0.3", func(o *options.Options) { o.Rounds = 6; o.Gamma = 0.3 })
	add("rounds=7 gamma=0.4", func(o *options.Options) { o.Rounds = 7; o.Gamma = 0.4 })
	add("l=64", func(o *options.Options) { o.L = 64 })
	add("em=authors", func(o *options.Options) { o.Variant = mixture.Code })
	add("standardise=false", func(o *options.Options) { o.Standardise = false })
	add("weights=llc (paper)", func(o *options.Options) { o.Weighting = engine.LLC })
	add("weights=uniform", func(o *options.Options) { o.Weighting = engine.Uniform })
	add("annotation-weight=0 (paper)", func(o *options.Options) { o.AnnotationWeight = 0 })
	add("active-tol=0.1 (skip settled items)", func(o *options.Options) { o.ActiveTol = 0.1 })
	add("em-tol=0 (every step)", func(o *options.Options) { o.EMTol = 0 })
	add("em-tol=0.001 (before issue 14)", func(o *options.Options) { o.EMTol = 1e-3 })
	return vs
}

// TestSweep runs sweepVariants over the sklearn_digits and satellite cells
// of the dev grid (-sweep.pendigits adds pendigits' idn-0.4 and sym-0.4;
// letter and fashion_mnist_pca50 cost most of the grid's time, and the chosen
// defaults are checked on every dataset by TestQuality), and prints one
// line per variant. -sweep.only runs the variants whose names contain one of
// its comma-separated words.
func TestSweep(t *testing.T) {
	if !*sweep {
		t.Skip("the parameter sweep runs with -sweep (it takes long; see docs/QUALITY.md)")
	}
	cells := devGrid(t)
	cells = Without(cells, "letter", "fashion_mnist_pca50")
	if !*sweepPendigits {
		cells = Without(cells, "pendigits")
	} else {
		// pendigits costs as much as digits and satellite together: its
		// two target cells only.
		cells = slices.DeleteFunc(cells, func(c Cell) bool { return c.Dataset == "pendigits" && !c.Target() })
	}
	vs := sweepVariants()
	if *sweepOnly != "" {
		var keep []Variant
		for _, v := range vs {
			for _, w := range strings.Split(*sweepOnly, ",") {
				if strings.Contains(v.Name, w) {
					keep = append(keep, v)
					break
				}
			}
		}
		vs = keep
	}
	rs, err := Sweep(&testWriter{t: t}, cells, vs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(vs) {
		t.Fatalf("%d results for %d variants", len(rs), len(vs))
	}
	// Per-cell detail, for reading which datasets a variant wins or loses on.
	for _, vr := range rs {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:", vr.Variant.Name)
		for _, r := range vr.Results {
			if !r.Report.CleanedAccuracy.Valid() {
				t.Errorf("%s %s: no cleaned accuracy", vr.Variant.Name, r.Cell.Name())
			}
			fmt.Fprintf(&b, " %s %.4f", r.Cell.Name(), r.Cleaned())
		}
		t.Log(b.String())
	}
}
