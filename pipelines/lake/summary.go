package lake

import (
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/pipelines"
)

// Summary is what a table run (or an incremental directory run) adds to
// pipelines.Summary, as its "lake" section: what it covered and what it
// read, wrote and committed.
type Summary struct {
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
	// one (only the new rows were probed; state.go).
	KeptPartitioning bool `json:"kept_partitioning,omitempty"`
	// Fit is the file beside the output that keeps the full run's fits
	// (the linear head's, the pooled start's) for the incremental runs
	// (fit.go): a table's path, a directory's name in it; "" where none
	// was kept. KeptFit: this incremental run gave them to the rows it
	// relabelled.
	Fit     string `json:"fit,omitempty"`
	KeptFit bool   `json:"kept_fit,omitempty"`
	// RemovedFiles/AddedFiles: output data files the commit replaced/added
	// (in a directory: the output shards removed because their input files
	// are gone / the shards written).
	RemovedFiles int `json:"removed_files,omitempty"`
	AddedFiles   int `json:"added_files,omitempty"`

	// Directory lakes (dir.go). ChangedFiles are covered input files
	// whose content changed (their rows relabelled as new); GoneFiles those
	// no longer matched by --input (their rows left the output, and
	// RemovedOutputs are their output shards); RewrittenFiles the unchanged
	// files' output shards written again for their re-scored rows.
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

// Of is sum's lake section, nil when the run was not a lake run: the typed
// view of pipelines.Summary.Lake, which is untyped because pipelines cannot
// import this package.
func Of(sum *pipelines.Summary) *Summary {
	l, _ := sum.Lake.(*Summary)
	return l
}
