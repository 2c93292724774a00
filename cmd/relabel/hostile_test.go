package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/gpu"
	"github.com/relabel/relabel/schemas"
)

// Hostile names and values lose nothing and exhaust nothing.

// finishedRun makes an input of 60 rows and a finished output of it.
func finishedRun(t *testing.T) (in, out string) {
	t.Helper()
	dir := t.TempDir()
	in = filepath.Join(dir, "a.parquet")
	writeRows(t, in, schemas.LabelInt32, nil, synthRows(0, 60))
	out = filepath.Join(t.TempDir(), "out")
	mustRelabel(t, "run", "--input", in, "--output", out, "--rounds", "1")
	return in, out
}

// outputShards are the data files of the output directory out.
func outputShards(t *testing.T, out string) []string {
	t.Helper()
	var shards []string
	for _, n := range listDir(t, out) {
		if n != "summary.json" && n != "report.html" && !strings.HasPrefix(n, ".") {
			shards = append(shards, filepath.Join(out, n))
		}
	}
	if len(shards) == 0 {
		t.Fatalf("no output shard in %s: %q", out, listDir(t, out))
	}
	return shards
}

func sameFile(t *testing.T, path string, want []byte) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	return err == nil && bytes.Equal(b, want)
}

// TestNoOverwriteWithoutFlag: report, eval, noise and synth
// replace no file they did not write unless --overwrite (run:
// TestRunUserSummary).
func TestNoOverwriteWithoutFlag(t *testing.T) {
	in, out := finishedRun(t)
	input, _ := os.ReadFile(in)
	shards := outputShards(t, out)
	shard, _ := os.ReadFile(shards[0])

	// report --out an input or the run's own output shard: refused, kept.
	for _, target := range []string{in, shards[0]} {
		r := relabel(t, "report", out, "--out", target)
		if r.code == 0 || !strings.Contains(r.stderr, "--overwrite") {
			t.Errorf("report --out %s: exit %d, stderr %q; want refused, pointing to --overwrite", target, r.code, r.stderr)
		}
	}
	if !sameFile(t, in, input) || !sameFile(t, shards[0], shard) {
		t.Error("report replaced the input or the output shard")
	}
	if r := relabel(t, "report", out); r.code != 0 {
		t.Errorf("report over the run's own report.html: exit %d, stderr %q", r.code, r.stderr)
	}
	// report --out an existing directory: exit 2, in the user's words.
	d := t.TempDir()
	if r := relabel(t, "report", out, "--out", d); r.code != 2 || !strings.Contains(r.stderr, "is a directory") || strings.Contains(r.stderr, "rename") {
		t.Errorf("report --out DIR: exit %d, stderr %q; want 2 saying it is a directory", r.code, r.stderr)
	}
	// --overwrite replaces a file given as --out.
	page := filepath.Join(t.TempDir(), "page.html")
	os.WriteFile(page, []byte("old"), 0o644)
	if r := relabel(t, "report", out, "--out", page, "--overwrite"); r.code != 0 || sameFile(t, page, []byte("old")) {
		t.Errorf("report --overwrite: exit %d, stderr %q, page replaced: %v", r.code, r.stderr, !sameFile(t, page, []byte("old")))
	}

	// eval rewrites DIR/report.html only when it is relabel's report.
	mine := []byte("<p>my notes</p>")
	os.WriteFile(filepath.Join(out, "report.html"), mine, 0o644)
	r := relabel(t, "eval", "--output", out, "--truth", in)
	if r.code == 0 || !sameFile(t, filepath.Join(out, "report.html"), mine) {
		t.Errorf("eval over a user's report.html: exit %d, stderr %q; want refused and the file kept", r.code, tail(r.stderr, 300))
	}

	// noise onto an existing file: refused, kept.
	noisy := filepath.Join(t.TempDir(), "noisy.parquet")
	os.WriteFile(noisy, mine, 0o644)
	r = relabel(t, "noise", "--input", in, "--output", noisy, "--kind", "sym", "--rate", "0.2")
	if r.code == 0 || !sameFile(t, noisy, mine) {
		t.Errorf("noise over an existing file: exit %d; want refused and the file kept", r.code)
	}

	// synth into a directory holding a shard of that name: refused, kept.
	sd := t.TempDir()
	part := filepath.Join(sd, "part-00000.parquet")
	os.WriteFile(part, mine, 0o644)
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"synth", "--rows", "100", "--d", "4", "--output", sd}, &stdout, &stderr); code == 0 || !sameFile(t, part, mine) {
		t.Errorf("synth over an existing shard: exit %d, stderr %q; want refused and the file kept", code, stderr.String())
	}
	if got := listDir(t, sd); len(got) != 1 {
		t.Errorf("a refused synth left %q", got)
	}
	stderr.Reset()
	if code := dispatch(context.Background(), []string{"synth", "--rows", "100", "--d", "4", "--output", sd, "--overwrite"}, &stdout, &stderr); code != 0 || sameFile(t, part, mine) {
		t.Errorf("synth --overwrite: exit %d, stderr %q", code, stderr.String())
	}
}

