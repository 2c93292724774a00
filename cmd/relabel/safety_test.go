package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/schemas"
)

// TestRunBadFlags: every flag's bad values exit 2 with one line naming the
// flag, before anything is read or written.
func TestRunBadFlags(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.parquet")
	writeRows(t, in, schemas.LabelInt32, nil, synthRows(0, 60))
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--k", "0"}, "--k"}, {[]string{"--k", "-1"}, "--k"}, {[]string{"--k", "x"}, "--k"},
		{[]string{"--l", "0"}, "--l"}, {[]string{"--n", "0"}, "--n"}, {[]string{"--em-iters", "0"}, "--em-iters"},
		{[]string{"--em-tol", "1"}, "--em-tol"}, {[]string{"--em-tol", "NaN"}, "--em-tol"},
		{[]string{"--min-class-mass", "2"}, "--min-class-mass"}, {[]string{"--min-class-mass", "NaN"}, "--min-class-mass"},
		{[]string{"--temperature", "0"}, "--temperature"}, {[]string{"--temperature", "hot"}, "--temperature"},
		{[]string{"--alpha", "0"}, "--alpha"}, {[]string{"--beta", "0.9"}, "--beta"}, {[]string{"--rounds", "-1"}, "--rounds"},
		{[]string{"--c0", "0"}, "--c0"}, {[]string{"--c0", "11"}, "--c0"}, {[]string{"--mu", "2"}, "--mu"},
		{[]string{"--gamma", "1"}, "--gamma"}, {[]string{"--smooth", "-0.1"}, "--smooth"}, {[]string{"--smooth", "NaN"}, "--smooth"},
		{[]string{"--anchor", "-1"}, "--anchor"}, {[]string{"--annotation-weight", "-1"}, "--annotation-weight"},
		{[]string{"--seed", "-3"}, "--seed"}, {[]string{"--classes", "0"}, "--classes"}, {[]string{"--workers", "0"}, "--workers"},
		{[]string{"--metric", "l1"}, "--metric"}, {[]string{"--weights", "x"}, "--weights"}, {[]string{"--em-variant", "x"}, "--em-variant"}, {[]string{"--draws", "random"}, "--draws"},
		{[]string{"--format", "csv"}, "--format"}, {[]string{"--neighbours", "foo"}, "--neighbours"}, {[]string{"--device", "tpu"}, "--device"},
		{[]string{"--candidates", "0"}, "--candidates"}, {[]string{"--partitions", "0"}, "--partitions"}, {[]string{"--nprobe", "0"}, "--nprobe"},
		{[]string{"--wave-mib", "0"}, "--wave-mib"}, {[]string{"--local-rounds-mib", "-1"}, "--local-rounds-mib"}, {[]string{"--llc-sigma", "0"}, "--llc-sigma"}, {[]string{"--llc-lambda", "-1"}, "--llc-lambda"},
		{[]string{"--class-names", "a,b,"}, "--class-names"}, {[]string{"--class-names", "a,a"}, "--class-names"},
		{[]string{"--no-such-flag", "1"}, "--no-such-flag"}, {[]string{"--neighbours", "exact", "--candidates", "5"}, "--neighbours"},
		{[]string{"--overwrite=maybe"}, "--overwrite"},
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each case its own output path; two at once overlap their start-up
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"run", "--input", in, "--output", out}, tc.args...)
			r := relabel(t, args...)
			lines := errorLines(r.stderr)
			if r.code != 2 || len(lines) == 0 || !strings.Contains(lines[0], tc.flag) {
				t.Errorf("exit %d, stderr %q; want 2 and a first line naming %s", r.code, tail(r.stderr, 400), tc.flag)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("output directory made by a run refused for bad usage")
			}
		})
	}
	// --input missing: exit 2 naming it.
	r := relabel(t, "run", "--output", out)
	if r.code != 2 || !strings.Contains(r.stderr, "--input") {
		t.Errorf("no --input: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestRunOneRow: a 1-row input is refused at plan time with a message in
// the user's terms (not a kernel's "neighbourhood 0: Len = 0").
func TestRunOneRow(t *testing.T) {
	dir := t.TempDir()
	writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, synthRows(0, 1))
	out := filepath.Join(dir, "out")
	r := relabel(t, "run", "--input", filepath.Join(dir, "*.parquet"), "--output", out)
	if lines := errorLines(r.stderr); r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "at least 2 rows") {
		t.Errorf("1-row input: exit %d, error lines %q", r.code, lines)
	}
	if got := listDir(t, out); len(got) != 0 {
		t.Errorf("1-row input left %q", got)
	}
}

