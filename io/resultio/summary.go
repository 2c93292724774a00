package resultio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"slices"
	"strings"

	"github.com/relabel/relabel/io/blobio"
)

// SummaryName is the file a finished output's summary is written to,
// beside its shards. A run writes it last, so its presence marks a
// complete output.
const SummaryName = "summary.json"

// Summary is summary.json: one type for every run that writes it (a plain
// run, a table or directory lake run) and every reader (relabel report,
// the directory lake's next run, the tests).
type Summary struct {
	Version string `json:"version"`
	Input   string `json:"input"`
	Output  string `json:"output"`
	Rows    int64  `json:"rows"`
	Changed int64  `json:"changed"`
	// Unresolved counts rows output without a clean label (null):
	// unlabelled rows that no labelled row reached within the rounds.
	Unresolved int64             `json:"unresolved,omitempty"`
	Classes    int               `json:"classes"`
	ClassNames []string          `json:"class_names,omitempty"`
	Neighbours string            `json:"neighbours"`
	Device     string            `json:"device"`
	Options    map[string]string `json:"options"`
	// ChangedFrom[c] / ChangedTo[c]: labels changed out of / into class c.
	ChangedFrom []int64 `json:"changed_from"`
	ChangedTo   []int64 `json:"changed_to"`
	// Transition[c][c'] estimates P(given label = c' | clean label = c) from the
	// posteriors (only for C <= MaxDenseClasses).
	Transition [][]float64 `json:"transition,omitempty"`
	// Shards are the output shards' reports, without their transition
	// sums (Trans: summed into Transition).
	Shards []ShardReport `json:"shards"`
	// Skipped lists input files left out, with why ("x.parquet: no rows,
	// skipped").
	Skipped []string `json:"skipped,omitempty"`
	// Metrics are the pipeline's Beam counters (namespace relabel), summed
	// over steps.
	Metrics map[string]int64   `json:"metrics,omitempty"`
	Timings map[string]float64 `json:"timings_seconds"`
	// Lake says what a table or incremental run covered; nil for a plain
	// run.
	Lake *LakeSummary `json:"lake,omitempty"`
	// Annotators describes the annotators file of an annotator-aware run.
	Annotators *AnnotatorsSummary `json:"annotators,omitempty"`
	// Pooled says what the pooled start decided; nil where it was off
	// (--pooled-iters 0, annotators).
	Pooled *PooledSummary `json:"pooled,omitempty"`
	// Head says what the linear head did; nil where it was off (--head
	// off, ivf mode, annotators).
	Head *HeadSummary `json:"head,omitempty"`
}

// HeadSummary is what the linear head did (transforms/head): the rounds it
// gave its component in, and whether it still did in the last one (false:
// its fitted share fell under head.OffShare and it switched itself off).
type HeadSummary struct {
	Rounds int64 `json:"rounds"`
	Last   bool  `json:"last_round"`
}

// PooledSummary is what the pooled start's fit decided, from its
// counters: how many items it fitted, in how many EM steps (at most
// --pooled-iters, fewer where --pooled-tol stopped it), the fitted noise's structure
// (mixture.Pooled.Structure, to 1e-6), the gate it was held against and
// whether the items started from it (Open) or from their given labels.
// An incremental run reads it to know how the stored posteriors started.
type PooledSummary struct {
	Fitted    int64   `json:"fitted"`
	Iters     int64   `json:"iters"`
	Structure float64 `json:"structure"`
	Gate      float64 `json:"gate"`
	Open      bool    `json:"open"`
}

// AnnotatorsSummary is summary.json's entry for the annotators file of an
// annotator-aware run; the crowd stages write it as the file's report
// (ReportSuffix) and the run copies it into the summary.
type AnnotatorsSummary struct {
	File        string `json:"file"`
	Annotators  int64  `json:"annotators"`
	Spammers    int64  `json:"spammers"`
	Adversaries int64  `json:"adversaries"`
	// TooFew annotators gave fewer than MinLabels labels: too few to be
	// judged, so never flagged (transforms/crowd Params.FlagLabels).
	TooFew    int64 `json:"too_few"`
	MinLabels int64 `json:"min_labels"`
	// Strength is the prior's weight, in labels, of the final model.
	Strength float64 `json:"prior_strength"`
	// Model is the annotator model the posteriors come from (one of
	// Models), chosen from held-out labels; Choice is the evidence. A run
	// writes both; a reader accepts an output without them (and shows no
	// choice).
	Model  string         `json:"model,omitempty"`
	Choice *ChoiceSummary `json:"choice,omitempty"`
}

