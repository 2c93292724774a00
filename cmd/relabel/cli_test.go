package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCLIAccuracy runs the built binary on the real digits files (written by
// parquet-rs, not by relabel) and scores the output it wrote against the truth:
// the cleaned labels must beat the given ones by a clear margin and reach the
// kNN-vote level of data/README.md.
func TestCLIAccuracy(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		args        []string
		// wantGiven bounds the given labels' accuracy (a check that the
		// right labels were read); wantClean is the floor for relabel.
		wantGiven [2]float64
		wantClean float64
	}{
		// idn 0.4: noisy .601; a kNN vote .933.
		{"digits idn-0.4", "sklearn_digits/noisy-idn-0.4.parquet", nil, [2]float64{.59, .61}, .93},
		// 5 annotators: majority vote .912.
		{"digits 5 annotators", "sklearn_digits/annotators-5.parquet", nil, [2]float64{.90, .92}, .93},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := needShared(t, tc.input)
			truth := readI32(t, needShared(t, "sklearn_digits/truth.i32"))
			out := outDir(t, strings.ReplaceAll(tc.name, " ", "_"))
			r := sharedRun(t, append([]string{"run", "--input", in, "--output", out}, tc.args...)...)
			base := strings.TrimSuffix(filepath.Base(in), filepath.Ext(in))
			o := readOutput(t, filepath.Join(out, base+".arrow"))
			if len(o.ids) != len(truth) {
				t.Fatalf("%d output rows, want %d", len(o.ids), len(truth))
			}
			given, clean := o.givenAccuracy(truth), o.accuracy(t, truth)
			t.Logf("given labels %.3f accurate, cleaned %.3f; %s", given, clean, strings.TrimSpace(r.stdout))
			if given < tc.wantGiven[0] || given > tc.wantGiven[1] {
				t.Errorf("given labels %.3f accurate, want in [%.2f, %.2f]: the label column was not copied through", given, tc.wantGiven[0], tc.wantGiven[1])
			}
			if clean < tc.wantClean {
				t.Errorf("cleaned labels %.3f accurate, want >= %.2f (given %.3f)", clean, tc.wantClean, given)
			}
			if clean < given+0.01 {
				t.Errorf("cleaned labels %.3f accurate, no clear gain over the given %.3f", clean, given)
			}
		})
	}
}

// digitsShards is the committed two-shard slice of digits (four row groups).
const digitsShards = "../../testdata/digits/noisy-idn-0.4-part-*.parquet"