// TestRunRefusesWhatCannotFit (targets 2 and 6): values that cannot fit or
// serve exit 2 naming the flag, before anything is created.
func TestRunRefusesWhatCannotFit(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.parquet")
	writeRows(t, in, schemas.LabelInt32, nil, synthRows(0, 60))
	out := filepath.Join(t.TempDir(), "new", "out")
	cases := []struct {
		name string
		env  map[string]string
		args []string
		flag string
		want string
	}{
		{"classes beyond int32", nil, []string{"--classes", "2147483648"}, "--classes", "int32"},
		{"classes beyond the labels", nil, []string{"--classes", "1000000"}, "--classes", "largest label is 2"},
		{"k at the rows", nil, []string{"--k", "60"}, "--k", "60 labelled rows"},
		{"n beyond identifiability", nil, []string{"--n", "10000"}, "--n", "identifiability"},
		{"spill dir missing", nil, []string{"--spill-dir", "/nonexistent/spill"}, "--spill-dir", "no such directory"},
		{"memory", map[string]string{"GOMEMLIMIT": "64MiB"}, nil, "--", "64 MiB"},
		{"memory names the estimate", map[string]string{"GOMEMLIMIT": "64MiB"}, nil, "--", "would need about"},
	}
	if !gpu.Available() {
		cases = append(cases, struct {
			name string
			env  map[string]string
			args []string
			flag string
			want string
		}{"cuda without a GPU", nil, []string{"--device", "cuda"}, "--device", "GPU"})
	}
	for _, tc := range cases {
		args := append([]string{"run", "--input", in, "--output", out, "--rounds", "1"}, tc.args...)
		r := relabelEnv(t, tc.env, args...)
		lines := errorLines(r.stderr)
		if r.code != 2 || len(lines) == 0 || !strings.Contains(lines[0], tc.flag) || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and a line naming %s with %q", tc.name, r.code, tail(r.stderr, 400), tc.flag, tc.want)
		}
		if _, err := os.Stat(filepath.Dir(out)); err == nil {
			t.Errorf("%s: the refused run created %s", tc.name, filepath.Dir(out))
			os.RemoveAll(filepath.Dir(out))
		}
	}
	if _, err := os.Stat("/nonexistent"); err == nil {
		t.Error("--spill-dir /nonexistent/spill created /nonexistent")
	}
}