// Models are the annotator models a run chooses among, simplest first
// (transforms/crowd Choice): one accuracy for every annotator (the
// majority vote), one confusion matrix for the whole crowd, and each
// annotator's own matrix shrunk toward the crowd's.
var Models = []string{"vote", "pooled", "annotators"}

// ChoiceSummary is the evidence behind AnnotatorsSummary.Model
// (crowd.Evidence): over the items with at least two labels, how many nats
// of held-out log-likelihood (each label given the item's other labels,
// the item left out of its annotators' counts) the pool gains over the
// vote and the annotators' model over the pool, each with its standard
// error over items. The run takes a richer model where its gain exceeds
// its standard error; with no item of two labels it keeps the vote.
type ChoiceSummary struct {
	Items          int64   `json:"items_scored"`
	PooledGain     float64 `json:"pooled_over_vote_nats"`
	PooledSE       float64 `json:"pooled_over_vote_se"`
	AnnotatorsGain float64 `json:"annotators_over_pooled_nats"`
	AnnotatorsSE   float64 `json:"annotators_over_pooled_se"`
}

// check reports what is wrong with a's model and its evidence, or "".
func (a *AnnotatorsSummary) check() string {
	switch {
	case a.File == "" || a.File != blobio.Base(a.File) || a.File == "." || a.File == "..":
		return fmt.Sprintf("annotators file %q, want a file name beside the shards", a.File)
	case a.Model == "" && a.Choice == nil:
		return ""
	case !slices.Contains(Models, a.Model):
		return fmt.Sprintf("annotators model %q, want one of %s", a.Model, strings.Join(Models, ", "))
	case a.Choice == nil:
		return fmt.Sprintf("annotators model %q without its evidence (choice)", a.Model)
	case a.Choice.Items < 0 || a.Choice.PooledSE < 0 || a.Choice.AnnotatorsSE < 0:
		return fmt.Sprintf("annotators choice %+v: negative items or standard error", *a.Choice)
	}
	return ""
}

// LakeSummary is what a table run (or an incremental directory run) adds
// to the summary, as its "lake" section: what it covered and what it read,
// wrote and committed.
type LakeSummary struct {
	InputTable  string `json:"input_table,omitempty"`
	OutputTable string `json:"output_table,omitempty"`
	// InputSnapshot is the input snapshot covered; FromSnapshot, for an
	// incremental run, the one the previous run had covered.
	InputSnapshot  int64 `json:"input_snapshot,omitempty"`
	FromSnapshot   int64 `json:"from_snapshot,omitempty"`
	OutputSnapshot int64 `json:"output_snapshot,omitempty"`
	Incremental    bool  `json:"incremental"`
	// NothingNew: nothing was appended since the covered snapshot; nothing
	// was committed.
	NothingNew bool `json:"nothing_new,omitempty"`
	// NewFiles are the input files relabelled as new (all of them in a full
	// run), NewRows their rows; ScannedFiles/ScannedRows what was read for
	// the neighbour search (an incremental run reads every file's features
	// once).
	NewFiles     int   `json:"new_files"`
	NewRows      int64 `json:"new_rows"`
	ScannedFiles int   `json:"scanned_files"`
	ScannedRows  int64 `json:"scanned_rows"`
	// Rescored are old rows re-scored because a new row entered their K
	// nearest neighbours; Searched the old rows whose neighbours were
	// searched again to find them.
	Rescored int64 `json:"rescored,omitempty"`
	Searched int64 `json:"searched,omitempty"`
	// KeptPartitioning: the ivf partitioning the last run kept served this
	// one (only the new rows were probed).
	KeptPartitioning bool `json:"kept_partitioning,omitempty"`
	// Fit is the file beside the output that keeps the full run's fits
	// (the linear head's, the pooled start's) for the incremental runs: a
	// table's path, a directory's name in it; "" where none was kept.
	// KeptFit: this incremental run gave them to the rows it relabelled.
	Fit     string `json:"fit,omitempty"`
	KeptFit bool   `json:"kept_fit,omitempty"`
	// IVF is the file in an output directory that keeps its full run's
	// ivf partitioning for the incremental runs ("" where none was kept;
	// a table names its own in its snapshot).
	IVF string `json:"ivf,omitempty"`
	// RemovedFiles/AddedFiles: output data files the commit replaced/added
	// (in a directory: the output shards removed because their input files
	// are gone / the shards written).
	RemovedFiles int `json:"removed_files,omitempty"`
	AddedFiles   int `json:"added_files,omitempty"`

	// Directory lakes. ChangedFiles are covered input files whose content
	// changed (their rows relabelled as new); GoneFiles those no longer
	// matched by --input (their rows left the output, and RemovedOutputs
	// are their output shards); RewrittenFiles the unchanged files' output
	// shards written again for their re-scored rows.
	ChangedFiles   int      `json:"changed_files,omitempty"`
	GoneFiles      []string `json:"gone_files,omitempty"`
	RemovedOutputs []string `json:"removed_outputs,omitempty"`
	RewrittenFiles int      `json:"rewritten_files,omitempty"`
	// Manifest is every input file the output directory covers: the
	// state the next incremental run compares the input with.
	Manifest []ManifestFile `json:"manifest,omitempty"`
}

