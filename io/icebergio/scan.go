package icebergio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/relabel/relabel/io/blobio"
)

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
	// Rows is the file's live record count: from the table's manifests, or,
	// for a file read through iceberg-go's scanner (Scanned), the rows left
	// after its deletes.
	Rows int64
	// Size is the data file's size in bytes.
	Size int64
	// Scanned is the local Parquet file holding the data file's rows as
	// Iceberg defines them, read through iceberg-go's scanner: its row-level
	// deletes (position deletes, deletion vectors, equality deletes)
	// applied and its columns resolved by field id under the table's
	// current schema. Empty when the data file is read as it is (no deletes,
	// no schema change that renamed, dropped or re-added a column).
	Scanned string
}

// ReaderPath is the file relabel's readers open for the task: Scanned, or
// Path as blobio names files (file:// URIs become local paths, other URIs,
// gs://, pass through).
func (t Task) ReaderPath() string {
	if t.Scanned != "" {
		return t.Scanned
	}
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
	// Tasks are the data files to read, in an order that depends on their
	// contents only (contentOrder), never on their names.
	Tasks []Task
	// Rows is the sum of the tasks' rows.
	Rows int64
}

// PlanInput plans a full read of the input table's current snapshot: every
// live data file. A table with no snapshot yet is an error (there is nothing
// to relabel). Data files with row-level deletes, and every data file of a
// table whose schema history renamed, dropped or re-added a column, are read
// through iceberg-go's scanner into the catalog's scratch directory
// (Task.Scanned), so that relabel's readers, which take Parquet columns by
// name, see the rows and columns Iceberg defines.
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
	return c.newPlan(ctx, tbl, name, snap.SnapshotID, 0, tasks)
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
		return c.newPlan(ctx, tbl, name, from, from, nil)
	}
	if err := checkAppendOnly(tbl, name, from, snap.SnapshotID); err != nil {
		return nil, err
	}
	tasks, err := tbl.NewIncrementalAppendScan().FromSnapshotExclusive(from).ToSnapshot(snap.SnapshotID).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("icebergio: input table %s snapshots %d..%d: plan appended files: %w", name, from, snap.SnapshotID, err)
	}
	return c.newPlan(ctx, tbl, name, snap.SnapshotID, from, tasks)
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

func (c *Catalog) newPlan(ctx context.Context, tbl *table.Table, name string, snapID, from int64, tasks []table.FileScanTask) (*InputPlan, error) {
	p := &InputPlan{Table: name, SnapshotID: snapID, FromSnapshotID: from, Tasks: make([]Task, 0, len(tasks))}
	for _, t := range tasks {
		if t.Start != 0 || t.Length != t.File.FileSizeBytes() {
			// Split planning is off by default; a split task would make the
			// same file two units, read twice.
			return nil, fmt.Errorf("icebergio: input table %s: data file %s planned as a split (%d+%d of %d bytes); relabel reads whole files",
				name, t.File.FilePath(), t.Start, t.Length, t.File.FileSizeBytes())
		}
	}
	order, err := contentOrder(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("icebergio: input table %s snapshot %d: %w", name, snapID, err)
	}
	evolved := renamedColumns(tbl)
	for _, i := range order {
		t := tasks[i]
		task := Task{Path: t.File.FilePath(), Rows: t.File.Count(), Size: t.File.FileSizeBytes()}
		deletes := len(t.DeleteFiles) + len(t.EqualityDeleteFiles) + len(t.DeletionVectorFiles)
		if deletes > 0 || evolved != "" {
			if task.Scanned, task.Rows, err = c.scanned(ctx, tbl, snapID, t); err != nil {
				why := evolved
				if deletes > 0 {
					why = fmt.Sprintf("%d delete file(s)", deletes)
				}
				return nil, fmt.Errorf("icebergio: input table %s snapshot %d: data file %s (%s): reading it through iceberg-go's scanner: %w", name, snapID, t.File.FilePath(), why, err)
			}
		}
		p.Tasks = append(p.Tasks, task)
		p.Rows += task.Rows
	}
	return p, nil
}

// renamedColumns says why the table's data files cannot be read by column
// name: a column of the current schema that an earlier schema named
// otherwise or did not have (renamed, or added, possibly after a column of
// the same name was dropped: Iceberg matches columns by field id, and a data
// file written before holds the old name, or the dropped column's values
// under the new name). Empty when every schema the table had agrees with the
// current one on its columns' names. Which files were written under which
// schema is not recorded in the manifests, so the answer is per table.
func renamedColumns(tbl *table.Table) string {
	cur := tbl.Schema()
	for _, old := range tbl.Metadata().Schemas() {
		if old.ID == cur.ID {
			continue
		}
		for _, f := range cur.Fields() {
			was, ok := old.FindFieldByID(f.ID)
			switch {
			case !ok:
				return fmt.Sprintf("column %s (field id %d) is not in the table's schema %d", f.Name, f.ID, old.ID)
			case was.Name != f.Name:
				return fmt.Sprintf("column %s (field id %d) was %s in the table's schema %d", f.Name, f.ID, was.Name, old.ID)
			}
		}
	}
	return ""
}

// contentOrder orders the tasks by what their files hold, never by their
// names, so that a run's result (which depends on the order rows are read
// in) is the same for the same table contents whatever the writer named the
// files: by the column bounds and record count the manifests record (for a
// table of unique ids, distinct for every file), and where two files agree on
// those (a writer that records no bounds), by a SHA-256 of their bytes.
func contentOrder(ctx context.Context, tasks []table.FileScanTask) ([]int, error) {
	keys := make([][]byte, len(tasks))
	for i, t := range tasks {
		keys[i] = statsKey(t.File)
	}
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	hashes := map[int][]byte{}
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && bytes.Equal(keys[order[lo]], keys[order[hi]]) {
			hi++
		}
		if hi-lo > 1 {
			for _, i := range order[lo:hi] {
				h, err := fileHash(ctx, tasks[i].File.FilePath())
				if err != nil {
					return nil, err
				}
				hashes[i] = h
			}
			slices.SortStableFunc(order[lo:hi], func(a, b int) int { return bytes.Compare(hashes[a], hashes[b]) })
		}
		lo = hi
	}
	return order, nil
}

// statsKey encodes a data file's record count and column bounds, by field
// id, as a byte string that orders files by their contents.
func statsKey(f iceberg.DataFile) []byte {
	var k []byte
	put := func(b []byte) {
		k = binary.BigEndian.AppendUint32(k, uint32(len(b)))
		k = append(k, b...)
	}
	lower, upper := f.LowerBoundValues(), f.UpperBoundValues()
	ids := slices.Sorted(maps.Keys(lower))
	for _, id := range slices.Sorted(maps.Keys(upper)) {
		if _, ok := lower[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		k = binary.BigEndian.AppendUint32(k, uint32(id))
		put(lower[id])
		put(upper[id])
	}
	return binary.BigEndian.AppendUint64(k, uint64(f.Count()))
}

// fileHash is the SHA-256 of a data file's bytes.
func fileHash(ctx context.Context, uri string) ([]byte, error) {
	p := Task{Path: uri}.ReaderPath()
	fs, err := blobio.For(p)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", uri, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, f.Size())); err != nil {
		return nil, fmt.Errorf("data file %s: %w", uri, err)
	}
	return h.Sum(nil), nil
}
