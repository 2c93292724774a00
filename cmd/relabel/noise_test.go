package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/schemas"
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
		truth := readI32(t, qDigitsTruth)
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
			truth := readI32(t, truthOut)
			want := readI32(t, qDigitsTruth)
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
