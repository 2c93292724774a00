package reportio

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.html")

// oracle computes the report's figures straight from the rows.
func oracle(f fixture, top int) *Report {
	r := &Report{}
	c := f.c
	r.Classes = make([]ClassRow, c)
	sumGP := make([]float64, c)
	pairs := map[[2]int32]int64{}
	var labelled []row
	for _, x := range f.rows() {
		r.Rows++
		r.Classes[x.clean].Clean++
		if x.changed {
			r.Changed++
			r.Classes[x.clean].ChangedTo++
		}
		if len(x.given) == 0 {
			continue
		}
		g := majority(x.given)
		r.Labelled++
		r.Classes[g].Given++
		sumGP[g] += float64(x.gp)
		ch := 0
		if x.changed {
			ch = 1
			r.Classes[g].ChangedFrom++
			pairs[[2]int32{g, x.clean}]++
		}
		r.Hist[ch][min(int(math.Floor(float64(x.gp)*HistBins)), HistBins-1)]++
		labelled = append(labelled, x)
	}
	for k := range r.Classes {
		r.Classes[k].Class = k
		r.Classes[k].MeanGivenProb = sumGP[k] / float64(r.Classes[k].Given)
		r.Classes[k].NoiseRate = 1 - r.Classes[k].MeanGivenProb
	}
	for k, n := range pairs {
		r.Pairs = append(r.Pairs, Pair{Given: k[0], Clean: k[1], Count: n})
	}
	slices.SortFunc(r.Pairs, func(a, b Pair) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		if a.Given != b.Given {
			return int(a.Given - b.Given)
		}
		return int(a.Clean - b.Clean)
	})
	slices.SortStableFunc(labelled, func(a, b row) int {
		switch {
		case a.gp < b.gp:
			return -1
		case a.gp > b.gp:
			return 1
		}
		return 0
	})
	for _, x := range labelled[:min(top, len(labelled))] {
		id := x.sid
		if !f.strIDs {
			id = itoa(x.id)
		}
		r.Suspects = append(r.Suspects, Suspect{ID: id, Given: x.given, Clean: x.clean, GivenProb: x.gp, CleanProb: x.cp, Posterior: x.post[:min(3, len(x.post))], Truth: x.truth})
	}
	return r
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func close(a, b float64) bool { return math.Abs(a-b) < 1e-9 || (math.IsNaN(a) && math.IsNaN(b)) }

func TestBuildAgainstOracle(t *testing.T) {
	pq, ar := shardio.Parquet, shardio.ArrowFile
	for _, tc := range []struct {
		name    string
		c, rows int
		formats []shardio.Format
		names   []string
		strIDs  bool
		multi   bool
		top     int
	}{
		{name: "arrow int labels", c: 5, rows: 400, formats: []shardio.Format{ar, ar}, top: 17},
		{name: "parquet string labels and ids", c: 3, rows: 300, formats: []shardio.Format{pq, pq, pq}, names: []string{"bird", "cat", "dog"}, strIDs: true, top: 25},
		{name: "mixed formats, annotations", c: 4, rows: 250, formats: []shardio.Format{pq, ar}, multi: true, top: 40},
		{name: "top beyond the rows", c: 2, rows: 30, formats: []shardio.Format{ar}, top: 1000},
		{name: "top one", c: 7, rows: 200, formats: []shardio.Format{pq}, top: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := randomFixture(uint64(tc.rows), tc.c, tc.rows, tc.formats, tc.names, tc.strIDs, tc.multi)
			dir := t.TempDir()
			sum := f.write(t, dir, nil)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			got, err := Build(context.Background(), dir, Options{Top: tc.top, Pairs: 1000, Truth: f.truth(), Mem: mem})
			if err != nil {
				t.Fatal(err)
			}
			want := oracle(f, tc.top)
			if got.Rows != want.Rows || got.Labelled != want.Labelled || got.Changed != want.Changed {
				t.Errorf("rows/labelled/changed = %d/%d/%d, want %d/%d/%d", got.Rows, got.Labelled, got.Changed, want.Rows, want.Labelled, want.Changed)
			}
			for k, w := range want.Classes {
				g := got.Classes[k]
				if g.Given != w.Given || g.Clean != w.Clean || g.ChangedFrom != w.ChangedFrom || g.ChangedTo != w.ChangedTo ||
					!close(g.MeanGivenProb, w.MeanGivenProb) || !close(g.NoiseRate, w.NoiseRate) {
					t.Errorf("class %d = %+v, want %+v", k, g, w)
				}
				if g.ChangedFrom != sum.ChangedFrom[k] || g.ChangedTo != sum.ChangedTo[k] {
					t.Errorf("class %d changed from/to %d/%d, summary.json says %d/%d", k, g.ChangedFrom, g.ChangedTo, sum.ChangedFrom[k], sum.ChangedTo[k])
				}
			}
			if len(got.Pairs) != len(want.Pairs) {
				t.Fatalf("%d pairs, want %d", len(got.Pairs), len(want.Pairs))
			}
			for i, w := range want.Pairs {
				g := got.Pairs[i]
				if g.Given != w.Given || g.Clean != w.Clean || g.Count != w.Count || !close(g.Trans, sum.Transition[w.Clean][w.Given]) {
					t.Errorf("pair %d = %+v, want %+v", i, g, w)
				}
			}
			if got.Hist != want.Hist {
				t.Errorf("hist = %v, want %v", got.Hist, want.Hist)
			}
			if len(got.Suspects) != len(want.Suspects) {
				t.Fatalf("%d suspects, want %d", len(got.Suspects), len(want.Suspects))
			}
			for i, w := range want.Suspects {
				g := got.Suspects[i]
				if g.ID != w.ID || !slices.Equal(g.Given, w.Given) || g.Clean != w.Clean || g.GivenProb != w.GivenProb ||
					g.CleanProb != w.CleanProb || !slices.Equal(g.Posterior, w.Posterior) || g.Truth != w.Truth {
					t.Errorf("suspect %d = %+v, want %+v", i, g, w)
				}
			}
			checkTruth(t, f, got.Truth)
		})
	}
}