// TestKBelowLabelledRows: --k is bounded by the labelled rows,
// not all rows, and the default K is bounded like a given one: input with 8
// labelled rows of 60 refuses the default --k 10 and --k 8 (exit 2 naming
// --k and the --k that fits), never replacing them, and runs --k 7.
func TestKBelowLabelledRows(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.parquet")
	rows := synthRows(0, 60)
	for i := range rows.Labels {
		if i%8 != 0 { // rows 0, 8, ..., 56 keep their label: 8 labelled
			rows.Labels[i] = schemas.Unlabelled
		}
	}
	writeRows(t, in, schemas.LabelInt32, nil, rows)
	// String labels with --class-names: no pass over the labels finds the
	// class set, so the labelled rows are counted on their own.
	named := filepath.Join(dir, "named.parquet")
	writeRows(t, named, schemas.LabelString, []string{"a", "b", "c"}, rows)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"default", []string{"--input", in, "--classes", "3"}, []string{"--k 10 neighbours (the default)", "8 labelled rows (of 60)", "--k 7 or less"}},
		{"given at the labelled rows", []string{"--input", in, "--k", "8"}, []string{"--k 8 neighbours", "8 labelled rows", "--k 7 or less"}},
		{"given beyond the rows", []string{"--input", in, "--k", "60"}, []string{"--k 60 neighbours", "8 labelled rows (of 60)", "--k 7 or less"}},
		{"string labels, class names given", []string{"--input", named, "--class-names", "a,b,c"}, []string{"--k 10 neighbours (the default)", "8 labelled rows (of 60)"}},
	} {
		out := filepath.Join(t.TempDir(), "out")
		r := relabel(t, append([]string{"run", "--output", out, "--rounds", "1"}, tc.args...)...)
		lines := errorLines(r.stderr)
		if r.code != 2 || len(lines) == 0 {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming --k", tc.name, r.code, tail(r.stderr, 400))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(lines[0], w) {
				t.Errorf("%s: %q lacks %q", tc.name, lines[0], w)
			}
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: the refused run created %s", tc.name, out)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	mustRelabel(t, "run", "--input", in, "--output", out, "--rounds", "1", "--classes", "3", "--k", "7", "--report=false")
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Errorf("--k 7 with 8 labelled rows: %v", err)
	}
}

// TestRunLeavesNothing: a run that fails while it runs (a NaN
// feature, found by the pipeline's read) into a new directory, or with a
// catalog that did not exist, leaves no directory and no catalog behind.
func TestRunLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	rows := synthRows(0, 60)
	rows.Features[4*30+1] = float32(math.NaN())
	in := filepath.Join(dir, "a.parquet")
	writeRows(t, in, schemas.LabelInt32, nil, rows)
	base := t.TempDir()
	out := filepath.Join(base, "new", "out")
	r := relabel(t, "run", "--input", in, "--output", out, "--rounds", "1")
	if r.code != 1 || !strings.Contains(r.stderr, "row 30") {
		t.Errorf("NaN feature: exit %d, stderr %q; want 1 naming row 30", r.code, tail(r.stderr, 400))
	}
	if got := listDir(t, base); len(got) != 0 {
		t.Errorf("the failed run left %q in %s", got, base)
	}
	cat := filepath.Join(base, "lake", "catalog.db")
	r = relabel(t, "run", "--catalog", "sqlite://"+cat, "--input-table", "ns.missing", "--output-table", "ns.out")
	if r.code == 0 {
		t.Errorf("a run from a missing table succeeded")
	}
	if got := listDir(t, base); len(got) != 0 {
		t.Errorf("the failed lake run left %q in %s (stderr %q)", got, base, tail(r.stderr, 300))
	}
}

