package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/options"
)

// The output directory protocol (README "Guarantees"):
//
//   - .relabel.lock: created exclusively (O_EXCL; on gs:// a DoesNotExist
//     precondition) by the run that writes the output, holding its pid, host
//     and start time. A second run fails fast while it exists; a lock whose
//     owner process is gone (same host, pid dead) is stale and taken over.
//   - .relabel-tmp-TOKEN/: where the pipeline writes every file of the run.
//   - .relabel-commit.json: the journal of a commit in progress, listing the
//     files it publishes. Written before the first file is moved, removed
//     after the last: files it names belong to an interrupted commit, so a
//     rerun may replace them without --overwrite.
//   - summary.json: renamed into place last. It is the completeness marker:
//     while it is absent the directory holds no finished output (a commit is
//     under way or was interrupted); when present, every shard it lists is
//     complete and from the same run.
const (
	lockName    = ".relabel.lock"
	journalName = ".relabel-commit.json"
	tmpPrefix   = ".relabel-tmp-"
	spillPrefix = "relabel-spill-"
	ownerName   = "owner.json"
	summaryName = "summary.json"
	// ReportName is the HTML report written beside summary.json.
	ReportName = "report.html"
)

// ErrLocked is returned when another run holds the output's lock.
var ErrLocked = errors.New("output locked by another run")

// owner identifies the process holding a lock or a spill directory.
type owner struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	Token   string    `json:"token"`
}

func self(token string) owner {
	host, _ := os.Hostname()
	return owner{PID: os.Getpid(), Host: host, Started: time.Now().UTC().Truncate(time.Second), Token: token}
}

// gone reports whether the owner process is known to have ended: on this
// host, with no process of its pid. A lock from another host is never
// presumed gone (relabel cannot see that host's processes).
func (o owner) gone() bool {
	host, _ := os.Hostname()
	if o.Host != host || o.PID <= 0 {
		return false
	}
	err := syscall.Kill(o.PID, 0)
	return errors.Is(err, syscall.ESRCH)
}

// lock takes the output's lock, taking over a stale one. The returned
// function releases it.
func lock(ctx context.Context, fs blobio.FS, out, token string) (func(), error) {
	path := blobio.Join(out, lockName)
	me := self(token)
	b, _ := json.Marshal(me)
	for attempt := 0; ; attempt++ {
		err := blobio.CreateExclusive(ctx, path, b)
		if err == nil {
			return func() { fs.Remove(context.WithoutCancel(ctx), path) }, nil
		}
		if !errors.Is(err, blobio.ErrExist) {
			return nil, fmt.Errorf("relabel: locking %s: %w", out, err)
		}
		var other owner
		if rerr := readJSON(ctx, fs, path, &other); rerr != nil && attempt == 0 {
			// Being written by its owner right now, or torn: look once more.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if attempt == 0 && other.gone() {
			// The owner died (SIGKILL, OOM, power): its lock is stale.
			fs.Remove(ctx, path)
			continue
		}
		return nil, fmt.Errorf("relabel: %s: %w: pid %d on %s since %s holds %s; wait for it to finish, or remove %s if that run is gone",
			out, ErrLocked, other.PID, other.Host, other.Started.Format(time.RFC3339), lockName, path)
	}
}

// journal is .relabel-commit.json.
type journal struct {
	Token string   `json:"token"`
	Files []string `json:"files"`
}

// readJournal reads the journal of an interrupted commit in out; nil when
// there is none.
func readJournal(ctx context.Context, fs blobio.FS, out string) (*journal, error) {
	path := blobio.Join(out, journalName)
	ok, err := fs.Exists(ctx, path)
	if err != nil || !ok {
		return nil, err
	}
	var j journal
	if err := readJSON(ctx, fs, path, &j); err != nil {
		return nil, fmt.Errorf("relabel: reading %s: %w", path, err)
	}
	return &j, nil
}