// ManifestFile is one input file an output directory covers.
type ManifestFile struct {
	Path string `json:"path"`
	blobio.Fingerprint
	// Output is the name of the output shard holding the file's rows.
	Output string `json:"output"`
	Rows   int64  `json:"rows"`
}

// EncodeSummary is sum as written to summary.json.
func EncodeSummary(sum *Summary) ([]byte, error) {
	return json.MarshalIndent(sum, "", "  ")
}

// ReadSummary reads and checks DIR/summary.json: its presence marks a
// complete output (the run writes it last). The checks are the contract a
// reader of the shards relies on: a class count in range, class names and
// a transition matrix of that size, and shard and annotators files that
// are names beside summary.json (a hand-edited summary cannot point a
// reader at other files, ../../etc/passwd).
func ReadSummary(ctx context.Context, dir string) (*Summary, error) {
	fs, err := blobio.For(dir)
	if err != nil {
		return nil, err
	}
	path := blobio.Join(dir, SummaryName)
	f, err := fs.Open(ctx, path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("resultio: %s has no summary.json: not a finished relabel output", dir)
		}
		return nil, fmt.Errorf("resultio: reading %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(blobio.Section(f))
	if err != nil {
		return nil, fmt.Errorf("resultio: reading %s: %w", path, err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("resultio: %s: %w", path, err)
	}
	if msg := s.check(); msg != "" {
		return nil, fmt.Errorf("resultio: %s: %s", path, msg)
	}
	return &s, nil
}

// check reports what is wrong with s as a finished output's summary, or "".
func (s *Summary) check() string {
	switch {
	case s.Classes < 1 || s.Classes > math.MaxInt32:
		return fmt.Sprintf("classes %d, want in [1, %d]", s.Classes, math.MaxInt32)
	case s.ClassNames != nil && len(s.ClassNames) != s.Classes:
		return fmt.Sprintf("%d class_names for %d classes", len(s.ClassNames), s.Classes)
	case len(s.Shards) == 0:
		return "no shards"
	case s.Transition != nil && len(s.Transition) != s.Classes:
		return fmt.Sprintf("transition has %d rows for %d classes", len(s.Transition), s.Classes)
	}
	if a := s.Annotators; a != nil {
		if msg := a.check(); msg != "" {
			return msg
		}
	}
	for _, sh := range s.Shards {
		if sh.Output == "" || sh.Output != blobio.Base(sh.Output) || sh.Output == "." || sh.Output == ".." {
			return fmt.Sprintf("shard output %q, want a file name beside summary.json", sh.Output)
		}
	}
	for i, row := range s.Transition {
		if len(row) != s.Classes {
			return fmt.Sprintf("transition row %d has %d entries for %d classes", i, len(row), s.Classes)
		}
	}
	return ""
}

// MetaPooledStart is the summary option that records a run whose items
// started from the pooled fit (value PooledStartOpen; absent otherwise):
// an incremental lake run starts the rows it relabels from the same fit,
// which the full run kept (io/keptio), and relabels everything again where
// it was not kept.
const (
	MetaPooledStart = "pooled-start"
	PooledStartOpen = "open"
)

// MetaHeadLast is the summary option that records a run whose linear head
// still gave its component in the last round (value HeadLastOn; absent
// otherwise): its posteriors depend on the head's fit, which an
// incremental lake run needs kept, as MetaPooledStart's.
const (
	MetaHeadLast = "head-last-round"
	HeadLastOn   = "on"
)
