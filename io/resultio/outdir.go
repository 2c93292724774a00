package resultio

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/relabel/relabel/internal/faults"
	"github.com/relabel/relabel/io/blobio"
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
	// ReportName is the HTML report written beside summary.json.
	ReportName = "report.html"
)

// ErrLocked is returned when another run holds the output's lock.
var ErrLocked = errors.New("output locked by another run")

// Owner identifies the process holding a lock (or, for pipelines, a spill
// directory).
type Owner struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	Token   string    `json:"token"`
}

// Self is this process as the owner of the run named by token.
func Self(token string) Owner {
	host, _ := os.Hostname()
	return Owner{PID: os.Getpid(), Host: host, Started: time.Now().UTC().Truncate(time.Second), Token: token}
}

// Gone reports whether the owner process is known to have ended: on this
// host, with no process of its pid. A lock from another host is never
// presumed gone (relabel cannot see that host's processes).
func (o Owner) Gone() bool {
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
	me := Self(token)
	b, _ := json.Marshal(me)
	for attempt := 0; ; attempt++ {
		err := blobio.CreateExclusive(ctx, path, b)
		if err == nil {
			return func() { fs.Remove(context.WithoutCancel(ctx), path) }, nil
		}
		if !errors.Is(err, blobio.ErrExist) {
			return nil, fmt.Errorf("relabel: locking %s: %w", out, err)
		}
		var other Owner
		if rerr := readJSON(ctx, fs, path, &other); rerr != nil && attempt == 0 {
			// Being written by its owner right now, or torn: look once more.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if attempt == 0 && other.Gone() {
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

// CheckNotInput refuses an output directory that is, after symlinks, the
// directory of an input shard or an input shard itself: committing there
// would replace inputs (an .arrow input and its output share a name).
func CheckNotInput(out string, inputs []string) error {
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
			return fmt.Errorf("%s: is the input's directory (%s): relabel never writes beside its inputs; choose another directory", out, in)
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
	jb, _ := json.Marshal(journal{Token: token, Files: append(append([]string(nil), files...), SummaryName)})
	if err := blobio.WriteFile(ctx, fs, blobio.Join(tmp, journalName), jb); err != nil {
		return err
	}
	if err := fs.Rename(ctx, blobio.Join(tmp, journalName), blobio.Join(out, journalName)); err != nil {
		return fmt.Errorf("relabel: committing: %w", err)
	}
	faults.Point("commit-journal")
	if err := fs.Remove(ctx, blobio.Join(out, SummaryName)); err != nil {
		return fmt.Errorf("relabel: committing: %w", err)
	}
	faults.Point("commit-unmarked")
	for i, name := range files {
		if err := fs.Rename(ctx, blobio.Join(tmp, name), blobio.Join(out, name)); err != nil {
			return fmt.Errorf("relabel: committing %s: %w", name, err)
		}
		faults.Point(fmt.Sprintf("commit-file-%d", i))
	}
	if err := fs.Rename(ctx, blobio.Join(tmp, SummaryName), blobio.Join(out, SummaryName)); err != nil {
		return fmt.Errorf("relabel: committing %s: %w", SummaryName, err)
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
// two runs and no summary, and the next incremental run (package lake)
// would have no state to start from. Reports whether it finished one.
func (d *Dir) Resume(ctx context.Context) (bool, error) {
	done, err := resumeCommit(ctx, d.FS, d.Out)
	if err != nil {
		return false, err
	}
	removeStaleTemps(ctx, d.FS, d.Out)
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
	if ok, err := fsys.Exists(ctx, blobio.Join(tmp, SummaryName)); err != nil {
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

// Previous decodes the output's finished summary.json (the directory
// lake's state: a summary with its lake section). found is false when
// there is none.
func (d *Dir) Previous(ctx context.Context) (sum *Summary, found bool, err error) {
	path := blobio.Join(d.Out, SummaryName)
	var v Summary
	if err := readJSON(ctx, d.FS, path, &v); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("relabel: reading %s: %w", path, err)
	}
	return &v, true, nil
}

// Dir is an output directory held under its lock (.relabel.lock) by one
// run: the protocol above, for plain runs and directory lakes alike.
type Dir struct {
	FS blobio.FS
	// Out is the directory.
	Out string
	// token names the run's temporary directory and its lock's owner.
	token  string
	unlock func()
}

// OpenDir makes the output directory out and takes its lock for the run
// named by token (NewToken). Close releases it.
func OpenDir(ctx context.Context, out, token string) (*Dir, error) {
	fs, err := blobio.For(out)
	if err != nil {
		return nil, err
	}
	if err := fs.MkdirAll(ctx, out); err != nil {
		return nil, fmt.Errorf("relabel: creating %s: %w", out, err)
	}
	unlock, err := lock(ctx, fs, out, token)
	if err != nil {
		return nil, err
	}
	return &Dir{FS: fs, Out: out, token: token, unlock: unlock}, nil
}

// Close releases the lock.
func (d *Dir) Close() { d.unlock() }

// Token names the run holding d.
func (d *Dir) Token() string { return d.token }

// CheckFree refuses, unless overwrite, to replace any of names (files a
// run would commit) that exists in the output, but for those an
// interrupted commit left (its journal names them: a rerun's to replace).
// It first removes earlier runs' temporary directories (the lock is held:
// no live run owns them).
func (d *Dir) CheckFree(ctx context.Context, names []string, overwrite bool) error {
	removeStaleTemps(ctx, d.FS, d.Out)
	pending, err := pendingFiles(ctx, d.FS, d.Out)
	if err != nil {
		return err
	}
	if overwrite {
		return nil
	}
	for _, name := range names {
		out := blobio.Join(d.Out, name)
		if pending[name] {
			continue // left by an interrupted commit: ours to replace
		}
		if ok, err := d.FS.Exists(ctx, out); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("relabel: %s exists (pass --overwrite to replace it)", out)
		}
	}
	return nil
}

// Temp makes the run's temporary directory inside the output.
func (d *Dir) Temp(ctx context.Context) (string, error) {
	tmp := blobio.Join(d.Out, tmpPrefix+d.token)
	if err := d.FS.MkdirAll(ctx, tmp); err != nil {
		return "", fmt.Errorf("relabel: creating %s: %w", tmp, err)
	}
	return tmp, nil
}

// Publish writes sum as tmp's summary.json and commits files (names in tmp)
// and it into the output.
func (d *Dir) Publish(ctx context.Context, tmp string, files []string, sum *Summary) error {
	b, err := EncodeSummary(sum)
	if err != nil {
		return err
	}
	if err := blobio.WriteFile(ctx, d.FS, blobio.Join(tmp, SummaryName), b); err != nil {
		return err
	}
	return commit(ctx, d.FS, tmp, d.Out, files, d.token)
}

// RemoveTemp deletes a temporary directory's known files (names, their
// reports, the summary and journal) and the directory: a store without
// directories (gs://) has no recursive removal, so what a run may have
// written there is named.
func RemoveTemp(ctx context.Context, fs blobio.FS, tmp string, names []string) {
	for _, name := range names {
		fs.Remove(ctx, blobio.Join(tmp, name))
		fs.Remove(ctx, blobio.Join(tmp, name+ReportSuffix))
	}
	fs.Remove(ctx, blobio.Join(tmp, SummaryName))
	fs.Remove(ctx, blobio.Join(tmp, journalName))
	fs.Remove(ctx, tmp)
}

// NewToken names a run's temporary directory (not an input to any output
// byte), and a table run's directory.
func NewToken() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func readJSON(ctx context.Context, fs blobio.FS, path string, v any) error {
	b, err := blobio.ReadFile(ctx, fs, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
