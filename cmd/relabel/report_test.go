package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/relabel/relabel/io/annotio"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/reportio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/io/shardio"
	"github.com/relabel/relabel/transforms/crowd"
)

// digitsReport runs relabel on the committed digits shards (shared with the
// other CLI tests) and writes its report with reportCmd to a file outside the
// run's directory, which the other tests list.
func digitsReport(t *testing.T, args ...string) (dir, page string) {
	t.Helper()
	dir = outDir(t, "testdata-digits")
	sharedRun(t, "run", "--input", digitsShards, "--output", dir)
	page = filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if err := reportCmd(context.Background(), append([]string{dir, "--out", page}, args...), &stdout, &stderr); err != nil {
		t.Fatalf("relabel report: %v\n%s", err, stderr.String())
	}
	if want := "relabel report: wrote " + page + "\n"; stdout.String() != want {
		t.Errorf("stdout = %q, want %q", stdout.String(), want)
	}
	return dir, page
}

func readSummary(t *testing.T, dir string) *resultio.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s resultio.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestReportUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no directory", nil, "DIR is required"},
		{"two directories", []string{"a", "b"}, "unexpected arguments"},
		{"negative top", []string{"a", "--top", "-1"}, "--top -1"},
		{"bad flag", []string{"a", "--nope"}, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := reportCmd(context.Background(), tc.args, &stdout, &stderr)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("reportCmd(%q) = %v, want a usage error saying %q", tc.args, err, tc.want)
			}
		})
	}
	t.Run("not an output", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		err := reportCmd(context.Background(), []string{t.TempDir()}, &stdout, &stderr)
		var ue usageError
		if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "not a finished relabel output") {
			t.Errorf("reportCmd(empty dir) = %v, want a run error saying it is not an output", err)
		}
	})
}

// pageFacts is what the in-page script reads from the DOM.
type pageFacts struct {
	Figures     map[string]string `json:"figures"`
	HeatCells   int               `json:"heatCells"`
	RowLabels   []string          `json:"rowLabels"`
	ColLabels   []string          `json:"colLabels"`
	Classes     [][]string        `json:"classes"`
	Pairs       int               `json:"pairs"`
	HistBins    int               `json:"histBins"`
	Suspects    int               `json:"suspects"`
	SuspectCols int               `json:"suspectCols"`
	Width       float64           `json:"width"`
}

const factsJS = `(() => {
  const text = (sel) => Array.from(document.querySelectorAll(sel), (e) => e.textContent);
  const figures = {};
  for (const id of ["run-rows", "run-changed", "run-changed-pct", "run-classes", "run-wall", "run-device", "run-neighbours", "run-input"]) {
    const e = document.getElementById(id);
    figures[id] = e ? e.textContent : null;
  }
  return {
    figures,
    heatCells: document.querySelectorAll("#heatmap rect.cell").length,
    rowLabels: text("#heatmap text.rowlabel"),
    colLabels: text("#heatmap text.collabel"),
    classes: Array.from(document.querySelectorAll("#classes tbody tr"), (r) => Array.from(r.cells, (c) => c.textContent)),
    pairs: document.querySelectorAll("#pairs tbody tr").length,
    histBins: document.querySelectorAll("#hist g.bin").length,
    suspects: document.querySelectorAll("#suspects tbody tr").length,
    suspectCols: document.querySelectorAll("#suspects thead th").length,
    width: document.getElementById("heatmap").getBoundingClientRect().width,
  };
})()`

// columnJS reads one column of the suspects table, in the order shown.
const columnJS = `Array.from(document.querySelectorAll("#suspects tbody tr"), (r) => Number(r.cells[%d].textContent))`

