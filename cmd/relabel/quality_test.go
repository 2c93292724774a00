package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/pipelines"
	"github.com/relabel/relabel/schemas"
	"github.com/relabel/relabel/transforms/evaluate"
	"github.com/relabel/relabel/transforms/evaluate/harness"
)

// The tests of relabel noise and relabel eval run the commands in process
// through dispatch, on the committed digits slice (testdata/digits).

const (
	qDigits      = "../../testdata/digits/noisy-idn-0.4-part-*.parquet"
	qDigitsTruth = "../../testdata/digits/truth.i32"
	qDigitsNoisy = "../../testdata/digits/noisy-idn-0.4.i32"
	qDigitsAnnot = "../../testdata/digits/annotators-5.parquet"
)

// qDispatch runs a subcommand in process and returns its exit status and
// output.
func qDispatch(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func qMust(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := qDispatch(t, args...)
	if code != 0 {
		t.Fatalf("relabel %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func qReadI32(t *testing.T, path string) []int32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]int32, len(b)/4)
	if _, err := binary.Decode(b, binary.LittleEndian, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// qRead reads every row of the shards pattern matches with shardio, rows in
// file order, labels as class indices of C classes.
func qRead(t *testing.T, pattern string, c int) *schemas.Rows {
	t.Helper()
	ctx := context.Background()
	shards, err := shardio.Scan(ctx, pattern, shardio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := &schemas.Rows{LabelOff: []int32{0}, D: shards[0].D}
	for _, s := range shards {
		for _, u := range s.Units {
			r, err := shardio.ReadUnit(ctx, u, shardio.ReadOptions{Classes: c, D: s.D})
			if err != nil {
				t.Fatal(err)
			}
			all.IDs = append(all.IDs, r.IDs...)
			all.Features = append(all.Features, r.Features...)
			base := int32(len(all.Labels))
			all.Labels = append(all.Labels, r.Labels...)
			for _, o := range r.LabelOff[1:] {
				all.LabelOff = append(all.LabelOff, base+o)
			}
			all.Multi = r.Multi
		}
	}
	return all
}

// qClean writes the clean digits (the committed slice's ids and features with
// the true labels) as one Parquet file of two row groups, once.
var qCleanOnce struct {
	sync.Once
	path string
	rows *schemas.Rows
	err  error
}

func qClean(t *testing.T) (string, *schemas.Rows) {
	t.Helper()
	qCleanOnce.Do(func() {
		rows := qRead(t, qDigits, 10)
		truth := qReadI32(t, qDigitsTruth)
		for i, id := range rows.IDs {
			rows.Labels[i] = truth[id]
		}
		dir, err := os.MkdirTemp("", "relabel-quality-test-")
		if err != nil {
			qCleanOnce.err = err
			return
		}
		qCleanOnce.path = filepath.Join(dir, "clean.parquet")
		qCleanOnce.rows = rows
		half := rows.Len() / 2
		qCleanOnce.err = shardio.WriteInput(context.Background(), blobio.Local{}, qCleanOnce.path, shardio.Parquet,
			[]*schemas.Rows{qSlice(rows, 0, half), qSlice(rows, half, rows.Len())}, schemas.LabelInt32, nil, nil)
	})
	if qCleanOnce.err != nil {
		t.Fatal(qCleanOnce.err)
	}
	return qCleanOnce.path, qCleanOnce.rows
}

func qSlice(r *schemas.Rows, lo, hi int) *schemas.Rows {
	s := &schemas.Rows{IDKind: r.IDKind, Offset: int64(lo), D: r.D, IDs: r.IDs[lo:hi], Features: r.Features[lo*r.D : hi*r.D],
		Labels: r.Labels[lo:hi], LabelOff: make([]int32, hi-lo+1)}
	for i := range s.LabelOff {
		s.LabelOff[i] = int32(i)
	}
	return s
}

// qTol is a 4.5 sigma band for a fraction of n Bernoulli(p) trials.
func qTol(p float64, n int) float64 { return 4.5*math.Sqrt(p*(1-p)/float64(n)) + 1/float64(n) }

// TestNoise writes every kind of noise over the clean digits and reads the
// noisy file back: same ids and features in the same order, the label
// column replaced at the rate asked, pair flips going to the next class,
// annotators right as often as their accuracies say; the true labels written
// to --truth-output; and equal seeds giving byte-identical files.
func TestNoise(t *testing.T) {
	clean, rows := qClean(t)
	n := rows.Len()
	dir := t.TempDir()
	for _, tc := range []struct {
		kind  string
		args  []string
		wrong float64 // expected fraction of wrong labels (of annotations)
	}{
		{"sym", []string{"--rate", "0.4"}, 0.4},
		{"pair", []string{"--rate", "0.3"}, 0.3},
		// Per-row rates ~ N(0.4, 0.1) truncated to [0,1] have mean 0.4.
		{"idn", []string{"--rate", "0.4"}, 0.4},
		// Accuracies .55, .60, .65, .70, .75: mean .65.
		{"annotators", []string{"--annotators", "5", "--accuracy-lo", "0.55", "--accuracy-hi", "0.75"}, 0.35},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			out := filepath.Join(dir, tc.kind+".parquet")
			truthOut := filepath.Join(dir, tc.kind+"-truth.i32")
			stdout := qMust(t, append([]string{"noise", "--input", clean, "--output", out, "--kind", tc.kind, "--seed", "7", "--truth-output", truthOut}, tc.args...)...)
			t.Log(strings.TrimSpace(stdout))
			got := qRead(t, out, 10)
			if !slices.Equal(got.IDs, rows.IDs) || !slices.Equal(got.Features, rows.Features) {
				t.Fatalf("the noisy file's ids or features differ from the clean file's")
			}
			if got.Multi != (tc.kind == "annotators") {
				t.Errorf("a list of labels: %v", got.Multi)
			}
			wrong, total := 0, 0
			for i := range n {
				y := rows.Labels[i]
				labels := got.Labels[got.LabelOff[i]:got.LabelOff[i+1]]
				if want := 1; tc.kind == "annotators" {
					want = 5
					if len(labels) != want {
						t.Fatalf("row %d: %d annotations, want %d", i, len(labels), want)
					}
				} else if len(labels) != want {
					t.Fatalf("row %d: %d labels, want 1", i, len(labels))
				}
				for _, l := range labels {
					total++
					if l != y {
						wrong++
						if tc.kind == "pair" && l != (y+1)%10 {
							t.Fatalf("row %d: pair flip of %d gave %d", i, y, l)
						}
					}
				}
			}
			if frac := float64(wrong) / float64(total); math.Abs(frac-tc.wrong) > qTol(tc.wrong, total)+0.01 {
				t.Errorf("%.4f of the labels wrong, want %.2f", frac, tc.wrong)
			}
			truth := qReadI32(t, truthOut)
			want := qReadI32(t, qDigitsTruth)
			if !slices.Equal(truth, want) {
				t.Errorf("--truth-output differs from the true labels")
			}
		})
	}

	t.Run("same seed, same bytes", func(t *testing.T) {
		for _, ext := range []string{".parquet", ".arrow"} {
			a, b, c := filepath.Join(dir, "a"+ext), filepath.Join(dir, "b"+ext), filepath.Join(dir, "c"+ext)
			args := []string{"noise", "--input", clean, "--kind", "idn", "--rate", "0.4"}
			qMust(t, append(args, "--output", a, "--seed", "3")...)
			qMust(t, append(args, "--output", b, "--seed", "3")...)
			qMust(t, append(args, "--output", c, "--seed", "4")...)
			ba, _ := os.ReadFile(a)
			bb, _ := os.ReadFile(b)
			bc, _ := os.ReadFile(c)
			if len(ba) == 0 || !bytes.Equal(ba, bb) {
				t.Errorf("%s: two runs with seed 3 wrote different files (%d, %d bytes)", ext, len(ba), len(bb))
			}
			if bytes.Equal(ba, bc) {
				t.Errorf("%s: seeds 3 and 4 wrote the same file", ext)
			}
		}
	})

	t.Run("Parquet truth", func(t *testing.T) {
		noisy, truthOut := filepath.Join(dir, "t.arrow"), filepath.Join(dir, "t-truth.parquet")
		qMust(t, "noise", "--input", clean, "--output", noisy, "--kind", "sym", "--rate", "0.2", "--truth-output", truthOut)
		got := qRead(t, truthOut, 10)
		if !slices.Equal(got.IDs, rows.IDs) || !slices.Equal(got.Labels, rows.Labels) {
			t.Errorf("the Parquet truth file is not the clean rows")
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no kind", []string{"--input", clean, "--output", filepath.Join(dir, "x.parquet")}, 2, "required"},
		{"unknown kind", []string{"--input", clean, "--output", filepath.Join(dir, "x.parquet"), "--kind", "gauss"}, 2, "unknown kind"},
		{"no rate", []string{"--input", clean, "--output", filepath.Join(dir, "x.parquet"), "--kind", "sym"}, 2, "--rate is required"},
		{"bad rate", []string{"--input", clean, "--output", filepath.Join(dir, "x.parquet"), "--kind", "sym", "--rate", "1.5"}, 1, "rate 1.5 outside [0,1]"},
		{"exists", []string{"--input", clean, "--output", filepath.Join(dir, "sym.parquet"), "--kind", "sym", "--rate", "0.1"}, 1, "exists (pass --overwrite"},
		{"annotations as truth", []string{"--input", qDigitsAnnot, "--output", filepath.Join(dir, "x.parquet"), "--kind", "sym", "--rate", "0.1"}, 1, "needs one true label per row"},
	} {
		code, _, errs := qDispatch(t, append([]string{"noise"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tc.name, code, errs, tc.code, tc.msg)
		}
	}
}

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
	truth, noisy := qReadI32(t, qDigitsTruth), qReadI32(t, qDigitsNoisy)

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

	// The given labels as the truth: nothing is wrong, and every change is
	// a mistake.
	self := qEvalJSON(t, "--output", out, "--truth", qDigitsNoisy)
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
		cell := harness.Cell{Dataset: "sklearn_digits", Dir: dir, Noise: "idn-0.4", File: filepath.Join(dir, "noisy-idn-0.4.parquet")}
		h, _, err := harness.RunCell(cell, pipelines.Defaults())
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
	truth := qReadI32(t, qDigitsTruth)
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
	qMust(t, "run", "--input", noisy, "--output", out, "--rounds", "3")
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