// checkTruth recomputes the truth figures from the rows.
func checkTruth(t *testing.T, f fixture, tr *TruthReport) {
	t.Helper()
	if tr == nil {
		t.Fatal("no truth report")
	}
	var n, givenOK, cleanOK, wrong, chWrong, chAll int64
	var relN, relOK [RelBins]int64
	var relP [RelBins]float64
	for _, x := range f.rows() {
		if len(x.given) == 0 {
			continue
		}
		n++
		g := majority(x.given)
		if g == x.truth {
			givenOK++
		} else {
			wrong++
		}
		if x.clean == x.truth {
			cleanOK++
		}
		if x.changed {
			chAll++
			if g != x.truth {
				chWrong++
			}
		}
		b := min(int(math.Floor(float64(x.cp)*RelBins)), RelBins-1)
		relN[b]++
		relP[b] += float64(x.cp)
		if x.clean == x.truth {
			relOK[b]++
		}
	}
	if tr.Rows != n || !close(tr.GivenAcc, float64(givenOK)/float64(n)) || !close(tr.CleanAcc, float64(cleanOK)/float64(n)) {
		t.Errorf("truth rows/given/clean = %d/%v/%v, want %d/%v/%v", tr.Rows, tr.GivenAcc, tr.CleanAcc, n, float64(givenOK)/float64(n), float64(cleanOK)/float64(n))
	}
	if !close(tr.ChangedPrecision, float64(chWrong)/float64(chAll)) || !close(tr.ChangedRecall, float64(chWrong)/float64(wrong)) {
		t.Errorf("changed P/R = %v/%v, want %v/%v", tr.ChangedPrecision, tr.ChangedRecall, float64(chWrong)/float64(chAll), float64(chWrong)/float64(wrong))
	}
	var ece float64
	for b := range relN {
		if relN[b] == 0 {
			continue
		}
		acc, mp := float64(relOK[b])/float64(relN[b]), relP[b]/float64(relN[b])
		ece += float64(relN[b]) / float64(n) * math.Abs(acc-mp)
		if rb := tr.Reliability[b]; rb.N != relN[b] || !close(rb.Accuracy, acc) || math.Abs(rb.MeanProb-mp) > 1e-9 {
			t.Errorf("reliability bin %d = %+v, want n %d acc %v mean %v", b, rb, relN[b], acc, mp)
		}
	}
	if math.Abs(tr.ECE-ece) > 1e-9 {
		t.Errorf("ECE = %v, want %v", tr.ECE, ece)
	}
	for _, d := range tr.Detection {
		var flagged, hit int64
		for _, x := range f.rows() {
			if len(x.given) > 0 && float64(x.gp) < d.Threshold {
				flagged++
				if majority(x.given) != x.truth {
					hit++
				}
			}
		}
		if d.Flagged != flagged || !close(d.Recall, float64(hit)/float64(wrong)) || (flagged > 0 && !close(d.Precision, float64(hit)/float64(flagged))) {
			t.Errorf("detection at %v = %+v, want flagged %d hit %d of %d wrong", d.Threshold, d, flagged, hit, wrong)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	ar := shardio.ArrowFile
	for _, tc := range []struct {
		name string
		edit func(*resultio.Summary)
		dir  func(t *testing.T, dir string)
		want []string // substrings of the error
	}{
		{name: "rows disagree", edit: func(s *resultio.Summary) { s.Rows++ }, want: []string{"summary.json", "rows"}},
		{name: "changed disagree", edit: func(s *resultio.Summary) { s.Changed-- }, want: []string{"changed"}},
		{name: "label outside classes", edit: func(s *resultio.Summary) { s.Classes = 2; s.Transition = nil; s.ChangedFrom = s.ChangedFrom[:2] },
			want: []string{"part-0.arrow", "row", `column "`, "outside [0,2)"}},
		{name: "names for integer labels", edit: func(s *resultio.Summary) { s.ClassNames = []string{"a", "b", "c", "d"} }, want: []string{"part-0.arrow row 0", "integer label"}},
		{name: "missing shard", edit: func(s *resultio.Summary) { s.Shards[0].Output = "gone.arrow" }, want: []string{"gone.arrow"}},
		{name: "no summary", dir: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "summary.json")) }, want: []string{"not a finished relabel output"}},
		{name: "not a shard", dir: func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "part-0.arrow"), []byte("hello, world"), 0o644)
		}, want: []string{"part-0.arrow", "not Parquet (PAR1) nor Arrow IPC"}},
		{name: "truncated", dir: func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "part-0.arrow"))
			os.WriteFile(filepath.Join(dir, "part-0.arrow"), b[:len(b)/2], 0o644)
		}, want: []string{"part-0.arrow", "corrupt or truncated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := randomFixture(3, 4, 60, []shardio.Format{ar}, nil, false, false)
			dir := t.TempDir()
			f.write(t, dir, tc.edit)
			if tc.dir != nil {
				tc.dir(t, dir)
			}
			out, err := Write(context.Background(), dir, Options{})
			if err == nil {
				t.Fatalf("Write = %s, want an error", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".html") {
					t.Errorf("left %s behind after the error", e.Name())
				}
			}
		})
	}
}