// TestReportInBrowser opens the digits report in headless Chromium from a
// file:// URL with the network off: no console message of level error or
// warning, no request but the page itself, the heatmap and tables found by id
// with the digits' ten classes, the suspects table sortable by a click, and a
// screenshot (RELABEL_REPORT_PNG=path also copies it there, which is how
// docs/report.png is made).
func TestReportInBrowser(t *testing.T) {
	chromium(t) // skip before the run when there is none
	dir, page := digitsReport(t, "--top", "25")
	sum := readSummary(t, dir)

	bctx, finish := browse(t, page, "#suspects")
	defer finish()
	facts, err := chromedp.Run(bctx, chromedp.Evaluate[pageFacts](factsJS))
	if err != nil {
		t.Fatal(err)
	}

	// The run's figures, as summary.json has them.
	want := map[string]string{
		"run-rows":        strconv.FormatInt(sum.Rows, 10),
		"run-changed":     strconv.FormatInt(sum.Changed, 10),
		"run-changed-pct": strconv.FormatFloat(100*(float64(sum.Changed)/float64(sum.Rows)), 'f', 1, 64) + "%",
		"run-classes":     strconv.Itoa(sum.Classes),
		"run-wall":        strconv.FormatFloat(sum.Timings["total"], 'f', 1, 64) + " s",
		"run-device":      sum.Device,
		"run-neighbours":  sum.Neighbours,
		"run-input":       sum.Input,
	}
	for id, w := range want {
		if got := strings.ReplaceAll(facts.Figures[id], "\u202f", ""); got != w {
			t.Errorf("#%s shows %q, summary.json says %q", id, got, w)
		}
	}
	c := sum.Classes
	names := make([]string, c)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	if facts.HeatCells != c*c {
		t.Errorf("#heatmap has %d cells, want %d", facts.HeatCells, c*c)
	}
	if strings.Join(facts.RowLabels, ",") != strings.Join(names, ",") || strings.Join(facts.ColLabels, ",") != strings.Join(names, ",") {
		t.Errorf("#heatmap labels rows %q, columns %q; want the class names %q", facts.RowLabels, facts.ColLabels, names)
	}
	if facts.Width < 300 {
		t.Errorf("#heatmap is %v px wide: not laid out", facts.Width)
	}
	if len(facts.Classes) != c {
		t.Fatalf("#classes has %d rows, want %d", len(facts.Classes), c)
	}
	for k, r := range facts.Classes {
		if r[0] != names[k] {
			t.Errorf("#classes row %d names %q, want %q", k, r[0], names[k])
		}
		if from := strings.ReplaceAll(r[3], "\u202f", ""); from != strconv.FormatInt(sum.ChangedFrom[k], 10) {
			t.Errorf("#classes row %d: changed from %s, summary.json says %d", k, from, sum.ChangedFrom[k])
		}
		if to := strings.ReplaceAll(r[4], "\u202f", ""); to != strconv.FormatInt(sum.ChangedTo[k], 10) {
			t.Errorf("#classes row %d: changed to %s, summary.json says %d", k, to, sum.ChangedTo[k])
		}
	}
	if facts.Pairs != reportio.DefaultPairs {
		t.Errorf("#pairs has %d rows, want %d", facts.Pairs, reportio.DefaultPairs)
	}
	if facts.HistBins != reportio.HistBins {
		t.Errorf("#hist has %d bins, want %d", facts.HistBins, reportio.HistBins)
	}
	if facts.Suspects != 25 {
		t.Errorf("#suspects has %d rows, want 25 (--top 25)", facts.Suspects)
	}

	// Sorting: the table comes lowest given_label_prob first; a click on
	// that header sorts it ascending, a second descending.
	const probCol = 4
	if facts.SuspectCols <= probCol {
		t.Fatalf("#suspects has %d columns", facts.SuspectCols)
	}
	sel := "#suspects thead th:nth-child(" + strconv.Itoa(probCol+1) + ")"
	for _, dir := range []int{+1, -1} {
		if err := chromedp.Do(bctx, chromedp.Click(sel)); err != nil {
			t.Fatal(err)
		}
		col, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](strings.Replace(columnJS, "%d", strconv.Itoa(probCol), 1)))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(col); i++ {
			if float64(dir)*(col[i]-col[i-1]) < 0 {
				t.Errorf("after clicking given_label_prob (direction %+d), rows %d, %d read %v, %v", dir, i-1, i, col[i-1], col[i])
				break
			}
		}
	}

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatal("the screenshot is not a PNG")
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
	if p := os.Getenv("RELABEL_REPORT_PNG"); p != "" {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// browse opens page in headless Chromium from a file:// URL with the
// network off, and waits until sel is visible. finish closes the browser and
// fails the test on any console message of level error or warning, or any
// request but the page itself.
func browse(t *testing.T, page, sel string) (bctx context.Context, finish func()) {
	t.Helper()
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
		// Belt and braces beside the offline emulation below: no name
		// resolves and every proxied request goes to a closed port.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.ProxyServer("http://127.0.0.1:9"),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)

	// Collect the console and the requests from before the navigation.
	var mu sync.Mutex
	var requests, messages []string
	if err := chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	console := chromedp.Console(bctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range console {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				mu.Lock()
				messages = append(messages, m.String())
				mu.Unlock()
			}
		}
	}()
	if _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	// The network is off by the browser's flags (no proxy reachable, no
	// host resolves) and by the page's Content-Security-Policy; every
	// request is recorded above and checked below.
	u := (&url.URL{Scheme: "file", Path: page}).String()
	if err := chromedp.Do(bctx, chromedp.Navigate(u), chromedp.WaitVisible(sel)); err != nil {
		t.Fatal(err)
	}
	return bctx, func() {
		t.Helper()
		cancelBrowser()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(messages) > 0 {
			t.Errorf("console: %q", messages)
		}
		// data: URLs (the page's empty icon) are inline, not requests to anywhere.
		for _, r := range requests {
			if r != u && !strings.HasPrefix(r, "data:") {
				t.Errorf("requests %q, want only the page %s", requests, u)
				break
			}
		}
	}
}