// TestRunHelpFromFlags: relabel run -h lists every option of options.Flags
// by group, with its default, and Beam's flags apart.
func TestRunHelpFromFlags(t *testing.T) {
	r := relabel(t, "run", "-h")
	if r.code != 0 {
		t.Fatalf("run -h: exit %d", r.code)
	}
	help := r.stdout + r.stderr
	last := -1
	for _, g := range options.Groups {
		i := strings.Index(help, "\n"+g+":\n")
		if i < last {
			t.Errorf("group %q missing or out of order", g)
		}
		last = i
	}
	beam := strings.Index(help, "Runner flags")
	for _, f := range options.Flags {
		i := strings.Index(help, "\n  --"+f.Name+" ")
		if i < 0 || (beam >= 0 && i > beam) {
			t.Errorf("--%s missing from relabel's own flags in -h", f.Name)
			continue
		}
		line := help[i+1:]
		line = line[:strings.IndexByte(line, '\n')]
		if !strings.Contains(line, f.Usage) {
			t.Errorf("--%s: help line %q lacks its doc %q", f.Name, line, f.Usage)
		}
		if d := f.DefaultText(); d != "" && d != "false" && !strings.Contains(line, "(default "+d+")") {
			t.Errorf("--%s: help line %q lacks its default %q", f.Name, line, d)
		}
	}
	if beam < 0 || !strings.Contains(help[beam:], "--runner") {
		t.Errorf("Beam's flags are not listed apart after relabel's")
	}
}

// TestRunOutputIsInput: an output that is the input's directory (directly or
// through a symlink) is refused with exit 2 even with --overwrite, and the
// inputs stay intact.
func TestRunOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.arrow")
	writeRows(t, in, schemas.LabelInt32, nil, synthRows(0, 60))
	before, _ := os.ReadFile(in)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{dir, dir + "/", link} {
		r := relabel(t, "run", "--input", filepath.Join(dir, "*.arrow"), "--output", out, "--overwrite", "--rounds", "1")
		if r.code != 2 || !strings.Contains(r.stderr, "--output") {
			t.Errorf("--output %s: exit %d, stderr %q; want 2 naming --output", out, r.code, tail(r.stderr, 300))
		}
		if after, _ := os.ReadFile(in); !bytes.Equal(before, after) {
			t.Fatalf("--output %s: the input was changed", out)
		}
	}
}

// TestRunUserSummary: a summary.json of the user's in --output is never
// replaced without --overwrite.
func TestRunUserSummary(t *testing.T) {
	dir := t.TempDir()
	writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, synthRows(0, 60))
	out := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(out, 0o755)
	mine := []byte(`{"mine": true}`)
	os.WriteFile(filepath.Join(out, "summary.json"), mine, 0o644)
	r := relabel(t, "run", "--input", filepath.Join(dir, "*.parquet"), "--output", out, "--rounds", "1")
	if r.code != 1 || !strings.Contains(r.stderr, "summary.json exists") {
		t.Errorf("exit %d, stderr %q; want 1 and summary.json exists", r.code, tail(r.stderr, 300))
	}
	if b, _ := os.ReadFile(filepath.Join(out, "summary.json")); !bytes.Equal(b, mine) {
		t.Errorf("the user's summary.json was replaced")
	}
	if got := listDir(t, out); !slices.Equal(got, []string{"summary.json"}) {
		t.Errorf("output holds %q after a refused run", got)
	}
}

// crashArgs is a quick ivf run over the committed digits, spilled, so that a
// crash test sees every kind of file a run makes.
func crashArgs(out, spill string) []string {
	return []string{"run", "--input", digitsShards, "--output", out, "--neighbours", "ivf", "--partitions", "8", "--nprobe", "3",
		"--rounds", "2", "--l", "40", "--spill-dir", spill}
}

