package reportio

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/io/resultio"
)

// FileName is the report's name inside an output directory.
const FileName = "report.html"

// Defaults of Options.
const (
	DefaultTop   = 50
	DefaultPairs = 10
)

// Options configure a report. The zero value writes DIR/report.html with the
// default table sizes and no truth.
type Options struct {
	// Out is the file to write. Optional, default DIR/report.html.
	Out string
	// Top is how many of the likeliest wrong labels the suspect table lists.
	// Optional, default DefaultTop; negative lists none.
	Top int
	// Pairs is how many confused class pairs to list. Optional, default
	// DefaultPairs.
	Pairs int
	// Annotators is how many unflagged annotators the annotators table
	// lists (every flagged one is listed, up to MaxFlaggedAnnotators).
	// Optional, default DefaultAnnotators; negative lists none.
	Annotators int
	// Truth adds accuracy, a reliability diagram and detection
	// precision/recall (relabel eval). Optional.
	Truth Truth
	// TruthName says where the truth came from (a path). Optional.
	TruthName string
	// Baselines are other cleaners' accuracies against the same truth, shown
	// beside the given and cleaned labels'. Optional; only with Truth.
	Baselines []Baseline
	// Mem allocates the Arrow buffers of the pass. Optional, default
	// memory.DefaultAllocator.
	Mem memory.Allocator
	// Overwrite lets Write replace an existing file at Out. Optional,
	// default false: only an earlier relabel report at the default place is
	// replaced (see SaveTo).
	Overwrite bool
}

// Baseline is another labelling's accuracy against the truth.
type Baseline struct {
	Name     string
	Accuracy float64
}

// Report is what the page shows, computed in one pass over the output.
type Report struct {
	Dir     string
	Summary *resultio.Summary
	// Names are the classes' display names (the class names of string
	// labels, else the class indices).
	Names []string
	// Rows and the counts below are counted from the shards (and checked
	// against summary.json).
	Rows, Labelled, Changed int64
	// Unresolved counts rows without a clean label (null: unlabelled rows
	// that no labelled row reached through neighbours within the rounds).
	Unresolved int64
	Classes    []ClassRow
	// Pairs are the most frequent changes given -> clean, most first.
	Pairs []Pair
	// Hist counts labelled rows by given_label_prob in HistBins equal bins
	// of [0, 1]: [0] unchanged rows, [1] changed rows.
	Hist [2][HistBins]int64
	// Suspects are the Top labelled rows of lowest given_label_prob, lowest
	// first (ties: earlier row first).
	Suspects []Suspect
	// Truth is nil without Options.Truth.
	Truth *TruthReport
	// Annotators is nil but for annotator-aware runs (summary.json names
	// their annotators file).
	Annotators *AnnotatorsReport
}

// ClassRow is one class's line of the per-class table.
type ClassRow struct {
	Class int
	Name  string
	// Given counts labelled rows whose given (majority) label is the class;
	// Clean rows whose clean_label is.
	Given, Clean           int64
	ChangedFrom, ChangedTo int64
	// MeanGivenProb is the mean given_label_prob of the class's given
	// labels; NoiseRate = 1 - MeanGivenProb is the posterior's expected share
	// of wrong labels among them. NaN when the class has no given label.
	MeanGivenProb, NoiseRate float64
}

// Pair is a confused class pair: Count labelled rows given Given were
// changed to Clean.
type Pair struct {
	Given, Clean int32
	Count        int64
	// Share is Count over the rows given Given.
	Share float64
	// Trans is summary.json's P(given = Given | clean = Clean), NaN when the
	// summary has no transition matrix.
	Trans float64
}

// TruthReport scores the output against the true labels.
type TruthReport struct {
	Name string
	// Rows are the labelled rows with a true label; Missing those without.
	Rows, Missing      int64
	GivenAcc, CleanAcc float64
	Baselines          []Baseline
	ChangedPrecision   float64 // of "changed" as a detector of wrong given labels
	ChangedRecall      float64
	Wrong              int64 // rows whose given label is wrong
	Reliability        [RelBins]RelBin
	ECE                float64 // expected calibration error of clean_prob
	Detection          []Detection
}

