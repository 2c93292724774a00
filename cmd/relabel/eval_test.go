package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/job"
	"github.com/relabel/relabel/quality/grid"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/evaluate"
)

// qEval is relabel eval's JSON output.
type qEval struct {
	Rows       int             `json:"rows"`
	Unlabelled int             `json:"unlabelled_skipped"`
	Report     evaluate.Report `json:"report"`
}

func qEvalJSON(t *testing.T, args ...string) qEval {
	t.Helper()
	var e qEval
	out := qMust(t, append(append([]string{"eval"}, args...), "--json")...)
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("eval --json: %v\n%s", err, out)
	}
	return e
}

// qSummary is the part of summary.json the eval tests compare with.
type qSummary struct {
	Rows    int `json:"rows"`
	Changed int `json:"changed"`
}

func qReadSummary(t *testing.T, dir string) qSummary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s qSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEval relabels the committed digits slice with relabel run (in process,
// the default options) and scores the output with relabel eval, checking its
// figures against what is known independently: the given labels' accuracy
// (from the .i32 files), the number of changed labels (summary.json: scored
// against the given labels themselves, the cleaned accuracy is 1 -
// changed/rows), the kNN vote (evaluate.KNNVote over the rows read by id),
// and the same report whichever form the truth comes in.
func TestEval(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	qMust(t, "run", "--input", qDigits, "--output", out)
	sum := qReadSummary(t, out)
	truth, noisy := readI32(t, qDigitsTruth), readI32(t, qDigitsNoisy)

	e := qEvalJSON(t, "--output", out, "--truth", qDigitsTruth, "--input", qDigits)
	r := e.Report
	t.Logf("digits idn-0.4: noisy %.4f, cleaned %.4f, F1 %.4f, AUC %.4f, ECE %.4f, baselines %+v",
		float64(r.NoisyAccuracy), float64(r.CleanedAccuracy), float64(r.F1), float64(r.AUC), float64(r.ECE), r.Baselines)
	if e.Rows != 1797 || r.Items != 1797 || e.Unlabelled != 0 || r.Classes != 10 {
		t.Errorf("rows %d, items %d, unlabelled %d, classes %d", e.Rows, r.Items, e.Unlabelled, r.Classes)
	}
	if want := 1 - qFrac(truth, noisy); math.Abs(float64(r.NoisyAccuracy)-want) > 1e-12 {
		t.Errorf("noisy accuracy %.6f, the .i32 files give %.6f", float64(r.NoisyAccuracy), want)
	}
	if r.Flagged != sum.Changed {
		t.Errorf("%d flagged, summary.json says %d changed", r.Flagged, sum.Changed)
	}
	if !(r.CleanedAccuracy > r.NoisyAccuracy) || !r.F1.Valid() || !(r.AUC > 0.5) || !r.ECE.Valid() {
		t.Errorf("cleaned %v noisy %v F1 %v AUC %v ECE %v", r.CleanedAccuracy, r.NoisyAccuracy, r.F1, r.AUC, r.ECE)
	}
	rows := qRead(t, qDigits, 10)
	x := make([]float32, len(rows.Features))
	given := make([]int32, rows.Len())
	for i, id := range rows.IDs { // by id: the oracle does not rely on file order
		copy(x[int(id)*rows.D:], rows.Features[i*rows.D:(i+1)*rows.D])
		given[id] = rows.Labels[i]
	}
	vote := evaluate.KNNVote(x, rows.Len(), rows.D, given, 10, 10, true)
	if len(r.Baselines) != 1 || math.Abs(float64(r.Baselines[0].Accuracy)-(1-qFrac(truth, vote))) > 1e-12 {
		t.Errorf("baselines %+v, want the kNN vote at %.6f", r.Baselines, 1-qFrac(truth, vote))
	}

	// eval rewrote the run's report.html with the truth: its accuracy
	// table (the baseline's too), reliability diagram and detection table.
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<section id="truth">`, `id="reliability"`, `id="detection"`, r.Baselines[0].Name,
		fmt.Sprintf("%.1f%%", 100*float64(r.CleanedAccuracy)), qDigitsTruth} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html after eval lacks %q", want)
		}
	}

	// The given labels as the truth: nothing is wrong, and every change is
	// a mistake. --report=false leaves report.html as it was.
	self := qEvalJSON(t, "--output", out, "--truth", qDigitsNoisy, "--report=false")
	if again, err := os.ReadFile(filepath.Join(out, "report.html")); err != nil || !bytes.Equal(again, page) {
		t.Errorf("eval --report=false changed report.html (%v)", err)
	}
	if self.Report.NoisyAccuracy != 1 || math.Abs(float64(self.Report.CleanedAccuracy)-(1-float64(sum.Changed)/float64(sum.Rows))) > 1e-12 {
		t.Errorf("against the given labels: noisy %v, cleaned %v; want 1 and 1 - %d/%d", self.Report.NoisyAccuracy, self.Report.CleanedAccuracy, sum.Changed, sum.Rows)
	}

	// The truth as a Parquet file (the clean rows): the same report.
	clean, _ := qClean(t)
	pq := qEvalJSON(t, "--output", out, "--truth", clean, "--input", qDigits)
	if a, b := qJSON(t, pq.Report), qJSON(t, r); a != b {
		t.Errorf("truth from Parquet gives\n%s\nfrom .i32\n%s", a, b)
	}

	// The quality harness runs the engine in process instead of the
	// pipeline: it must find the same labels on the same data.
	t.Run("harness agrees", func(t *testing.T) {
		dir := filepath.Join(sharedData, "sklearn_digits")
		if _, err := os.Stat(filepath.Join(dir, "clean.parquet")); err != nil {
			t.Skipf("development data absent (%v): this test reads ../shared/data", err)
		}
		cell := grid.Cell{Dataset: "sklearn_digits", Dir: dir, Noise: "idn-0.4", File: filepath.Join(dir, "noisy-idn-0.4.parquet")}
		h, _, err := grid.RunCell(cell, job.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		if h.CleanedAccuracy != r.CleanedAccuracy || h.Fixed != r.Fixed || h.Broken != r.Broken || h.Flagged != r.Flagged || h.AUC != r.AUC {
			t.Errorf("harness: cleaned %v, fixed %d, broken %d, flagged %d, AUC %v; the pipeline: %v, %d, %d, %d, %v",
				h.CleanedAccuracy, h.Fixed, h.Broken, h.Flagged, h.AUC, r.CleanedAccuracy, r.Fixed, r.Broken, r.Flagged, r.AUC)
		}
	})

	text := qMust(t, "eval", "--output", out, "--truth", qDigitsTruth)
	for _, want := range []string{"1797 rows", "cleaned accuracy", "detection F1", "ROC AUC of 1-given_prob", "ECE of clean_prob"} {
		if !strings.Contains(text, want) {
			t.Errorf("eval output lacks %q:\n%s", want, text)
		}
	}

	short := filepath.Join(t.TempDir(), "short.i32")
	b, _ := os.ReadFile(qDigitsTruth)
	if err := os.WriteFile(short, b[:4*1000], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no truth", []string{"--output", out}, 2, "required"},
		{"truth short of ids", []string{"--output", out, "--truth", short}, 1, "id 1000 of the output has no true label"},
		{"not an output", []string{"--output", filepath.Dir(qDigits), "--truth", qDigitsTruth}, 1, "not an output of relabel run"},
		{"empty dir", []string{"--output", t.TempDir(), "--truth", qDigitsTruth}, 1, "no output shards"},
	} {
		code, _, errs := qDispatch(t, append([]string{"eval"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tc.name, code, errs, tc.code, tc.msg)
		}
	}
}

// TestEvalAnnotators scores a relabel run on the five-annotator digits: the
// given label is the majority vote (.912 in the data README) and the
// annotation accuracy is the mean over the annotators.
func TestEvalAnnotators(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	qMust(t, "run", "--input", qDigitsAnnot, "--output", out, "--format", "parquet", "--rounds", "3")
	e := qEvalJSON(t, "--output", out, "--truth", qDigitsTruth, "--input", qDigitsAnnot)
	r := e.Report
	t.Logf("digits annotators-5: annotations %.4f, majority %.4f, cleaned %.4f, baselines %+v",
		float64(r.AnnotationAccuracy), float64(r.NoisyAccuracy), float64(r.CleanedAccuracy), r.Baselines)
	rows := qRead(t, qDigitsAnnot, 10)
	truth := readI32(t, qDigitsTruth)
	maj := evaluate.MajorityVote(rows.Labels, rows.LabelOff, 10)
	right := 0
	for i, id := range rows.IDs {
		for _, l := range rows.Labels[rows.LabelOff[i]:rows.LabelOff[i+1]] {
			if l == truth[id] {
				right++
			}
		}
		maj[i] = maj[i] - truth[id] // 0 where right
	}
	wantMaj := 1 - qFrac(maj, make([]int32, len(maj)))
	if r.Annotations != len(rows.Labels) || math.Abs(float64(r.AnnotationAccuracy)-float64(right)/float64(len(rows.Labels))) > 1e-12 ||
		math.Abs(float64(r.NoisyAccuracy)-wantMaj) > 1e-12 || math.Abs(wantMaj-0.912) > 0.0005 {
		t.Errorf("annotations %d (%v right), majority %v; want %d (%d right), %.4f", r.Annotations, r.AnnotationAccuracy, r.NoisyAccuracy,
			len(rows.Labels), right, wantMaj)
	}
	if !r.CleanedAccuracy.Valid() || len(r.Baselines) != 1 {
		t.Errorf("cleaned %v, baselines %+v", r.CleanedAccuracy, r.Baselines)
	}
}

// qFrac is the fraction of positions where a and b differ.
func qFrac(a, b []int32) float64 {
	d := 0
	for i := range a {
		if a[i] != b[i] {
			d++
		}
	}
	return float64(d) / float64(len(a))
}

func qJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNoiseEvalStrings goes round the loop with string ids and string labels:
// noise keeps the class names, relabel runs on the noisy file, and eval maps
// the output's and the clean file's names to the same classes.
func TestNoiseEvalStrings(t *testing.T) {
	dir := t.TempDir()
	names := []string{"ant", "bee", "cat"}
	const n, d = 300, 3
	rows := &schemas.Rows{IDKind: schemas.IDString, D: d, LabelOff: []int32{0}}
	for i := range n {
		id := "item-" + strings.Repeat("x", i%3) + itoa(i)
		y := int32(i % 3)
		rows.StrIDs = append(rows.StrIDs, id)
		rows.IDs = append(rows.IDs, schemas.Key(id))
		for k := range d {
			v := float32((i*7+k*5)%13) / 13
			if k == int(y) {
				v += 5
			}
			rows.Features = append(rows.Features, v)
		}
		rows.Labels = append(rows.Labels, y)
		rows.LabelOff = append(rows.LabelOff, int32(i+1))
	}
	clean := filepath.Join(dir, "clean.arrow")
	if err := shardio.WriteInput(context.Background(), blobio.Local{}, clean, shardio.ArrowFile, []*schemas.Rows{rows}, schemas.LabelString, names, nil); err != nil {
		t.Fatal(err)
	}
	noisy := filepath.Join(dir, "noisy.parquet")
	qMust(t, "noise", "--input", clean, "--output", noisy, "--kind", "sym", "--rate", "0.3")
	code, _, errs := qDispatch(t, "noise", "--input", clean, "--output", filepath.Join(dir, "x.parquet"), "--kind", "sym", "--rate", "0.3", "--truth-output", filepath.Join(dir, "t.i32"))
	if code != 1 || !strings.Contains(errs, "needs int64 ids") {
		t.Errorf(".i32 truth of string ids: exit %d, %q", code, errs)
	}
	out := filepath.Join(dir, "out")
	// Without the linear head: in three rounds on 300 rows it has not yet
	// left the given labels it first learns (at the default ten rounds it
	// cleans this set to 1.0, .957 without it); this test is the strings'.
	qMust(t, "run", "--input", noisy, "--output", out, "--rounds", "3", "--head", "off")
	e := qEvalJSON(t, "--output", out, "--truth", clean, "--input", noisy)

	// The oracle: the noisy file's labels against the clean ones, by id.
	ctx := context.Background()
	shards, err := shardio.Scan(ctx, noisy, shardio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nr, err := shardio.ReadUnit(ctx, shards[0].Units[0], shardio.ReadOptions{ClassNames: names, D: d})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int32{}
	for i, id := range rows.StrIDs {
		want[id] = rows.Labels[i]
	}
	right := 0
	for i, id := range nr.StrIDs {
		if nr.Labels[i] == want[id] {
			right++
		}
	}
	r := e.Report
	if r.Items != n || r.Classes != 3 || math.Abs(float64(r.NoisyAccuracy)-float64(right)/n) > 1e-12 || math.Abs(float64(r.NoisyAccuracy)-0.7) > 0.12 {
		t.Errorf("items %d, classes %d, noisy %v; want %d, 3, %v", r.Items, r.Classes, r.NoisyAccuracy, n, float64(right)/n)
	}
	if !(r.CleanedAccuracy > r.NoisyAccuracy) || len(r.Baselines) != 1 || !(r.Baselines[0].Accuracy > 0.95) {
		t.Errorf("cleaned %v, noisy %v, baselines %+v: separated clusters should clean well", r.CleanedAccuracy, r.NoisyAccuracy, r.Baselines)
	}
}