// TestCLITestdataShards runs the README's example input: two shards give two
// outputs with the same base names and a summary.json whose counts agree with
// them; stderr shows progress while it runs; and the labels equal those of
// the one-file run of the same data (other shards, row groups and bundles).
func TestCLITestdataShards(t *testing.T) {
	out := outDir(t, "testdata-digits")
	r := sharedRun(t, "run", "--input", digitsShards, "--output", out)

	want := []string{"noisy-idn-0.4-part-0000.arrow", "noisy-idn-0.4-part-0001.arrow", "report.html", "summary.json"}
	if got := listDir(t, out); !slices.Equal(got, want) {
		t.Fatalf("output directory holds %q, want %q", got, want)
	}
	truth := readI32(t, "../../testdata/digits/truth.i32")
	var all output
	changedFrom := make([]int64, 10)
	rows := map[string]int{}
	for _, name := range want[:2] {
		o := readOutput(t, filepath.Join(out, name))
		rows[name] = len(o.ids)
		all.ids = append(all.ids, o.ids...)
		all.clean = append(all.clean, o.clean...)
		all.given = append(all.given, o.given...)
		for i, c := range o.changed {
			g := o.given[i][0]
			if c != (g != o.clean[i]) {
				t.Errorf("%s row %d: changed = %v, but label %d and clean_label %d", name, i, c, g, o.clean[i])
			}
			if c {
				changedFrom[g]++
			}
			if p := o.prob[i]; !(p > 0 && p <= 1) {
				t.Errorf("%s row %d: clean_prob %v outside (0, 1]", name, i, p)
			}
		}
	}
	if rows[want[0]] != 899 || rows[want[1]] != 898 {
		t.Errorf("output rows per shard %v, want 899 and 898", rows)
	}
	given, clean := all.givenAccuracy(truth), all.accuracy(t, truth)
	t.Logf("given %.3f, cleaned %.3f", given, clean)
	if clean < .93 || clean < given+.2 {
		t.Errorf("cleaned labels %.3f accurate, want >= .93 and well above the given %.3f", clean, given)
	}

	var sum struct {
		Rows        int64   `json:"rows"`
		Changed     int64   `json:"changed"`
		Classes     int     `json:"classes"`
		ChangedFrom []int64 `json:"changed_from"`
		ChangedTo   []int64 `json:"changed_to"`
		Shards      []struct {
			Input, Output string
			Rows          int64
		} `json:"shards"`
		Options map[string]string `json:"options"`
		Metrics map[string]int64  `json:"metrics"`
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	var changed int64
	for _, n := range changedFrom {
		changed += n
	}
	if sum.Rows != 1797 || sum.Classes != 10 || sum.Changed != changed {
		t.Errorf("summary rows %d, classes %d, changed %d; want 1797, 10, %d (counted in the outputs)", sum.Rows, sum.Classes, sum.Changed, changed)
	}
	if !slices.Equal(sum.ChangedFrom, changedFrom) {
		t.Errorf("summary changed_from %v, counted in the outputs %v", sum.ChangedFrom, changedFrom)
	}
	var to int64
	for _, n := range sum.ChangedTo {
		to += n
	}
	if to != changed {
		t.Errorf("summary changed_to sums to %d, want %d", to, changed)
	}
	if len(sum.Shards) != 2 || sum.Shards[0].Rows+sum.Shards[1].Rows != 1797 {
		t.Errorf("summary shards %+v, want two summing to 1797 rows", sum.Shards)
	}
	// Every item runs each of the 10 rounds once; each row is read and
	// written once.
	if m := sum.Metrics; m["item_rounds"] != 10*1797 || m["rows_read"] != 1797 || m["rows_written"] != 1797 || m["labels_changed"] != changed {
		t.Errorf("summary metrics %v, want item_rounds 17970, rows_read and rows_written 1797, labels_changed %d", m, changed)
	}
	if sum.Options["seed"] != "1" || sum.Options["rounds"] != "10" {
		t.Errorf("summary options %v, want the defaults seed 1 and rounds 10", sum.Options)
	}
	if !strings.Contains(r.stdout, "1797 rows relabelled") || !strings.Contains(r.stdout, out) {
		t.Errorf("stdout %q does not say how many rows were relabelled and where the output went", r.stdout)
	}

	// Progress in a log (no terminal): a plain line per stage, per tenth
	// of the rows read and per round; none of Beam's or Prism's INFO lines.
	for _, p := range []string{
		"relabel: 1,797 rows in 2 shard(s), 10 rounds\n",
		"relabel: read 1,797/1,797 rows\n",
		"relabel: round 1/10\n",
		"relabel: round 10/10\n",
		"relabel: committing\n",
	} {
		if strings.Count(r.stderr, p) != 1 {
			t.Errorf("stderr lacks exactly one progress line %q:\n%s", p, tail(r.stderr, 3000))
		}
	}
	for _, noise := range []string{"level=INFO", "Staged binary", "job-001", "pipeline done"} {
		if strings.Contains(r.stderr, noise) {
			t.Errorf("stderr shows Beam's INFO noise %q without --verbose:\n%s", noise, tail(r.stderr, 3000))
		}
	}
	// The text report: noisiest classes, pairs, suspects, where the page is.
	for _, p := range []string{"Noisiest classes", "Most changed pairs", "Likeliest wrong labels", "relabel: report in " + filepath.Join(out, "report.html")} {
		if !strings.Contains(r.stdout, p) {
			t.Errorf("stdout lacks %q:\n%s", p, r.stdout)
		}
	}

	// The same rows as one file of one row group (the shared original) give
	// the same labels: batching must not change the result.
	in := filepath.Join(sharedData, "sklearn_digits/noisy-idn-0.4.parquet")
	if _, err := os.Stat(in); err != nil {
		t.Logf("development data absent (%v): not comparing with the one-file run", err)
		return
	}
	one := outDir(t, "digits_idn-0.4")
	sharedRun(t, "run", "--input", in, "--output", one)
	ref := readOutput(t, filepath.Join(one, "noisy-idn-0.4.arrow")).byID()
	diff := 0
	for i, id := range all.ids {
		if ref[id] != all.clean[i] {
			if diff < 5 {
				t.Errorf("id %d: clean_label %d from two shards, %d from one file", id, all.clean[i], ref[id])
			}
			diff++
		}
	}
	if diff > 0 || len(ref) != len(all.ids) {
		t.Errorf("%d of %d labels differ between the two-shard and the one-file run (%d rows there)", diff, len(all.ids), len(ref))
	}
}