// pendingFiles returns the files an interrupted commit left in out (from its
// journal): a rerun may replace them without --overwrite.
func pendingFiles(ctx context.Context, fs blobio.FS, out string) (map[string]bool, error) {
	j, err := readJournal(ctx, fs, out)
	if err != nil || j == nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, f := range j.Files {
		m[f] = true
	}
	return m, nil
}

// removeStaleTemps removes the temporary directories of earlier runs in out:
// the caller holds the lock, so no live run owns them.
func removeStaleTemps(ctx context.Context, fs blobio.FS, out string) {
	if !strings.Contains(out, "://") {
		dirs, _ := filepath.Glob(filepath.Join(out, tmpPrefix+"*"))
		for _, d := range dirs {
			os.RemoveAll(d)
		}
		return
	}
	files, _ := fs.Glob(ctx, blobio.Join(out, tmpPrefix+"*/*"))
	for _, f := range files {
		fs.Remove(ctx, f)
	}
	dirs, _ := fs.Glob(ctx, blobio.Join(out, tmpPrefix+"*"))
	for _, d := range dirs {
		fs.Remove(ctx, d)
	}
}

// removeSpill removes a run's spill directory. A stopped run's pipeline can
// still be finishing a bundle that writes there as the launcher returns;
// spillio never recreates a removed directory, so a removal that meets a
// file created meanwhile ("directory not empty") is retried for a moment.
func removeSpill(dir string) {
	for i := 0; os.RemoveAll(dir) != nil && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// startSpill makes the run's own spill directory under --spill-dir (Plan.Spill)
// where the plan spills (ivf's blocks and states, the crowd stages'
// buckets), and returns what removes it; with --spill-dir none, or nothing
// to spill, it makes nothing.
func (p *Plan) startSpill(tok string) (func(), error) {
	dir := p.Options.SpillDir.Or("")
	if dir == "" || dir == "none" || p.Mode != options.NeighboursIVF && p.Crowd == nil {
		return func() {}, nil
	}
	var err error
	if p.Spill, err = makeSpill(dir, tok); err != nil {
		return nil, fmt.Errorf("relabel: --spill-dir: %w", err)
	}
	return atexit.Push(func() { removeSpill(p.Spill) }).Run, nil
}

// makeSpill makes this run's spill directory under dir, recording its owner,
// after removing the spill directories of runs on this host that are gone.
func makeSpill(dir, token string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	old, _ := filepath.Glob(filepath.Join(dir, spillPrefix+"*"))
	for _, d := range old {
		var o owner
		b, err := os.ReadFile(filepath.Join(d, ownerName))
		if err != nil || json.Unmarshal(b, &o) != nil {
			continue // not ours to judge: no owner recorded
		}
		if o.gone() {
			os.RemoveAll(d)
		}
	}
	d, err := os.MkdirTemp(dir, spillPrefix)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(self(token))
	if err := os.WriteFile(filepath.Join(d, ownerName), b, 0o644); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// checkNotInput refuses an output directory that is, after symlinks, the
// directory of an input shard or an input shard itself: committing there
// would replace inputs (an .arrow input and its output share a name).
func checkNotInput(out string, inputs []string) error {
	norm := func(p string) string {
		if strings.Contains(p, "://") {
			return strings.TrimSuffix(p, "/")
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r
		}
		// Not there yet: resolve the parent, which may be a link.
		if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			return filepath.Join(r, filepath.Base(abs))
		}
		return abs
	}
	o := norm(out)
	for _, in := range inputs {
		p := norm(in)
		if p == o || blobio.Dir(p) == o {
			return &options.Error{Flag: "output", Err: fmt.Errorf("%s: is the input's directory (%s): relabel never writes beside its inputs; choose another directory", out, in)}
		}
	}
	return nil
}

// commit publishes the files of tmp into out: journal, old summary removed,
// files renamed, summary renamed last, journal removed. A kill at any point
// leaves either the old output, or no summary.json and a journal naming the
// files a rerun may replace.
func commit(ctx context.Context, fs blobio.FS, tmp, out string, files []string, token string) error {
	ctx = context.WithoutCancel(ctx) // once started, finish: a half commit helps no one
	jb, _ := json.Marshal(journal{Token: token, Files: append(append([]string(nil), files...), summaryName)})
	if err := blobio.WriteFile(ctx, fs, blobio.Join(tmp, journalName), jb); err != nil {
		return err
	}
	if err := fs.Rename(ctx, blobio.Join(tmp, journalName), blobio.Join(out, journalName)); err != nil {
		return fmt.Errorf("relabel: committing: %w", err)
	}
	faults.Point("commit-journal")
	if err := fs.Remove(ctx, blobio.Join(out, summaryName)); err != nil {
		return fmt.Errorf("relabel: committing: %w", err)
	}
	faults.Point("commit-unmarked")
	for i, name := range files {
		if err := fs.Rename(ctx, blobio.Join(tmp, name), blobio.Join(out, name)); err != nil {
			return fmt.Errorf("relabel: committing %s: %w", name, err)
		}
		faults.Point(fmt.Sprintf("commit-file-%d", i))
	}
	if err := fs.Rename(ctx, blobio.Join(tmp, summaryName), blobio.Join(out, summaryName)); err != nil {
		return fmt.Errorf("relabel: committing %s: %w", summaryName, err)
	}
	faults.Point("commit-summary")
	return fs.Remove(ctx, blobio.Join(out, journalName))
}

// Resume finishes a commit that a killed run left half done, then removes
// earlier runs' temporary directories (the lock is held: no live run owns
// them). The interrupted commit's journal is in the output and its
// temporary directory still holds the files it had not yet renamed (commit
// writes the journal only once every file, summary last, is in place in the
// temporary directory, so rolling forward publishes exactly what that run
// would have). Without it, a kill between two renames would leave shards of
// two runs and no summary, and the next incremental run (pipelines/lake)
// would have no state to start from. Reports whether it finished one.
func (s *Session) Resume(ctx context.Context) (bool, error) {
	done, err := resumeCommit(ctx, s.FS, s.Plan.Options.Output)
	if err != nil {
		return false, err
	}
	removeStaleTemps(ctx, s.FS, s.Plan.Options.Output)
	return done, nil
}

// resumeCommit is Resume's roll-forward of the journal in out.
func resumeCommit(ctx context.Context, fsys blobio.FS, out string) (bool, error) {
	j, err := readJournal(ctx, fsys, out)
	if err != nil || j == nil {
		return false, err
	}
	jpath := blobio.Join(out, journalName)
	tmp := blobio.Join(out, tmpPrefix+j.Token)
	if ok, err := fsys.Exists(ctx, blobio.Join(tmp, summaryName)); err != nil {
		return false, err
	} else if !ok {
		// Its summary was published (or the directory is gone): nothing
		// to finish but the journal's removal.
		return false, fsys.Remove(ctx, jpath)
	}
	for _, name := range j.Files {
		src := blobio.Join(tmp, name)
		if ok, err := fsys.Exists(ctx, src); err != nil {
			return false, err
		} else if ok {
			if err := fsys.Rename(ctx, src, blobio.Join(out, name)); err != nil {
				return false, fmt.Errorf("relabel: finishing the interrupted commit into %s: %w", out, err)
			}
		}
	}
	return true, fsys.Remove(ctx, jpath)
}

// ReadSummary decodes the output's finished summary.json into v (the
// directory lake's state: a summary with its lake section typed). found is
// false when there is none.
func (s *Session) ReadSummary(ctx context.Context, v any) (found bool, err error) {
	path := blobio.Join(s.Plan.Options.Output, summaryName)
	if err := readJSON(ctx, s.FS, path, v); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("relabel: reading %s: %w", path, err)
	}
	return true, nil
}