// chromium returns the browser's path, skipping the test when there is none
// (.ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: the browser test of report.html needs it (apt-get install chromium)")
	return ""
}

// annotatorFacts is what the page shows of the annotators.
type annotatorFacts struct {
	Figures map[string]string `json:"figures"`
	Rows    int               `json:"rows"`
	Flagged int               `json:"flagged"`
	Labels  []float64         `json:"labels"`
}

const annotatorFactsJS = `(() => {
  const figures = {};
  for (const id of ["annotators-count", "annotators-spammers", "annotators-adversaries", "annotators-hidden", "annotators-model", "annotators-scored"]) {
    const e = document.getElementById(id);
    figures[id] = e ? e.textContent.replace(/\u202f/g, "") : null;
  }
  const rows = Array.from(document.querySelectorAll("#annotators tbody tr"));
  return {
    figures,
    rows: rows.length,
    flagged: rows.filter((r) => r.cells[4].textContent !== "").length,
    labels: rows.map((r) => Number(r.cells[1].getAttribute("data-v"))),
  };
})()`

// TestCrowdReportInBrowser runs label-only mode on a generated crowd (20,000
// items, 3 labels each, from 160 annotators (a fifth spammers, a tenth adversaries) and opens the
// report.html the run wrote in headless Chromium, network off: the
// Annotators section's counts and the #annotators table's rows (every
// flagged annotator, then the DefaultAnnotators others with the most
// labels, the rest counted as not shown) match the annotators file, the
// table sorts by labels given, and the terminal report names the counts.
func TestCrowdReportInBrowser(t *testing.T) {
	chromium(t) // skip before the run when there is none
	ann := make([]crowd.SimAnnotator, 160)
	for a := range ann {
		switch a % 10 {
		case 0, 5:
			ann[a] = crowd.SimAnnotator{Kind: crowd.Spammer}
		case 7:
			ann[a] = crowd.SimAnnotator{Kind: crowd.Adversary, Acc: 0.8}
		default:
			ann[a] = crowd.SimAnnotator{Kind: crowd.Expert, Acc: 0.65 + 0.03*float64(a%10)}
		}
	}
	in := writeSimulatedCrowd(t, crowd.Simulate(20000, 4, 3, ann, 41))
	out := filepath.Join(t.TempDir(), "out")
	r := mustRelabel(t, "run", "--annotations", filepath.Join(in, "*.parquet"), "--output", out, "--crowd-iters", "15", "--format", "parquet")
	sum := readSummary(t, out)
	if sum.Annotators == nil {
		t.Fatal("summary.json has no annotators entry")
	}

	// The annotators file, read here on its own.
	f, err := file.OpenParquetFile(filepath.Join(out, sum.Annotators.File), false)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var total, flagged, spammers, adversaries int
	flags := func(name string) []bool {
		var v []bool
		for _, ch := range tbl.Column(tbl.Schema().FieldIndices(name)[0]).Data().Chunks() {
			b := ch.(*array.Boolean)
			for i := 0; i < b.Len(); i++ {
				v = append(v, b.Value(i))
			}
		}
		return v
	}
	spam, adv := flags(annotio.ColSpammer), flags(annotio.ColAdversary)
	for i := range spam {
		total++
		if spam[i] {
			spammers++
		}
		if adv[i] {
			adversaries++
		}
		if spam[i] || adv[i] {
			flagged++
		}
	}
	if total != 160 || spammers == 0 || total-flagged <= reportio.DefaultAnnotators {
		t.Fatalf("annotators file: %d annotators, %d spammers, %d flagged: want 160, some spammers, more than %d unflagged", total, spammers, flagged, reportio.DefaultAnnotators)
	}
	if int(sum.Annotators.Spammers) != spammers || int(sum.Annotators.Adversaries) != adversaries {
		t.Errorf("summary.json: %+v; the file: %d spammers, %d adversaries", sum.Annotators, spammers, adversaries)
	}
	wantRows := min(flagged, reportio.MaxFlaggedAnnotators) + min(total-flagged, reportio.DefaultAnnotators)
	t.Logf("annotators file: %d annotators, %d spammers, %d adversaries; the table lists %d", total, spammers, adversaries, wantRows)
	line := fmt.Sprintf("Annotators: %d, of whom %d flagged as spammers and %d as adversaries", total, spammers, adversaries)
	if !strings.Contains(r.stdout+r.stderr, line) {
		t.Errorf("the terminal report lacks %q:\n%s", line, r.stdout)
	}

	bctx, finish := browse(t, filepath.Join(out, reportio.FileName), "#annotators")
	defer finish()
	facts, err := chromedp.Run(bctx, chromedp.Evaluate[annotatorFacts](annotatorFactsJS))
	if err != nil {
		t.Fatal(err)
	}
	for id, w := range map[string]int{"annotators-count": total, "annotators-spammers": spammers,
		"annotators-adversaries": adversaries, "annotators-hidden": total - wantRows} {
		if facts.Figures[id] != strconv.Itoa(w) {
			t.Errorf("#%s shows %q, want %d (the annotators file)", id, facts.Figures[id], w)
		}
	}
	if got, want := facts.Figures["annotators-model"], sum.Annotators.Model; got != want || want == "" {
		t.Errorf("#annotators-model shows %q, summary.json says %q", got, want)
	}
	if got, want := facts.Figures["annotators-scored"], sum.Annotators.Choice; want == nil || got != strconv.FormatInt(want.Items, 10) {
		t.Errorf("#annotators-scored shows %q, summary.json's choice %+v", got, want)
	}
	if facts.Rows != wantRows || facts.Flagged != flagged {
		t.Errorf("#annotators has %d rows, %d flagged; want %d rows, %d flagged", facts.Rows, facts.Flagged, wantRows, flagged)
	}
	// Sorting by labels given: one click ascending.
	if err := chromedp.Do(bctx, chromedp.Click("#annotators thead th:nth-child(2)")); err != nil {
		t.Fatal(err)
	}
	after, err := chromedp.Run(bctx, chromedp.Evaluate[annotatorFacts](annotatorFactsJS))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(after.Labels) || len(after.Labels) != wantRows {
		t.Errorf("after a click on labels given: %v, want %d rows ascending", after.Labels, wantRows)
	}
}