// TestMessagesSafeAndPlain (targets 3 and 6): file names carrying a
// clear-screen and a window-title sequence and a newline reach the terminal
// escaped, on one line; --input DIR names the directory; a glob that
// matches the run's own output says so; report on a directory without
// summary.json has no stray ")".
func TestMessagesSafeAndPlain(t *testing.T) {
	dir := t.TempDir()
	evil := filepath.Join(dir, "x\x1b[2J\x1b]0;owned\x07\n.parquet")
	os.WriteFile(evil, []byte("not parquet"), 0o644)
	for _, input := range []string{evil, evil + ".missing"} {
		r := relabel(t, "run", "--input", input, "--output", filepath.Join(dir, "out"))
		if r.code == 0 || strings.ContainsAny(r.stderr, "\x1b\x07") {
			t.Errorf("--input %q: exit %d, stderr %q; want an error with the name escaped", input, r.code, r.stderr)
		}
		if lines := errorLines(r.stderr); len(lines) != 1 || !strings.Contains(lines[0], `\x1b[2J`) {
			t.Errorf("--input %q: error lines %q; want one, the name escaped", input, lines)
		}
	}
	os.Remove(evil)

	in := filepath.Join(dir, "a.parquet")
	writeRows(t, in, schemas.LabelInt32, nil, synthRows(0, 60))
	r := relabel(t, "run", "--input", dir, "--output", filepath.Join(t.TempDir(), "o"))
	if r.code == 0 || !strings.Contains(r.stderr, dir+" is a directory") {
		t.Errorf("--input DIR: exit %d, stderr %q; want the directory named", r.code, tail(r.stderr, 300))
	}

	out := filepath.Join(t.TempDir(), "out")
	mustRelabel(t, "run", "--input", in, "--output", out, "--rounds", "1")
	shards := outputShards(t, out)
	b, _ := os.ReadFile(shards[0])
	os.WriteFile(filepath.Join(dir, "b"+filepath.Ext(shards[0])), b, 0o644)
	r = relabel(t, "run", "--input", filepath.Join(dir, "*"), "--output", filepath.Join(t.TempDir(), "o"))
	if r.code == 0 || !strings.Contains(r.stderr, "an output of relabel run") {
		t.Errorf("glob matching an output: exit %d, stderr %q; want it explained", r.code, tail(r.stderr, 300))
	}

	r = relabel(t, "report", t.TempDir())
	if lines := errorLines(r.stderr); r.code == 0 || len(lines) != 1 || !strings.Contains(lines[0], "no summary.json") || strings.HasSuffix(lines[0], ")") {
		t.Errorf("report without summary.json: exit %d, lines %q", r.code, lines)
	}
}

// TestDeletionOnlyMessage: an incremental directory run whose
// only change is a gone input file says that no row was relabelled, not the
// output's row count.
func TestDeletionOnlyMessage(t *testing.T) {
	in, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	for d := range 2 {
		writeRows(t, filepath.Join(in, "day-"+string(rune('0'+d))+".parquet"), schemas.LabelInt32, nil, lakeDays[d])
	}
	args := []string{"run", "--input", filepath.Join(in, "*.parquet"), "--output", out, "--incremental", "--rounds", "1", "--head", "off"} // few rounds: the head, still on, would make the next run a full one (lake TestLakeHeadFull)
	mustRelabel(t, args...)
	os.Remove(filepath.Join(in, "day-1.parquet"))
	r := mustRelabel(t, args...)
	if !strings.Contains(r.stdout, "1 gone") || strings.Contains(r.stdout, "800 rows relabelled") || strings.Contains(r.stdout, "400 rows relabelled") && !strings.Contains(r.stdout, "re-scored)") {
		t.Errorf("deletion-only run says:\n%s\nwant the rows relabelled by this run (none new), not the output's total", r.stdout)
	}
	if !strings.Contains(r.stdout, "no row relabelled") && !strings.Contains(r.stdout, "0 new,") {
		t.Errorf("deletion-only run says:\n%s\nwant no row relabelled, or 0 new and the re-scored ones", r.stdout)
	}
}

// TestSynthRefusesHuge: relabel synth --d 1000000000 (once
// "fatal error: runtime: out of memory" and a goroutine dump) exits 2
// naming --d, before allocating or creating anything.
func TestSynthRefusesHuge(t *testing.T) {
	out := filepath.Join(t.TempDir(), "synth")
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), []string{"synth", "--d", "1000000000", "--output", out}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--d") || !strings.Contains(stderr.String(), "memory") {
		t.Errorf("synth --d 1e9: exit %d, stderr %q; want 2 naming --d and the memory", code, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the refused synth created %s", out)
	}
}