// RelBin is one bin of the reliability diagram of clean_prob.
type RelBin struct {
	Lo, Hi   float64
	N        int64
	MeanProb float64 // NaN when empty
	Accuracy float64 // share of clean_label == truth; NaN when empty
}

// Detection scores flagging rows with given_label_prob < Threshold as wrong.
type Detection struct {
	Threshold         float64
	Flagged           int64
	Precision, Recall float64 // NaN when undefined
}

// detThresholds are the thresholds of the detection table (multiples of
// 1/detBins, so that the fine bins answer them exactly).
var detThresholds = []int{5, 10, 20, 30, 40, 50, 60, 70, 80, 90}

// Build reads summary.json and the output shards it lists in one pass.
func Build(ctx context.Context, dir string, opts Options) (*Report, error) {
	sum, err := resultio.ReadSummary(ctx, dir)
	if err != nil {
		return nil, err
	}
	top := opts.Top
	if top == 0 {
		top = DefaultTop
	}
	top = max(top, 0)
	npairs := opts.Pairs
	if npairs == 0 {
		npairs = DefaultPairs
	}
	mem := opts.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	c := sum.Classes
	a, err := newAccum(c, sum.ClassNames, top, opts.Truth)
	if err != nil {
		return nil, err
	}
	for _, sh := range sum.Shards {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := a.readShard(ctx, blobio.Join(dir, sh.Output), mem); err != nil {
			return nil, err
		}
	}
	sj := blobio.Join(dir, "summary.json")
	if a.rows != sum.Rows || a.changed != sum.Changed {
		return nil, fmt.Errorf("reportio: %s says %d rows, %d changed; its shards hold %d rows, %d changed", sj, sum.Rows, sum.Changed, a.rows, a.changed)
	}
	r := &Report{Dir: dir, Summary: sum, Rows: a.rows, Labelled: a.labelled, Changed: a.changed, Unresolved: a.unresolved, Hist: a.hist}
	r.Names = sum.ClassNames
	if r.Names == nil {
		r.Names = make([]string, c)
		for i := range r.Names {
			r.Names[i] = fmt.Sprint(i)
		}
	}
	for k := 0; k < c; k++ {
		cr := ClassRow{Class: k, Name: r.Names[k], Given: a.given[k], Clean: a.clean[k],
			ChangedFrom: a.changedFrom[k], ChangedTo: a.changedTo[k], MeanGivenProb: math.NaN(), NoiseRate: math.NaN()}
		if a.given[k] > 0 {
			cr.MeanGivenProb = a.sumGivenProb[k] / float64(a.given[k])
			cr.NoiseRate = 1 - cr.MeanGivenProb
		}
		r.Classes = append(r.Classes, cr)
	}
	var pairs []Pair
	add := func(g, cl int32, n int64) {
		p := Pair{Given: g, Clean: cl, Count: n, Share: float64(n) / float64(a.given[g]), Trans: math.NaN()}
		if sum.Transition != nil {
			p.Trans = sum.Transition[cl][g]
		}
		pairs = append(pairs, p)
	}
	if a.pairs != nil {
		for i, n := range a.pairs {
			if n > 0 {
				add(int32(i/c), int32(i%c), n)
			}
		}
	} else {
		for k, n := range a.pairMap {
			add(k[0], k[1], n)
		}
	}
	slices.SortFunc(pairs, func(x, y Pair) int {
		if x.Count != y.Count {
			return cmp.Compare(y.Count, x.Count)
		}
		if x.Given != y.Given {
			return cmp.Compare(x.Given, y.Given)
		}
		return cmp.Compare(x.Clean, y.Clean)
	})
	r.Pairs = pairs[:min(len(pairs), npairs)]
	r.Suspects = []Suspect(a.suspects)
	slices.SortFunc(r.Suspects, func(x, y Suspect) int {
		if x.GivenProb != y.GivenProb {
			return cmp.Compare(x.GivenProb, y.GivenProb)
		}
		return cmp.Compare(x.ord, y.ord)
	})
	if opts.Truth != nil {
		r.Truth = truthReport(&a.t, opts)
	}
	if sum.Annotators != nil {
		others := opts.Annotators
		if others == 0 {
			others = DefaultAnnotators
		}
		if r.Annotators, err = readAnnotators(ctx, dir, sum.Annotators, c, max(others, 0), mem); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func truthReport(t *truthCounts, opts Options) *TruthReport {
	tr := &TruthReport{Name: opts.TruthName, Rows: t.rows, Missing: t.missing, Baselines: opts.Baselines,
		GivenAcc: ratio(t.givenRight, t.rows), CleanAcc: ratio(t.cleanRight, t.rows)}
	tr.Wrong = t.rows - t.givenRight
	tr.ChangedPrecision = ratio(t.changedWrong, t.changedWrong+t.changedOK)
	tr.ChangedRecall = ratio(t.changedWrong, tr.Wrong)
	for b := range tr.Reliability {
		rb := &tr.Reliability[b]
		rb.Lo, rb.Hi = float64(b)/RelBins, float64(b+1)/RelBins
		rb.N = t.rel[b].n
		rb.MeanProb, rb.Accuracy = math.NaN(), math.NaN()
		if rb.N > 0 {
			rb.MeanProb = t.rel[b].sumProb / float64(rb.N)
			rb.Accuracy = float64(t.rel[b].right) / float64(rb.N)
			tr.ECE += float64(rb.N) / float64(t.rows) * math.Abs(rb.Accuracy-rb.MeanProb)
		}
	}
	for _, k := range detThresholds {
		var flagged, hit int64
		for b := 0; b < k; b++ {
			flagged += t.det[b][0] + t.det[b][1]
			hit += t.det[b][1]
		}
		tr.Detection = append(tr.Detection, Detection{Threshold: float64(k) / detBins, Flagged: flagged,
			Precision: ratio(hit, flagged), Recall: ratio(hit, tr.Wrong)})
	}
	return tr
}

// Write builds the report of the output directory dir and writes it to
// opts.Out (default dir/report.html), returning the path written. The page is
// rendered in memory and written under a temporary name, then renamed, so a
// failure leaves no partial report.
func Write(ctx context.Context, dir string, opts Options) (string, error) {
	r, err := Build(ctx, dir, opts)
	if err != nil {
		return "", err
	}
	return r.SaveTo(ctx, opts.Out, opts.Overwrite)
}

// ErrExists is returned by Save when the page would replace a file that is
// not the output directory's own earlier report.
var ErrExists = errors.New("exists")

// Save renders the page and writes it to out (default r.Dir/report.html),
// under a temporary name renamed into place, and returns the path written.
// It replaces no file but an earlier report at the default place (see SaveTo).
func (r *Report) Save(ctx context.Context, out string) (string, error) {
	return r.SaveTo(ctx, out, false)
}

// SaveTo is Save that, with overwrite, replaces whatever file out names.
// Without it, an existing out is replaced only when out is the default
// DIR/report.html and holds an earlier relabel report (the page relabel run,
// eval and report keep there); any other existing file is refused with
// ErrExists, so a mistyped --out cannot turn an output shard, an input or a
// user's file into HTML. A new file is created exclusively (O_EXCL locally, a
// does-not-exist precondition on Cloud Storage), so that a file appearing
// meanwhile is not replaced either.
func (r *Report) SaveTo(ctx context.Context, out string, overwrite bool) (string, error) {
	dir := r.Dir
	var buf bytes.Buffer
	if err := r.Render(&buf); err != nil {
		return "", err
	}
	own := out == ""
	if own {
		out = blobio.Join(dir, FileName)
	}
	fs, err := blobio.For(out)
	if err != nil {
		return "", err
	}
	if isDir(out) {
		return "", fmt.Errorf("reportio: %s is a directory: give the page's file name (such as %s)", out, blobio.Join(out, FileName))
	}
	if stream, err := streamTarget(out); err != nil {
		return "", err
	} else if stream {
		return out, writeStream(out, buf.Bytes())
	}
	exists, err := fs.Exists(ctx, out)
	if err != nil {
		return "", fmt.Errorf("reportio: %w", err)
	}
	if exists && !own && within(out, dir) {
		if ok, err := isReport(ctx, fs, out); err != nil {
			return "", err
		} else if !ok {
			return "", fmt.Errorf("reportio: %s %w: a file of the output directory %s, which the report reads, is never replaced, --overwrite or not (write the page outside it, or as %s)", out, ErrExists, dir, blobio.Join(dir, FileName))
		}
	}
	if exists && !overwrite {
		if !own {
			return "", fmt.Errorf("reportio: %s %w; relabel report replaces no file it did not write (pass --overwrite to replace it)", out, ErrExists)
		}
		if ok, err := isReport(ctx, fs, out); err != nil {
			return "", err
		} else if !ok {
			return "", fmt.Errorf("reportio: %s %w and is not a relabel report; it is left as it is (pass --overwrite to replace it)", out, ErrExists)
		}
	}
	if !exists {
		if err := blobio.CreateExclusive(ctx, out, buf.Bytes()); err != nil {
			if errors.Is(err, blobio.ErrExist) {
				return "", fmt.Errorf("reportio: %s %w (it appeared while the report was made); pass --overwrite to replace it", out, ErrExists)
			}
			return "", fmt.Errorf("reportio: writing %s: %w", out, err)
		}
		return out, nil
	}
	var tok [6]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return "", err
	}
	tmp := blobio.Join(blobio.Dir(out), ".report-tmp-"+hex.EncodeToString(tok[:])+".html")
	w, err := fs.Create(ctx, tmp)
	if err != nil {
		return "", fmt.Errorf("reportio: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		w.Close()
		fs.Remove(ctx, tmp)
		return "", fmt.Errorf("reportio: writing %s: %w", out, err)
	}
	if err := w.Close(); err != nil {
		fs.Remove(ctx, tmp)
		return "", fmt.Errorf("reportio: writing %s: %w", out, err)
	}
	if err := fs.Rename(ctx, tmp, out); err != nil {
		fs.Remove(ctx, tmp)
		return "", fmt.Errorf("reportio: writing %s: %w", out, err)
	}
	return out, nil
}

// reportMark is in the head of every page Render writes (the template's
// title), within its first reportHead bytes.
const (
	reportMark = "<title>relabel report:"
	reportHead = 4096
)

// isReport reports whether the file at path is a page relabel wrote.
func isReport(ctx context.Context, fs blobio.FS, path string) (bool, error) {
	f, err := fs.Open(ctx, path)
	if err != nil {
		return false, fmt.Errorf("reportio: %w", err)
	}
	defer f.Close()
	head := make([]byte, reportHead)
	n, err := blobio.Section(f).ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("reportio: reading %s: %w", path, err)
	}
	return bytes.Contains(head[:n], []byte(reportMark)), nil
}

// isDir reports whether a local path is a directory (object stores have
// none).
// streamTarget reports whether out is a FIFO or a character device (a
// terminal, /dev/null, a pipe a reader waits on), which the page is written
// into as a stream, as a shell's redirection would: it is never replaced. A
// symbolic link, or any other file that is not regular, is refused: the
// page would replace the link (as root, /dev/stdout itself) or a device.
func streamTarget(out string) (bool, error) {
	if strings.Contains(out, "://") && !strings.HasPrefix(out, "file://") {
		return false, nil
	}
	st, err := os.Lstat(strings.TrimPrefix(out, "file://"))
	if err != nil || st.Mode().IsRegular() {
		return false, nil
	}
	m := st.Mode()
	if m&(iofs.ModeNamedPipe|iofs.ModeCharDevice) != 0 {
		return true, nil
	}
	return false, fmt.Errorf("reportio: %s is %s: relabel report replaces only regular files and writes into FIFOs and terminals; give the file a link points to, or - for standard output", out, blobio.FileKind(m))
}

// writeStream writes b into the FIFO or character device out.
func writeStream(out string, b []byte) error {
	f, err := os.OpenFile(strings.TrimPrefix(out, "file://"), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("reportio: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("reportio: writing %s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("reportio: writing %s: %w", out, err)
	}
	return nil
}

// within reports whether path lies in directory dir (at any depth), after
// symbolic links.
func within(path, dir string) bool {
	p, d := blobio.Canonical(path), strings.TrimSuffix(blobio.Canonical(dir), "/")
	return strings.HasPrefix(p, d+"/")
}

func isDir(path string) bool {
	if strings.Contains(path, "://") {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