// TestReportAnnotatorsRows: --annotators-rows bounds the unflagged rows of
// the annotators table (the rest are counted as not shown); 0 lists none.
func TestReportAnnotatorsRows(t *testing.T) {
	ann := make([]crowd.SimAnnotator, 40)
	for a := range ann {
		ann[a] = crowd.SimAnnotator{Kind: crowd.Expert, Acc: 0.7 + 0.005*float64(a)}
	}
	in := writeSimulatedCrowd(t, crowd.Simulate(1500, 3, 3, ann, 43))
	out := filepath.Join(t.TempDir(), "out")
	mustRelabel(t, "run", "--annotations", filepath.Join(in, "*.parquet"), "--output", out, "--crowd-iters", "5", "--format", "parquet")
	hiddenRe := regexp.MustCompile(`<span id="annotators-hidden">([0-9,]+)</span>`)
	hidden := func(args ...string) int {
		t.Helper()
		page := filepath.Join(t.TempDir(), "report.html")
		var stdout, stderr bytes.Buffer
		if err := reportCmd(context.Background(), append([]string{out, "--out", page}, args...), &stdout, &stderr); err != nil {
			t.Fatalf("relabel report %q: %v\n%s", args, err, stderr.String())
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		m := hiddenRe.FindSubmatch(b)
		if m == nil {
			t.Fatalf("relabel report %q: no annotators-hidden count in the page", args)
		}
		n, err := strconv.Atoi(strings.ReplaceAll(string(m[1]), ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	all, five, none := hidden(), hidden("--annotators-rows", "5"), hidden("--annotators-rows", "0")
	if all != 0 {
		t.Errorf("default: %d of 40 annotators not shown, want every one shown", all)
	}
	if none-five != 5 || none < 10 {
		t.Errorf("--annotators-rows 5 hides %d, 0 hides %d: want 5 more shown with 5, and most of the 40 unflagged", five, none)
	}
}

// TestReportModelChoice runs label-only mode on a simulated crowd and
// checks that the report shows the annotator model summary.json records
// and its held-out evidence: the page the run wrote and the one `relabel
// report` writes (the model card, the scored items, each comparison's gain
// and standard error as the JSON has them), and the terminal report's
// line. summary.json is read as plain JSON, so that a field the pipeline
// names differently from the report's reader fails here.
func TestReportModelChoice(t *testing.T) {
	ann := make([]crowd.SimAnnotator, 30)
	for a := range ann {
		ann[a] = crowd.SimAnnotator{Kind: crowd.Expert, Acc: 0.6 + 0.01*float64(a)}
		if a%6 == 0 {
			ann[a] = crowd.SimAnnotator{Kind: crowd.Spammer}
		}
	}
	in := writeSimulatedCrowd(t, crowd.Simulate(1500, 3, 3, ann, 44))
	out := filepath.Join(t.TempDir(), "out")
	r := mustRelabel(t, "run", "--annotations", filepath.Join(in, "*.parquet"), "--output", out, "--crowd-iters", "5", "--format", "parquet")
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Annotators struct {
			Model  string             `json:"model"`
			Choice map[string]float64 `json:"choice"`
		} `json:"annotators"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	model, ch := raw.Annotators.Model, raw.Annotators.Choice
	items := int64(ch["items_scored"])
	if !slices.Contains(resultio.Models, model) || items != 1500 {
		t.Fatalf("summary.json: model %q on %d scored items, want one of %q on all 1500", model, items, resultio.Models)
	}
	f1 := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	wantRows := []string{
		fmt.Sprintf(`<tr><td class="l">pooled over vote</td><td>%s</td><td>%s</td>`, f1(ch["pooled_over_vote_nats"]), f1(ch["pooled_over_vote_se"])),
		fmt.Sprintf(`<tr><td class="l">annotators over pooled</td><td>%s</td><td>%s</td>`, f1(ch["annotators_over_pooled_nats"]), f1(ch["annotators_over_pooled_se"])),
	}
	check := func(name, page string) {
		t.Helper()
		body, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range append(wantRows, `<b id="annotators-model">`+model+`</b>`, `<span id="annotators-scored">1,500</span>`) {
			if !strings.Contains(strings.ReplaceAll(string(body), "\u202f", ","), w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
	check("the run's report.html", filepath.Join(out, reportio.FileName))
	page := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if err := reportCmd(context.Background(), []string{out, "--out", page}, &stdout, &stderr); err != nil {
		t.Fatalf("relabel report: %v\n%s", err, stderr.String())
	}
	check("relabel report's page", page)
	line := fmt.Sprintf("Model: %s, chosen from the held-out labels of 1,500 items (pooled over vote %s ± %s nats; annotators over pooled %s ± %s nats).",
		model, f1(ch["pooled_over_vote_nats"]), f1(ch["pooled_over_vote_se"]), f1(ch["annotators_over_pooled_nats"]), f1(ch["annotators_over_pooled_se"]))
	if !strings.Contains(r.stdout+r.stderr, line) {
		t.Errorf("the terminal report lacks %q:\n%s", line, r.stdout)
	}
}

// writeSimulatedCrowd writes cr's annotations as one long-format Parquet
// file (id, annotator, label) in a new directory, which it returns.
func writeSimulatedCrowd(t *testing.T, cr *crowd.Crowd) string {
	t.Helper()
	in := t.TempDir()
	var ids, anns []int64
	var labs []int32
	for i := 0; i < cr.Items.Len(); i++ {
		a, l := cr.Items.Item(i)
		for k := range a {
			ids, anns, labs = append(ids, int64(i)), append(anns, a[k]), append(labs, l[k])
		}
	}
	if err := annotio.WriteAnnotations(context.Background(), blobio.Local{}, filepath.Join(in, "ann.parquet"), shardio.Parquet, ids, nil, anns, nil, labs, 10000); err != nil {
		t.Fatal(err)
	}
	return in
}
