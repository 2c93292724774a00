package icebergio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// ErrDeleteFiles is wrapped by the error of a plan whose data files have
// row-level deletes (v2 position or equality delete files, v3 deletion
// vectors). relabel reads data files with its own readers, which do not apply
// them, and a deleted row silently relabelled (or counted as a neighbour) would
// be wrong: so the plan is refused. Compacting the table (rewriting its data
// files, which applies the deletes) makes it readable.
var ErrDeleteFiles = errors.New("row-level deletes are not applied by relabel")

// ErrNotAppendOnly is wrapped by the error of an incremental plan when the
// input table's history since the covered snapshot is not appends only (rows
// were deleted or overwritten), or the covered snapshot is no longer an
// ancestor of the current one (expired, or the table was rolled back). Rows
// relabelled before may then be gone or changed, which an incremental run
// cannot see: a full run is needed.
var ErrNotAppendOnly = errors.New("input table history is not append-only since the covered snapshot")

// Task is one data file of an input plan: a unit that the existing readers
// read on a worker.
type Task struct {
	// Path is the data file's location as the table records it: a file://
	// or gs:// URI. ReaderPath is the form relabel's readers open.
	Path string
	// Rows is the file's record count, from the table's manifests.
	Rows int64
	// Size is the file's size in bytes.
	Size int64
}

// ReaderPath is Path as relabel's blobio readers name files: file:// URIs
// become local paths, other URIs (gs://) pass through.
func (t Task) ReaderPath() string {
	if p, ok := strings.CutPrefix(t.Path, "file://"); ok {
		return p
	}
	return t.Path
}

// InputPlan is the planned read of an input table.
type InputPlan struct {
	// Table is the input table's dotted name.
	Table string
	// SnapshotID is the snapshot planned: the table's current one when the
	// plan was made. A run records it as the input snapshot it covered.
	SnapshotID int64
	// FromSnapshotID is, for an incremental plan, the snapshot after which
	// appended files were planned (exclusive); 0 for a full plan.
	FromSnapshotID int64
	// Tasks are the data files to read, sorted by path.
	Tasks []Task
	// Rows is the sum of the tasks' rows.
	Rows int64
}

// PlanInput plans a full read of the input table's current snapshot: every
// live data file. A table with no snapshot yet is an error (there is nothing
// to relabel), and so are delete files (ErrDeleteFiles).
func (c *Catalog) PlanInput(ctx context.Context, name string) (*InputPlan, error) {
	tbl, err := c.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, fmt.Errorf("icebergio: input table %s has no snapshot: it holds no rows yet", name)
	}
	tasks, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("icebergio: input table %s snapshot %d: plan: %w", name, snap.SnapshotID, err)
	}
	return newPlan(name, snap.SnapshotID, 0, tasks)
}

// PlanAppendedSince plans a read of only the data files appended to the input
// table after snapshot from (exclusive) up to its current snapshot: the new
// rows of an incremental run. When the current snapshot is from, the plan has
// no tasks: nothing new. Snapshots in between that deleted or overwrote rows
// make it fail with ErrNotAppendOnly; compactions (replace snapshots, which
// change no rows) are allowed and contribute no files.
func (c *Catalog) PlanAppendedSince(ctx context.Context, name string, from int64) (*InputPlan, error) {
	tbl, err := c.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, fmt.Errorf("icebergio: input table %s has no snapshot, but snapshot %d was covered before: %w", name, from, ErrNotAppendOnly)
	}
	if snap.SnapshotID == from {
		return newPlan(name, from, from, nil)
	}
	if err := checkAppendOnly(tbl, name, from, snap.SnapshotID); err != nil {
		return nil, err
	}
	tasks, err := tbl.NewIncrementalAppendScan().FromSnapshotExclusive(from).ToSnapshot(snap.SnapshotID).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("icebergio: input table %s snapshots %d..%d: plan appended files: %w", name, from, snap.SnapshotID, err)
	}
	return newPlan(name, snap.SnapshotID, from, tasks)
}

// checkAppendOnly walks the ancestry of to back to from and refuses any
// snapshot that may have removed or changed rows. iceberg-go's incremental
// append scan skips such snapshots silently, by design (it plans appends);
// relabel must not, since the rows it relabelled before would be stale.
func checkAppendOnly(tbl *table.Table, name string, from, to int64) error {
	for _, s := range table.AncestorsOf(to, tbl.SnapshotByID) {
		if s.SnapshotID == from {
			return nil
		}
		op := table.Operation("")
		if s.Summary != nil {
			op = s.Summary.Operation
		}
		switch op {
		case table.OpAppend, table.OpReplace:
		default:
			return fmt.Errorf("icebergio: input table %s: snapshot %d since the covered snapshot %d is a %q operation; run a full (non-incremental) run: %w",
				name, s.SnapshotID, from, op, ErrNotAppendOnly)
		}
	}
	return fmt.Errorf("icebergio: input table %s: the covered snapshot %d is not an ancestor of the current snapshot %d (expired or rolled back); run a full (non-incremental) run: %w",
		name, from, to, ErrNotAppendOnly)
}

func newPlan(name string, snapID, from int64, tasks []table.FileScanTask) (*InputPlan, error) {
	p := &InputPlan{Table: name, SnapshotID: snapID, FromSnapshotID: from, Tasks: make([]Task, 0, len(tasks))}
	for _, t := range tasks {
		if n := len(t.DeleteFiles) + len(t.EqualityDeleteFiles) + len(t.DeletionVectorFiles); n > 0 {
			first := append(append(append([]string(nil), paths(t.DeleteFiles)...), paths(t.EqualityDeleteFiles)...), paths(t.DeletionVectorFiles)...)[0]
			return nil, fmt.Errorf("icebergio: input table %s snapshot %d: data file %s has %d delete file(s) (%d position, %d equality, %d deletion vector; first %s); compact the table (rewrite its data files) first: %w",
				name, snapID, t.File.FilePath(), n, len(t.DeleteFiles), len(t.EqualityDeleteFiles), len(t.DeletionVectorFiles), first, ErrDeleteFiles)
		}
		if t.Start != 0 || t.Length != t.File.FileSizeBytes() {
			// Split planning is off by default; a split task would make the
			// same file two units, read twice.
			return nil, fmt.Errorf("icebergio: input table %s: data file %s planned as a split (%d+%d of %d bytes); relabel reads whole files",
				name, t.File.FilePath(), t.Start, t.Length, t.File.FileSizeBytes())
		}
		p.Tasks = append(p.Tasks, Task{Path: t.File.FilePath(), Rows: t.File.Count(), Size: t.File.FileSizeBytes()})
		p.Rows += t.File.Count()
	}
	slices.SortFunc(p.Tasks, func(a, b Task) int { return strings.Compare(a.Path, b.Path) })
	return p, nil
}

func paths[F interface{ FilePath() string }](files []F) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}
