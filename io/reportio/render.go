package reportio

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/relabel/relabel/io/resultio"
)

// The page is rendered with html/template (contextual escaping of class
// names and ids, which come from the data) from one embedded file; the SVG
// charts are drawn by the template from geometry computed here, so the page
// needs no charting library and no network.
//
//go:embed report.html.tmpl
var pageText string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":   pct,
	"prob":  prob,
	"count": count,
	"div":   ratio,
	"inc":   func(i int) int { return i + 1 },
}).Parse(pageText))

// pct formats a share as a percentage; "–" when undefined.
func pct(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
}

// prob formats a probability with three decimals; "–" when undefined.
func prob(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// count formats an integer with thin-space thousands separators.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// num formats an SVG coordinate.
func num(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// MaxHeatmapClasses is the most classes drawn as a heatmap: beyond it the
// cells are too small to read, and the pairs table says more.
const MaxHeatmapClasses = 60

// view is the template's data.
type view struct {
	*Report
	Wall     string
	Pct      string
	Options  []kv
	Timings  []kv
	Metrics  []kv
	Heat     *heatView
	HeatNote string
	Hist     histView
	Sus      []susView
	Rel      *relView
	Ann      *annView
	// ClassRows are the per-class table's rows (classTable); ClassNote
	// says how many classes it leaves out.
	ClassRows []ClassRow
	ClassNote string
}

// MaxClassRows is the most classes the per-class table lists: a run over
// many classes would otherwise write a page of hundreds of megabytes that no
// browser opens (185 MB at 1,000,000 classes). Beyond it the table
// lists the classes with the most given labels.
const MaxClassRows = 1000

// classTable is the per-class table's rows: every class up to MaxClassRows,
// else the MaxClassRows classes with the most given labels (ties: most clean
// labels, then the lower class), in class order, and a note of the rest.
func (r *Report) classTable() ([]ClassRow, string) {
	if len(r.Classes) <= MaxClassRows {
		return r.Classes, ""
	}
	rows := slices.Clone(r.Classes)
	slices.SortStableFunc(rows, func(a, b ClassRow) int {
		if a.Given != b.Given {
			return cmp.Compare(b.Given, a.Given)
		}
		return cmp.Compare(b.Clean, a.Clean)
	})
	rows = rows[:MaxClassRows]
	slices.SortFunc(rows, func(a, b ClassRow) int { return cmp.Compare(a.Class, b.Class) })
	return rows, fmt.Sprintf("%s classes: the %s with the most given labels are listed, %s are not.",
		count(int64(len(r.Classes))), count(MaxClassRows), count(int64(len(r.Classes)-MaxClassRows)))
}

// annView is the annotators section.
type annView struct {
	*AnnotatorsReport
	Rows []annRowView
	// Steps are the held-out comparisons behind Model, simpler model first;
	// nil where the summary records no choice or no item was scored.
	Steps []choiceStep
}

// choiceStep is one comparison of a richer annotator model with the next
// simpler one on held-out labels.
type choiceStep struct {
	Name, Gain, SE string
	// Beyond: the gain exceeds one standard error, the run's bar for the
	// richer model.
	Beyond bool
}

// choiceSteps lists c's two comparisons, as the terminal report and the
// page word them.
func choiceSteps(c *resultio.ChoiceSummary) []choiceStep {
	if c == nil || c.Items == 0 {
		return nil
	}
	step := func(name string, gain, se float64) choiceStep {
		return choiceStep{Name: name, Gain: nats(gain), SE: nats(se), Beyond: gain > se}
	}
	return []choiceStep{
		step("pooled over vote", c.PooledGain, c.PooledSE),
		step("annotators over pooled", c.AnnotatorsGain, c.AnnotatorsSE),
	}
}

// nats formats a held-out log-likelihood difference with one decimal.
func nats(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

type annRowView struct {
	AnnotatorRow
	// Diag shows the diagonal compactly; DiagMean sorts it.
	Diag, DiagFull string
	DiagMean       float64
	// Flag is the verdict ("spammer", "adversary") or "not enough labels";
	// Bad marks a verdict.
	Flag string
	Bad  bool
}

type kv struct{ K, V string }

type heatView struct {
	W, H, Left, Top  string
	Cells            []heatCell
	RowLabels, ColLs []label
	XTitle, YTitle   label
}

type heatCell struct {
	X, Y, S, TX, TY string
	Fill, Ink       string
	Text, Title     string
	Diag            bool
}

type label struct{ X, Y, Text, Full string }

type histView struct {
	W, H  string
	Bars  []histBar
	Ticks []label // x axis
	YTick []label
	Base  string
}

type histBar struct {
	X, W           string
	Y0, H0, Y1, H1 string // unchanged, changed
	Title          string
}

type susView struct {
	Suspect
	GivenNames, CleanName, TruthName, Post string
	GivenIdx                               int32
}

type relView struct {
	Bars  []relBar
	Ticks []label
}

type relBar struct {
	X, W, Y, H, CX, CY string
	Title              string
}

// Render writes the page.
func (r *Report) Render(w io.Writer) error {
	v := view{Report: r}
	s := r.Summary
	v.Pct = pct(ratio(r.Changed, r.Rows))
	if t, ok := s.Timings["total"]; ok {
		v.Wall = strconv.FormatFloat(t, 'f', 1, 64) + " s"
	} else {
		v.Wall = "–"
	}
	v.Options = sortedKV(s.Options, func(x string) string { return x })
	v.Timings = sortedKV(s.Timings, func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) + " s" })
	v.Metrics = sortedKV(s.Metrics, func(x int64) string { return count(x) })
	switch {
	case s.Transition == nil:
		v.HeatNote = "summary.json has no transition matrix (it is estimated only for few enough classes)."
	case s.Classes > MaxHeatmapClasses:
		v.HeatNote = fmt.Sprintf("%d classes: too many to draw; the confused pairs below list the largest entries.", s.Classes)
	default:
		v.Heat = r.heatmap()
	}
	v.ClassRows, v.ClassNote = r.classTable()
	v.Hist = r.histogram()
	for _, su := range r.Suspects {
		sv := susView{Suspect: su, CleanName: r.Names[su.Clean], TruthName: "–", GivenIdx: -1}
		names := make([]string, len(su.Given))
		for i, g := range su.Given {
			names[i] = r.Names[g]
		}
		sv.GivenNames = strings.Join(names, ", ")
		if len(su.Given) > 0 {
			sv.GivenIdx = su.Given[0]
		}
		if su.Truth >= 0 {
			sv.TruthName = r.Names[su.Truth]
		}
		post := make([]string, len(su.Posterior))
		for i, p := range su.Posterior {
			post[i] = r.Names[p.Class] + " " + prob(float64(p.Prob))
		}
		sv.Post = strings.Join(post, " · ")
		v.Sus = append(v.Sus, sv)
	}
	if r.Truth != nil {
		v.Rel = r.reliability()
	}
	if r.Annotators != nil {
		v.Ann = annotatorsView(r.Annotators)
	}
	return page.Execute(w, v)
}

func sortedKV[T any](m map[string]T, f func(T) string) []kv {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]kv, len(keys))
	for i, k := range keys {
		out[i] = kv{k, f(m[k])}
	}
	return out
}

