package pipelines

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/relabel/relabel/internal/atexit"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/job"
)

// A run's spill directory: relabel-spill-* under --spill-dir, one per run,
// its owner (resultio.Owner) recorded in it, so that a later run on this
// host removes those whose process is gone.
const (
	spillPrefix = "relabel-spill-"
	ownerName   = "owner.json"
)

// removeSpill removes a run's spill directory. A stopped run's pipeline can
// still be finishing a bundle that writes there as the launcher returns;
// spillio never recreates a removed directory, so a removal that meets a
// file created meanwhile ("directory not empty") is retried for a moment.
func removeSpill(dir string) {
	for i := 0; os.RemoveAll(dir) != nil && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// startSpill makes the run's own spill directory under --spill-dir
// (job.Dirs.Spill) where the job spills (ivf's blocks and states, the crowd
// stages' buckets), and returns it and what removes it; with --spill-dir
// none, or nothing to spill, it makes nothing.
func startSpill(j *job.Job, tok string) (string, func(), error) {
	dir := j.SpillDir()
	if dir == "" || j.Mode != job.ModeIVF && j.Crowd == nil {
		return "", func() {}, nil
	}
	spill, err := makeSpill(dir, tok)
	if err != nil {
		return "", nil, fmt.Errorf("relabel: --spill-dir: %w", err)
	}
	return spill, atexit.Push(func() { removeSpill(spill) }).Run, nil
}

// makeSpill makes this run's spill directory under dir, recording its owner,
// after removing the spill directories of runs on this host that are gone.
func makeSpill(dir, token string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	old, _ := filepath.Glob(filepath.Join(dir, spillPrefix+"*"))
	for _, d := range old {
		var o resultio.Owner
		b, err := os.ReadFile(filepath.Join(d, ownerName))
		if err != nil || json.Unmarshal(b, &o) != nil {
			continue // not ours to judge: no owner recorded
		}
		if o.Gone() {
			os.RemoveAll(d)
		}
	}
	d, err := os.MkdirTemp(dir, spillPrefix)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(resultio.Self(token))
	if err := os.WriteFile(filepath.Join(d, ownerName), b, 0o644); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}
