package main

import (
	"fmt"
	"github.com/relabel/relabel/options"
	"os"
	"path/filepath"
	"strings"

	"github.com/relabel/relabel/gpu"
)

// checkUsable refuses option values that are well-formed but found bad only
// when used: they are bad flag values all the same, so exit 2
// naming the flag, before anything is read or created. --device cuda needs
// a GPU this binary can use; --spill-dir must be an existing directory
// (relabel makes its own spill directory inside it, and never creates the
// path given: a mistyped path would otherwise appear on disk).
func checkUsable(o *options.Options, spillSet bool) error {
	if o.Device == "cuda" && !gpu.Available() {
		return usageError{fmt.Errorf("--device cuda: no usable GPU here (%v); --device cpu or auto runs on the CPU", gpu.Err())}
	}
	if dir := o.SpillDir.Or(""); spillSet && dir != "" && dir != "none" {
		if strings.Contains(dir, "://") {
			return usageError{fmt.Errorf("--spill-dir %s: want a local directory", dir)}
		}
		st, err := os.Stat(dir)
		switch {
		case os.IsNotExist(err):
			return usageError{fmt.Errorf("--spill-dir %s: no such directory (relabel makes its spill files inside an existing directory; create it first)", dir)}
		case err != nil:
			return usageError{fmt.Errorf("--spill-dir %s: %v", dir, err)}
		case !st.IsDir():
			return usageError{fmt.Errorf("--spill-dir %s: not a directory", dir)}
		}
	}
	return nil
}

// created tracks the local paths a run may create (its output directory,
// a SQLite catalog file and the directories above them) so that a run that
// fails or is stopped removes what it created and left empty: no empty
// output directory, no empty catalog.db. It records, before the run, the
// topmost missing directory above each path; after a failed run it removes
// those directories bottom-up only while they are empty (os.Remove removes
// no directory that holds anything), so nothing that existed before or was
// written by anyone else is touched.
type created struct {
	dirs  []string // missing before the run, deepest first per path
	files []string // missing before the run (a catalog file and its SQLite sidecars)
}

// track records path (a directory when isDir, else a file) if it does not
// exist yet. Remote paths (gs://) are not tracked: object stores keep no
// empty directories.
func (c *created) track(path string, isDir bool) {
	if path == "" || strings.Contains(path, "://") {
		return
	}
	path = filepath.Clean(path)
	if _, err := os.Lstat(path); err == nil {
		return
	}
	if !isDir {
		c.files = append(c.files, path, path+"-journal", path+"-wal", path+"-shm")
		path = filepath.Dir(path)
	}
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		c.dirs = append(c.dirs, p)
		if q := filepath.Dir(p); q == p {
			break
		}
	}
}

// undo removes what track recorded and the run left: the files, then the
// directories deepest first, each only if empty.
func (c *created) undo() {
	for _, f := range c.files {
		os.Remove(f)
	}
	for _, d := range c.dirs {
		os.Remove(d) // fails, harmlessly, on a directory that holds anything
	}
}

// trackRun records what a run with options o may create.
func trackRun(o *options.Options) *created {
	c := &created{}
	if o.Output != "" {
		c.track(o.Output, true)
	}
	if cat, ok := strings.CutPrefix(o.Lake.Catalog, "sqlite://"); ok && cat != "" {
		c.track(cat, false)
		wh := o.Lake.Warehouse
		if wh == "" {
			wh = filepath.Join(filepath.Dir(cat), "warehouse")
		}
		c.track(strings.TrimPrefix(wh, "file://"), true)
	}
	return c
}
