package options

import (
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/relabel/relabel/transforms/engine"
	"github.com/relabel/relabel/transforms/mixture"
)

var updateDoc = flag.Bool("update-doc", false, "rewrite docs/OPTIONS.md's options table from Flags")

const (
	tableBegin = "<!-- options table: generated from options.Flags by TestOptionsDoc; go test ./options -run TestOptionsDoc -update-doc -->\n"
	tableEnd   = "<!-- options table: end -->"
)

// optionsDoc is the manual's options page, from the package's folder.
const optionsDoc = "../docs/OPTIONS.md"

// TestOptionsDoc: the manual's options table is the one Flags renders.
func TestOptionsDoc(t *testing.T) {
	b, err := os.ReadFile(optionsDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated options table (markers %q ... %q)", optionsDoc, tableBegin, tableEnd)
	}
	want := OptionsTable()
	got := s[i+len(tableBegin) : j]
	if got == want {
		return
	}
	if *updateDoc {
		if err := os.WriteFile(optionsDoc, []byte(s[:i+len(tableBegin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's options table differs from options.Flags; rerun with -update-doc.\nwant:\n%s", optionsDoc, want)
}

// TestOptionsExplicitValues: an explicit value is used as given or rejected
// with its flag named, never replaced by a default.
func TestOptionsExplicitValues(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		o := Defaults()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Bind(fs)
		if err := fs.Parse(append([]string{"--input", "x", "--output", "y"}, args...)); err != nil {
			return o, err
		}
		return o, o.Validate()
	}
	for _, tc := range []struct {
		args []string
		flag string // "" = valid
	}{
		{[]string{"--smooth", "0"}, ""},
		{[]string{"--mu", "0"}, ""},
		{[]string{"--gamma", "0"}, ""},
		{[]string{"--rounds", "0"}, ""},
		{[]string{"--k", "0"}, "k"},
		{[]string{"--k", "-1"}, "k"},
		{[]string{"--l", "0"}, "l"},
		{[]string{"--n", "0"}, "n"},
		{[]string{"--em-iters", "0"}, "em-iters"},
		{[]string{"--em-tol", "0"}, ""},
		{[]string{"--em-tol", "1"}, "em-tol"},
		{[]string{"--em-tol", "-0.001"}, "em-tol"},
		{[]string{"--min-class-mass", "0"}, ""},
		{[]string{"--min-class-mass", "1"}, ""},
		{[]string{"--min-class-mass", "1.01"}, "min-class-mass"},
		{[]string{"--min-class-mass", "-0.01"}, "min-class-mass"},
		{[]string{"--temperature", "auto"}, ""},
		{[]string{"--temperature", "0.3"}, ""},
		{[]string{"--temperature", "0"}, "temperature"},
		{[]string{"--temperature", "NaN"}, "temperature"},
		{[]string{"--temperature", "101"}, "temperature"},
		{[]string{"--alpha", "0"}, "alpha"},
		{[]string{"--beta", "0.5"}, "beta"},
		{[]string{"--rounds", "-1"}, "rounds"},
		{[]string{"--c0", "0"}, "c0"},
		{[]string{"--smooth", "1"}, "smooth"},
		{[]string{"--mu", "1.5"}, "mu"},
		{[]string{"--gamma", "1"}, "gamma"},
		{[]string{"--classes", "0"}, "classes"},
		{[]string{"--workers", "0"}, "workers"},
		{[]string{"--partitions", "0"}, "partitions"},
		{[]string{"--partitions", "4", "--nprobe", "5"}, "nprobe"},
		{[]string{"--llc-sigma", "0"}, "llc-sigma"},
		{[]string{"--anchor", "-0.1"}, "anchor"},
		{[]string{"--wave-mib", "0"}, "wave-mib"},
		{[]string{"--local-rounds-mib", "-1"}, "local-rounds-mib"},
		{[]string{"--neighbours", "exact", "--candidates", "100"}, "neighbours"},
		{[]string{"--neighbours", "exact", "--partitions", "10"}, "neighbours"},
		{[]string{"--class-names", "a,b,c", "--classes", "4"}, "class-names"},
		{[]string{"--id-column", ""}, "id-column"},
		{[]string{"--pooled-iters", "0"}, ""},
		{[]string{"--pooled-iters", "-1"}, "pooled-iters"},
		{[]string{"--pooled-weight", "1"}, ""},
		{[]string{"--pooled-weight", "0"}, "pooled-weight"},
		{[]string{"--pooled-weight", "1.5"}, "pooled-weight"},
		{[]string{"--pooled-gate", "0"}, ""},
		{[]string{"--pooled-gate", "1"}, ""},
		{[]string{"--pooled-gate", "-0.1"}, "pooled-gate"},
		{[]string{"--pooled-tol", "0"}, ""},
		{[]string{"--pooled-tol", "0.5"}, ""},
		{[]string{"--pooled-tol", "1"}, "pooled-tol"},
		{[]string{"--pooled-tol", "-0.001"}, "pooled-tol"},
	} {
		name := strings.Join(tc.args, " ")
		o, err := parse(tc.args...)
		if tc.flag == "" {
			if err != nil {
				t.Errorf("%s: %v, want accepted", name, err)
			}
			continue
		}
		var oe *Error
		if !errors.As(err, &oe) || oe.Flag != tc.flag {
			t.Errorf("%s: error %v, want one naming --%s", name, err, tc.flag)
		}
		_ = o
	}
	// --temperature: auto is the unset value, a number is kept as given.
	if o, err := parse(); err != nil || o.Temperature.Set {
		t.Errorf("default temperature %+v (%v), want auto", o.Temperature, err)
	}
	if o, err := parse("--temperature", "0.25"); err != nil || o.Temperature != Some(0.25) {
		t.Errorf("--temperature 0.25 gave %+v (%v)", o.Temperature, err)
	}
	if o, err := parse("--temperature", "0.25", "--temperature", "auto"); err != nil || o.Temperature.Set {
		t.Errorf("--temperature auto after a number gave %+v (%v)", o.Temperature, err)
	}
	// --em-iters: unset, the variant's default (one step for paper, the
	// authors' code's ten); given, as given whatever the variant.
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 1},
		{[]string{"--em-variant", "code"}, 10},
		{[]string{"--em-iters", "3"}, 3},
		{[]string{"--em-iters", "1", "--em-variant", "code"}, 1},
		{[]string{"--em-variant", "code", "--em-iters", "10", "--em-variant", "paper"}, 10},
	} {
		o, err := parse(tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		m, err := o.Mixture(10)
		if err != nil || m.EMIters != tc.want {
			t.Errorf("%v: em-iters %d (%v), want %d", tc.args, m.EMIters, err, tc.want)
		}
	}
	// --pooled-iters: unset, the default (the plan turns it off where the
	// run cannot fit it); 0 given is off, never the default; the weight,
	// gate and tolerance as given (tolerance 0: every step).
	for _, tc := range []struct {
		args              []string
		iters             int
		weight, gate, tol float64
	}{
		{nil, mixture.DefaultPooledIters, 0.3, 0.5, mixture.DefaultPooledTol},
		{[]string{"--pooled-iters", "0"}, 0, 0.3, 0.5, mixture.DefaultPooledTol},
		{[]string{"--pooled-iters", "5", "--pooled-weight", "1", "--pooled-gate", "0", "--pooled-tol", "0"}, 5, 1, 0, 0},
	} {
		o, err := parse(tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		m, err := o.Mixture(10)
		if err != nil || m.PooledIters != tc.iters || m.PooledWeight != tc.weight || m.PooledGate != tc.gate || !m.PooledSplit || m.PooledTol != tc.tol {
			t.Errorf("%v: pooled iters %d, weight %g, gate %g, split %v, tol %g (%v); want %d, %g, %g, split, %g",
				tc.args, m.PooledIters, m.PooledWeight, m.PooledGate, m.PooledSplit, m.PooledTol, err, tc.iters, tc.weight, tc.gate, tc.tol)
		}
	}
	o, err := parse("--smooth", "0", "--c0", "3")
	if err != nil {
		t.Fatal(err)
	}
	e, err := o.Engine(10)
	if err != nil {
		t.Fatal(err)
	}
	if e.Mixture.Smooth != 0 || e.Mixture.C0 != 3 || e.Mixture.N != 5 {
		t.Errorf("--smooth 0 --c0 3 gave smooth %g, c0 %d, n %d; want 0, 3, 5", e.Mixture.Smooth, e.Mixture.C0, e.Mixture.N)
	}
	o, _ = parse("--c0", "11")
	var oe *Error
	if _, err := o.Engine(10); !errors.As(err, &oe) || oe.Flag != "c0" {
		t.Errorf("--c0 11 with C = 10: %v, want an error naming --c0", err)
	}
	for _, bad := range [][]string{{"--k", "x"}, {"--metric", "l3"}, {"--format", "csv"}, {"--weights", "foo"}, {"--class-names", "a,b,"}, {"--class-names", "a,b,a"}, {"--device", "tpu"}, {"--neighbours", "foo"}} {
		if _, err := parse(bad...); err == nil || !strings.Contains(err.Error(), "-"+strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%s: %v, want a parse error naming the flag", strings.Join(bad, " "), err)
		}
	}
}

// TestHead: --head takes fit, off or a share in (0, head.MaxShare], and
// rejects anything else naming the flag; unset it is DefaultHead in exact
// and sample modes and ivf mode's local rounds, and off in ivf mode's join
// per round and annotator-aware runs, where an explicit value other than
// off is an error naming the flag.
func TestHead(t *testing.T) {
	for _, v := range []string{"fit", "off", "0.5", "0.2"} {
		o := Defaults()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Bind(fs)
		if err := fs.Parse([]string{"--head=" + v}); err != nil {
			t.Errorf("--head %s: %v", v, err)
		}
		if got, err := o.ResolveHead(NeighboursExact, false, false); err != nil || got != v {
			t.Errorf("--head %s in exact mode: %q, %v", v, got, err)
		}
	}
	for _, v := range []string{"0", "0.6", "on", "", "-1", "NaN"} {
		o := Defaults()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Bind(fs)
		if err := fs.Parse([]string{"--head=" + v}); err == nil || !strings.Contains(err.Error(), "head") {
			t.Errorf("--head %q: accepted or not named (%v)", v, err)
		}
		if _, err := HeadParams(v, 1); err == nil || !strings.Contains(err.Error(), "--head") {
			t.Errorf("HeadParams(%q): %v, want an error naming --head", v, err)
		}
	}
	o := Defaults()
	for _, mode := range []string{NeighboursExact, NeighboursSample} {
		if got, err := o.ResolveHead(mode, false, false); err != nil || got != DefaultHead {
			t.Errorf("unset, %s mode: %q, %v; want %s", mode, got, err, DefaultHead)
		}
	}
	if got, err := o.ResolveHead(NeighboursIVF, false, false); err != nil || got != HeadOff {
		t.Errorf("unset, ivf mode, a join per round: %q, %v; want off", got, err)
	}
	if got, err := o.ResolveHead(NeighboursIVF, true, false); err != nil || got != HeadOff {
		t.Errorf("unset, ivf mode, local rounds: %q, %v; want off (opt-in there: its cost)", got, err)
	}
	if got, err := o.ResolveHead(NeighboursIVF, true, true); err != nil || got != HeadOff {
		t.Errorf("unset, ivf mode, local rounds, annotators: %q, %v; want off", got, err)
	}
	if got, err := o.ResolveHead(NeighboursExact, false, true); err != nil || got != HeadOff {
		t.Errorf("unset, annotators: %q, %v; want off", got, err)
	}
	for _, v := range []string{HeadFit, "0.2"} {
		o.Head = Some(v)
		for _, crowd := range []bool{false, true} {
			mode := NeighboursIVF
			if crowd {
				mode = NeighboursExact
			}
			var oe *Error
			if _, err := o.ResolveHead(mode, false, crowd); !errors.As(err, &oe) || oe.Flag != "head" {
				t.Errorf("--head %s, %s mode, annotators %v: %v, want an error naming --head", v, mode, crowd, err)
			}
		}
		if got, err := o.ResolveHead(NeighboursIVF, true, false); err != nil || got != v {
			t.Errorf("--head %s, ivf mode, local rounds: %q, %v; want it as given", v, got, err)
		}
	}
	o.Head = Some(HeadOff)
	for _, local := range []bool{false, true} {
		if got, err := o.ResolveHead(NeighboursIVF, local, false); err != nil || got != HeadOff {
			t.Errorf("--head off, ivf mode, local rounds %v: %q, %v", local, got, err)
		}
	}
	if p, err := HeadParams("0.2", 3); err != nil || p == nil || math.Abs(p.Weight-0.25) > 1e-12 || p.Seed != 3 {
		t.Errorf("HeadParams(0.2): %+v, %v; want weight .25 (a share of .2 of the neighbours' mass), seed 3", p, err)
	}
	if p, err := HeadParams(HeadFit, 3); err != nil || p == nil || p.Weight != 0 {
		t.Errorf("HeadParams(fit): %+v, %v; want weight 0 (fitted)", p, err)
	}
	if p, err := HeadParams(HeadOff, 3); err != nil || p != nil {
		t.Errorf("HeadParams(off): %+v, %v; want none", p, err)
	}
}

// TestResolveGiven: --given-label is used as given or refused, never
// replaced: unset it is DefaultGivenLabel with one label per item and vote
// in annotator-aware runs; an explicit bayes there, or beside an explicit
// --temperature, is refused naming the flag.
func TestResolveGiven(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		crowd bool
		want  engine.GivenModel
		flag  string
	}{
		{"unset", nil, false, DefaultGivenLabel, ""},
		{"vote", []string{"--given-label=vote"}, false, engine.GivenVote, ""},
		{"bayes", []string{"--given-label=bayes"}, false, engine.GivenBayes, ""},
		{"unset, annotators", nil, true, engine.GivenVote, ""},
		{"vote, annotators", []string{"--given-label=vote"}, true, engine.GivenVote, ""},
		{"bayes, annotators", []string{"--given-label=bayes"}, true, 0, "given-label"},
		{"bayes, temperature", []string{"--given-label=bayes", "--temperature=0.5"}, false, 0, "temperature"},
		{"vote, temperature", []string{"--given-label=vote", "--temperature=0.5"}, false, engine.GivenVote, ""},
	} {
		o := Defaults()
		fs := flag.NewFlagSet("relabel", flag.ContinueOnError)
		o.Bind(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := o.ResolveGiven(tc.crowd)
		var oe *Error
		switch {
		case tc.flag != "" && (!errors.As(err, &oe) || oe.Flag != tc.flag):
			t.Errorf("%s: %v, %v; want an error naming --%s", tc.name, got, err, tc.flag)
		case tc.flag == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	o := Defaults()
	fs := flag.NewFlagSet("relabel", flag.ContinueOnError)
	o.Bind(fs)
	if err := fs.Parse([]string{"--given-label=maybe"}); err == nil {
		t.Error("--given-label=maybe taken")
	}
}
