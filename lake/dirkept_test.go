package lake_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/keptio"
	"github.com/relabel/relabel/io/resultio"
	"github.com/relabel/relabel/lake"
	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/engine"
)

// TestLakeDirKeptPartitioning: a directory lake's full run in ivf mode
// keeps its pipeline's partitioning beside the output, named in
// summary.json, and the incremental runs after it probe the rows it does
// not hold (the new ones, and those appended since the full run) in it
// instead of partitioning every row again; they leave the file as it is. A
// damaged file is partitioned again, not an error.
func TestLakeDirKeptPartitioning(t *testing.T) {
	ctx := ctxT(t)
	in, out := filepath.Join(t.TempDir(), "in"), filepath.Join(t.TempDir(), "out")
	writeDay(t, filepath.Join(in, "day-0.parquet"), blobRows(0, 6000, 1))
	o := options.Defaults()
	o.Input, o.Output = filepath.Join(in, "*.parquet"), out
	o.Neighbours, o.Rounds, o.L = options.NeighboursIVF, 3, 50
	o.GivenLabel = options.Some(engine.GivenVote)
	o.Lake.Incremental = true
	run := func() *resultio.Summary { t.Helper(); return mustRunLake(t, ctx, o) }
	fits := lake.LauncherFits()
	first := run()
	if first.Lake.IVF != keptio.DirIVFFileName {
		t.Fatalf("the full run kept %q, want %s", first.Lake.IVF, keptio.DirIVFFileName)
	}
	state, err := os.ReadFile(filepath.Join(out, keptio.DirIVFFileName))
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(out, func(p string, _ fs.DirEntry, _ error) error {
		if b := filepath.Base(p); strings.Contains(b, "ivf-kept") || strings.HasPrefix(b, "probes-") {
			t.Errorf("the pipeline's kept partitioning left behind: %s", p)
		}
		return nil
	})
	for day := 1; day <= 2; day++ {
		writeDay(t, filepath.Join(in, "day-"+string(rune('0'+day))+".parquet"), blobRows(int64(6000+300*(day-1)), 300, uint64(1+day)))
		sum := run()
		if !sum.Lake.KeptPartitioning || sum.Lake.NewRows != 300 || sum.Lake.IVF != keptio.DirIVFFileName {
			t.Errorf("day %d: kept partitioning used %t, %d new rows, kept file %q", day, sum.Lake.KeptPartitioning, sum.Lake.NewRows, sum.Lake.IVF)
		}
	}
	if n := lake.LauncherFits() - fits; n != 0 {
		t.Errorf("the runs fitted %d partitionings in the launcher, want 0", n)
	}
	if now, err := os.ReadFile(filepath.Join(out, keptio.DirIVFFileName)); err != nil || !bytes.Equal(now, state) {
		t.Errorf("the incremental runs changed the kept file (%v)", err)
	}
	if sum := run(); !sum.Lake.NothingNew {
		t.Errorf("a rerun found something new")
	}

	if err := os.WriteFile(filepath.Join(out, keptio.DirIVFFileName), []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeDay(t, filepath.Join(in, "day-3.parquet"), blobRows(6600, 300, 4))
	if sum := run(); sum.Lake.KeptPartitioning || sum.Lake.NewRows != 300 {
		t.Errorf("with a damaged kept file: kept partitioning used %t, %d new rows", sum.Lake.KeptPartitioning, sum.Lake.NewRows)
	}
	if n := lake.LauncherFits() - fits; n != 1 {
		t.Errorf("with a damaged kept file the launcher fitted %d partitionings, want 1", n)
	}
	if c := cleanByID(t, out); len(c) != 6900 {
		t.Errorf("the output holds %d rows, want 6900", len(c))
	}
}