// TestRunCrash kills the binary (SIGKILL) at every named point of a run, then
// reruns without --overwrite: no partial output was ever visible (no
// summary.json, or the complete one), the rerun succeeds, its shards are
// byte-identical to an uninterrupted run's, and no lock, temporary or spill
// file remains.
func TestRunCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test runs the binary about 20 times")
	}
	ref := filepath.Join(t.TempDir(), "ref")
	mustRelabel(t, crashArgs(ref, t.TempDir())...)
	shards := []string{"noisy-idn-0.4-part-0000.arrow", "noisy-idn-0.4-part-0001.arrow"}
	for _, point := range []string{"locked", "pipeline-done", "commit-journal", "commit-unmarked", "commit-file-0", "commit-file-1", "commit-summary"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel() // its own directories; two runs at once overlap their start-up
			out, spill := filepath.Join(t.TempDir(), "out"), t.TempDir()
			r := relabelEnv(t, map[string]string{faults.Env: point}, crashArgs(out, spill)...)
			if r.code != -1 { // -1: killed by a signal
				t.Fatalf("RELABEL_FAULT=%s: exit %d, want killed by SIGKILL; stderr %s", point, r.code, tail(r.stderr, 500))
			}
			// What a reader sees after the crash: either no summary.json,
			// or a complete output.
			if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
				sameFiles(t, ref, out, shards...)
			}
			mustRelabel(t, crashArgs(out, spill)...)
			sameFiles(t, ref, out, shards...)
			want := append(append([]string(nil), shards...), "summary.json")
			got := slices.DeleteFunc(listDir(t, out), func(n string) bool { return n == "report.html" })
			if !slices.Equal(got, want) {
				t.Errorf("after the rerun the output holds %q, want %q", got, want)
			}
			if left := listDir(t, spill); len(left) != 0 {
				t.Errorf("spill directory holds %q after the rerun", left)
			}
		})
	}
}

// TestRunConcurrent: two runs on one output at once: one succeeds, the other
// fails fast naming the lock, and the output is entirely the winner's.
func TestRunConcurrent(t *testing.T) {
	dir := t.TempDir()
	writeRows(t, filepath.Join(dir, "a.parquet"), schemas.LabelInt32, nil, synthRows(0, 300))
	writeRows(t, filepath.Join(dir, "b.parquet"), schemas.LabelInt32, nil, synthRows(300, 300))
	out := filepath.Join(t.TempDir(), "out")
	var wg sync.WaitGroup
	res := make([]result, 2)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = relabel(t, "run", "--input", filepath.Join(dir, "*.parquet"), "--output", out, "--rounds", "3", "--seed", []string{"1", "2"}[i])
		}()
	}
	wg.Wait()
	won := -1
	for i, r := range res {
		switch {
		case r.code == 0 && won < 0:
			won = i
		case r.code == 0:
			t.Errorf("both runs succeeded")
		case !strings.Contains(r.stderr, "locked by another run") && !strings.Contains(r.stderr, "exists (pass --overwrite"):
			t.Errorf("run %d: exit %d, stderr %q: want a clear lock or exists message", i, r.code, tail(r.stderr, 300))
		}
	}
	if won < 0 {
		t.Fatalf("no run succeeded: %q / %q", tail(res[0].stderr, 300), tail(res[1].stderr, 300))
	}
	seed := []string{"1", "2"}[won]
	for _, name := range []string{"a.arrow", "b.arrow"} {
		o := readOutput(t, filepath.Join(out, name))
		if s, _ := o.schema.Metadata().GetValue("relabel.seed"); s != seed {
			t.Errorf("%s records seed %q, the winner ran seed %s", name, s, seed)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "summary.json")); err != nil || !bytes.Contains(b, []byte(`"seed": "`+seed+`"`)) {
		t.Errorf("summary.json is not the winner's (seed %s): %v", seed, err)
	}
	for _, n := range listDir(t, out) {
		if strings.HasPrefix(n, ".relabel") {
			t.Errorf("%s left in the output", n)
		}
	}
}

// TestRunSIGTERM: SIGTERM stops a run like SIGINT: exit 143, a message
// saying nothing was committed, and no lock, temporary or spill file left.
func TestRunSIGTERM(t *testing.T) {
	out, spill := filepath.Join(t.TempDir(), "out"), t.TempDir()
	// Many rounds, and the signal sent once the rounds are running (the
	// progress line says so): the run is surely under way, its spill
	// directory in use, however fast the machine.
	cmd, wait := startRun(t, nil, append(crashArgs(out, spill), "--rounds", "400")...)
	if ents, _ := os.ReadDir(spill); len(ents) == 0 {
		t.Errorf("no spill directory while the rounds run")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code, stderr := wait(); code != 143 || !strings.Contains(stderr, "SIGTERM") {
		t.Fatalf("after SIGTERM: exit %d, stderr %q; want exit 143 naming SIGTERM", code, tail(stderr, 500))
	}
	for _, n := range listDir(t, out) {
		t.Errorf("%s left in the output after SIGTERM", n)
	}
	if left := listDir(t, spill); len(left) != 0 {
		t.Errorf("spill directory holds %q after SIGTERM", left)
	}
}