// short cuts a class name for an axis label (the full name is its tooltip).
func short(s string) string {
	if r := []rune(s); len(r) > 14 {
		return string(r[:13]) + "…"
	}
	return s
}

// blues maps [0, 1] to a sequential palette (ColorBrewer Blues, linearly
// interpolated between its stops) and says whether dark ink reads on it.
func blues(x float64) (string, bool) {
	stops := [][3]float64{{247, 251, 255}, {198, 219, 239}, {107, 174, 214}, {33, 113, 181}, {8, 48, 107}}
	x = min(max(x, 0), 1) * float64(len(stops)-1)
	i := min(int(x), len(stops)-2)
	f := x - float64(i)
	var c [3]int
	for k := range c {
		c[k] = int(math.Round(stops[i][k] + f*(stops[i+1][k]-stops[i][k])))
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2]), x < 2.2
}

// heatmap lays out the transition matrix: row = clean class, column = given
// label, colour by the square root of P(given | clean) so that the small
// off-diagonal entries, which are the point of the picture, stay visible
// beside the large diagonal.
func (r *Report) heatmap() *heatView {
	c := r.Summary.Classes
	cell := min(max(560/float64(c), 9), 44)
	maxName := 1
	for _, n := range r.Names {
		maxName = max(maxName, len([]rune(short(n))))
	}
	left := 30 + 7*float64(maxName)
	top := 34 + 5.5*float64(maxName)
	h := &heatView{Left: num(left), Top: num(top)}
	for a := 0; a < c; a++ {
		y := top + float64(a)*cell
		h.RowLabels = append(h.RowLabels, label{X: num(left - 4), Y: num(y + cell/2 + 4), Text: short(r.Names[a]), Full: r.Names[a]})
		for b := 0; b < c; b++ {
			x := left + float64(b)*cell
			p := r.Summary.Transition[a][b]
			fill, dark := blues(math.Sqrt(p))
			ink := "#fff"
			if dark {
				ink = "#111"
			}
			hc := heatCell{X: num(x), Y: num(y), S: num(cell), TX: num(x + cell/2), TY: num(y + cell/2 + 3.5),
				Fill: fill, Ink: ink, Diag: a == b,
				Title: fmt.Sprintf("clean %s, given %s: P = %s", r.Names[a], r.Names[b], prob(p))}
			if cell >= 30 {
				hc.Text = strconv.FormatFloat(p, 'f', 2, 64)[1:]
				if p >= 0.995 {
					hc.Text = "1"
				}
			}
			h.Cells = append(h.Cells, hc)
		}
	}
	for b := 0; b < c; b++ {
		x := left + float64(b)*cell + cell/2
		h.ColLs = append(h.ColLs, label{X: num(x), Y: num(top - 6), Text: short(r.Names[b]), Full: r.Names[b]})
	}
	w := left + float64(c)*cell + 10
	ht := top + float64(c)*cell + 10
	h.W, h.H = num(w), num(ht)
	h.YTitle = label{X: "12", Y: num(top + float64(c)*cell/2), Text: "clean class"}
	h.XTitle = label{X: num(left + float64(c)*cell/2), Y: "12", Text: "given label"}
	return h
}