// goldenFixture is the small output directory of the golden page.
func goldenFixture() fixture {
	return randomFixture(42, 4, 120, []shardio.Format{shardio.ArrowFile, shardio.Parquet}, []string{"bird", "cat", "dog", "a very long class name"}, false, false)
}

// TestGoldenPage pins the page's bytes on a fixed output directory
// (go test -update rewrites testdata/golden.html after a deliberate change):
// the page depends only on the directory's content.
func TestGoldenPage(t *testing.T) {
	f := goldenFixture()
	dir := t.TempDir()
	f.write(t, dir, nil)
	render := func() []byte {
		r, err := Build(context.Background(), dir, Options{Top: 20, Truth: f.truth(), TruthName: "truth.i32",
			Baselines: []Baseline{{"kNN vote (K=10)", 0.5}}})
		if err != nil {
			t.Fatal(err)
		}
		r.Dir = "OUT" // the temporary directory's name is not part of the page
		var b bytes.Buffer
		if err := r.Render(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	got := render()
	if again := render(); !bytes.Equal(got, again) {
		t.Fatal("two renders of one directory differ")
	}
	path := filepath.Join("testdata", "golden.html")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("page differs from %s (go test -update rewrites it after a deliberate change); first difference at byte %d", path, firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPageShowsSummary checks the run's figures on the page against
// summary.json, by the elements' ids.
func TestPageShowsSummary(t *testing.T) {
	f := randomFixture(9, 3, 2500, []shardio.Format{shardio.ArrowFile, shardio.Parquet}, nil, false, false)
	dir := t.TempDir()
	sum := f.write(t, dir, nil)
	out, err := Write(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out != filepath.Join(dir, FileName) {
		t.Errorf("wrote %s, want %s", out, filepath.Join(dir, FileName))
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range summaryFigures(sum) {
		m := regexp.MustCompile(`id="` + id + `">([^<]*)<`).FindSubmatch(page)
		if m == nil {
			t.Errorf("no element #%s", id)
			continue
		}
		if strings.ReplaceAll(string(m[1]), "\u202f", "") != want {
			t.Errorf("#%s shows %q, summary.json says %q", id, m[1], want)
		}
	}
	if bytes.Contains(page, []byte("http://")) || bytes.Contains(page, []byte("https://")) {
		t.Error("the page names a network address")
	}
}

// TestWriteOut writes to Options.Out.
func TestWriteOut(t *testing.T) {
	f := randomFixture(5, 2, 50, []shardio.Format{shardio.ArrowFile}, nil, false, false)
	dir := t.TempDir()
	f.write(t, dir, nil)
	want := filepath.Join(t.TempDir(), "elsewhere.html")
	got, err := Write(context.Background(), dir, Options{Out: want, Top: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Write = %s, want %s", got, want)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("The 0 likeliest wrong labels")) {
		t.Error("Top -1 still lists suspects")
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		t.Error("also wrote the default report.html")
	}
}

// summaryFigures are the run's figures the page shows, by element id, as
// summary.json has them (the page groups digits with a narrow space, which
// the comparison drops).
func summaryFigures(s *resultio.Summary) map[string]string {
	return map[string]string{
		"run-rows":        strconv.FormatInt(s.Rows, 10),
		"run-changed":     strconv.FormatInt(s.Changed, 10),
		"run-changed-pct": strconv.FormatFloat(100*(float64(s.Changed)/float64(s.Rows)), 'f', 1, 64) + "%",
		"run-classes":     strconv.Itoa(s.Classes),
		"run-wall":        strconv.FormatFloat(s.Timings["total"], 'f', 1, 64) + " s",
		"run-device":      s.Device,
		"run-neighbours":  s.Neighbours,
		"run-input":       s.Input,
	}
}
