package options

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// runnerPolicy are the Neighbours-group flags a run does not record: they
// choose how the embedded runner holds ivf's blocks, not what is computed
// (TestLocalRounds and TestIVFSpill pin the same bytes either way), and
// --spill-dir is a path.
var runnerPolicy = []string{"wave-mib", "local-rounds-mib", "spill-dir"}

// other is a valid value other than the default for every Compared flag.
var other = map[string]string{
	"classes": "11", "rounds": "3", "c0": "3", "l": "7", "n": "9", "mu": "0.3", "gamma": "0.2",
	"alpha": "2", "beta": "3", "em-iters": "4", "em-tol": "0.02", "min-class-mass": "0.2",
	"em-variant": "code", "draws": "iid", "smooth": "0.2", "anchor": "0.7", "annotation-weight": "0.4",
	"active-tol": "0.05", "temperature": "0.5", "min-confidence": "0.6", "seed": "9",
	"k": "7", "metric": "cosine", "no-standardise": "true", "weights": "uniform",
	"llc-lambda": "0.3", "llc-sigma": "2.5", "pooled-iters": "0", "pooled-weight": "0.5", "pooled-gate": "0", "pooled-tol": "0", "head": "0.3", "given-label": "bayes",
	"annotations": "a.parquet", "annotators-column": "who", "crowd-iters": "4",
	"annotator-prior": "3", "neighbour-prior": "0.3", "class-balance": "0.3",
}

// TestRecordedFlags: the recorded options are the flag table's: every flag of the method and neighbour groups, and the
// annotators' method flags, is recorded (Record) under its own name, and
// --incremental compares every method flag: a run with any one of them
// changed is refused (Changed), naming the flag.
func TestRecordedFlags(t *testing.T) {
	o := Defaults()
	rec := o.Record(true)
	for _, f := range Flags {
		method := f.Group == GroupMethod || f.Group == GroupNeighbours && !slices.Contains(runnerPolicy, f.Name) ||
			f.Group == GroupCrowd && !strings.HasSuffix(f.Name, "-column") || f.Name == "annotators-column"
		if _, ok := rec[f.Name]; ok != (f.Record != Unrecorded) {
			t.Errorf("--%s: recorded %t, its entry says %v", f.Name, ok, f.Record)
		}
		if method && f.Record == Unrecorded {
			t.Errorf("--%s (%s): not recorded", f.Name, f.Group)
		}
		if f.Record != Compared {
			continue
		}
		v, ok := other[f.Name]
		if !ok {
			t.Errorf("--%s: compared, but this test has no other value for it", f.Name)
			continue
		}
		changed := Defaults()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		changed.Bind(fs)
		if err := fs.Parse([]string{"--" + f.Name + "=" + v}); err != nil {
			t.Fatalf("--%s %s: %v", f.Name, v, err)
		}
		diffs := Changed(rec, changed.Record(true))
		if len(diffs) != 1 || !strings.HasPrefix(diffs[0], "--"+f.Name+" ") {
			t.Errorf("--%s %s: Changed says %q, want that flag alone", f.Name, v, diffs)
		}
	}
	for _, name := range []string{"draws", "active-tol"} { // the two that drifted
		if f := flagNamed(t, name); f.Record != Compared {
			t.Errorf("--%s: %v, want Compared", name, f.Record)
		}
	}
	for _, name := range []string{"standardise", "max-row-terms"} { // not flags
		if _, ok := rec[name]; ok {
			t.Errorf("%s recorded, but it is no flag", name)
		}
	}
	// A run without annotators records none of their flags; a recorded
	// option the last run did not record (a run older than the flag) is not
	// compared.
	for name := range o.Record(false) {
		if flagNamed(t, name).Group == GroupCrowd {
			t.Errorf("--%s recorded for a run without annotators", name)
		}
	}
	last := o.Record(false)
	delete(last, "draws")
	now := o.Record(false)
	now["draws"] = "iid"
	if d := Changed(last, now); len(d) != 0 {
		t.Errorf("an option the last run did not record was compared: %q", d)
	}
	// Recorded but not compared: an incremental run may search otherwise.
	now = o.Record(false)
	now["neighbours"], now["device"] = "ivf", "cpu"
	if d := Changed(o.Record(false), now); len(d) != 0 {
		t.Errorf("neighbours and device compared: %q", d)
	}
}

func flagNamed(t *testing.T, name string) Flag {
	t.Helper()
	for _, f := range Flags {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no flag --%s", name)
	return Flag{}
}

// TestFlagTable: every flag is named once, in a listed group, with a usage
// line and a value whose String parses back (the default shown is a value
// the flag accepts).
func TestFlagTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Flags {
		if seen[f.Name] {
			t.Errorf("--%s twice", f.Name)
		}
		seen[f.Name] = true
		if !slices.Contains(Groups, f.Group) || f.Usage == "" {
			t.Errorf("--%s: group %q, usage %q", f.Name, f.Group, f.Usage)
		}
		d := Defaults()
		v := f.bind(&d)
		if s := v.String(); s != "" {
			if err := v.Set(s); err != nil {
				t.Errorf("--%s: its default %q does not parse: %v", f.Name, s, err)
			}
		}
	}
}