// histogram lays out the stacked histogram of given_label_prob.
func (r *Report) histogram() histView {
	const w, h, l, rt, t, b = 640.0, 230.0, 56.0, 10.0, 10.0, 34.0
	var peak int64 = 1
	for k := 0; k < HistBins; k++ {
		peak = max(peak, r.Hist[0][k]+r.Hist[1][k])
	}
	bw := (w - l - rt) / HistBins
	base := h - b
	scale := (h - t - b) / float64(peak)
	hv := histView{W: num(w), H: num(h), Base: num(base)}
	for k := 0; k < HistBins; k++ {
		u, ch := r.Hist[0][k], r.Hist[1][k]
		h0 := float64(u) * scale
		h1 := float64(ch) * scale
		lo, hi := float64(k)/HistBins, float64(k+1)/HistBins
		hv.Bars = append(hv.Bars, histBar{
			X: num(l + float64(k)*bw + 1), W: num(bw - 2),
			Y0: num(base - h0), H0: num(h0), Y1: num(base - h0 - h1), H1: num(h1),
			Title: fmt.Sprintf("given_label_prob %.2f–%.2f: %d rows (%d changed)", lo, hi, u+ch, ch),
		})
	}
	for k := 0; k <= 4; k++ {
		x := l + float64(k)/4*(w-l-rt)
		hv.Ticks = append(hv.Ticks, label{X: num(x), Y: num(base + 16), Text: strconv.FormatFloat(float64(k)/4, 'f', 2, 64)})
	}
	for _, f := range []float64{0, 0.5, 1} {
		hv.YTick = append(hv.YTick, label{X: num(l - 6), Y: num(base - f*(h-t-b) + 4), Text: count(int64(math.Round(f * float64(peak))))})
	}
	return hv
}

// reliability lays out the reliability diagram of clean_prob: per bin, the
// share of clean labels that are right (bar) at the bin's mean clean_prob
// (dot); a calibrated model's dots lie on the diagonal.
func (r *Report) reliability() *relView {
	const size, l, t = 300.0, 40.0, 10.0
	rv := &relView{}
	for _, b := range r.Truth.Reliability {
		if b.N == 0 {
			continue
		}
		x := l + b.Lo*size
		bh := b.Accuracy * size
		rv.Bars = append(rv.Bars, relBar{X: num(x + 1), W: num(size/RelBins - 2), Y: num(t + size - bh), H: num(bh),
			CX: num(l + b.MeanProb*size), CY: num(t + size - bh),
			Title: fmt.Sprintf("clean_prob %.1f–%.1f: %d rows, mean %.3f, accuracy %.3f", b.Lo, b.Hi, b.N, b.MeanProb, b.Accuracy)})
	}
	for k := 0; k <= 4; k++ {
		f := float64(k) / 4
		rv.Ticks = append(rv.Ticks, label{X: num(l + f*size), Y: num(t + size - f*size), Text: strconv.FormatFloat(f, 'f', 2, 64)})
	}
	return rv
}

// maxDiagShown is the most classes whose diagonal entries the annotators
// table lists one by one; beyond, it shows their minimum, mean and maximum.
const maxDiagShown = 12

// short2 formats a probability with two decimals and no leading zero.
func short2(x float64) string {
	s := strconv.FormatFloat(x, 'f', 2, 64)
	return strings.TrimPrefix(s, "0")
}

func annotatorsView(a *AnnotatorsReport) *annView {
	v := &annView{AnnotatorsReport: a, Steps: choiceSteps(a.Choice)}
	for _, r := range a.Rows {
		rv := annRowView{AnnotatorRow: r}
		if r.Anonymous {
			rv.ID = "(no annotator named)"
		}
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		parts := make([]string, len(r.Diagonal))
		for k, d := range r.Diagonal {
			lo, hi, sum = min(lo, d), max(hi, d), sum+d
			parts[k] = short2(d)
		}
		rv.DiagMean = math.NaN()
		if n := len(r.Diagonal); n > 0 {
			rv.DiagMean = sum / float64(n)
			if n <= maxDiagShown {
				rv.Diag = strings.Join(parts, " ")
			} else {
				rv.Diag = "min " + short2(lo) + " · mean " + short2(rv.DiagMean) + " · max " + short2(hi)
			}
		}
		switch {
		case r.Spammer && r.Adversary:
			rv.Flag = "spammer, adversary"
		case r.Spammer:
			rv.Flag = "spammer"
		case r.Adversary:
			rv.Flag = "adversary"
		case r.Labels < a.MinLabels:
			rv.Flag = "not enough labels"
		}
		rv.Bad = r.Spammer || r.Adversary
		v.Rows = append(v.Rows, rv)
	}
	return v
}
