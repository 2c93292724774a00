package icebergio

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"
)

// scratchPrefix names the temporary directories catalogs keep scanned files
// in (CatalogOptions.Scratch unset).
const scratchPrefix = "relabel-iceberg-"

// scratchMaxAge is how old another catalog's temporary directory must be
// before OpenCatalog removes it as a dead run's: far longer than any run.
const scratchMaxAge = 48 * time.Hour

// scanned is one data file read through iceberg-go's scanner, kept for the
// catalog's later plans of the same snapshot (an incremental run plans the
// snapshot, then the files appended to it, and must see the same files).
type scannedFile struct {
	path string
	rows int64
}

// scanned reads the data file of task t at snapshot snapID through
// iceberg-go's Arrow scanner, which applies the file's position deletes,
// deletion vectors and equality deletes and projects its columns by field id
// onto the table's current schema, and writes the rows as one Parquet file in
// the catalog's scratch directory, named as the data file is (relabel names
// its output files after the input's). It returns the file and its rows.
//
// relabel's readers, which read a worker's share of a Parquet file by row
// group and column name, were not taught Iceberg's deletes and field ids:
// that is iceberg-go's scanner, which this reuses. The cost is one local copy
// of the files that need it, only those.
func (c *Catalog) scanned(ctx context.Context, tbl *table.Table, snapID int64, t table.FileScanTask) (string, int64, error) {
	key := fmt.Sprintf("%d %s", snapID, t.File.FilePath())
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.scannedFiles[key]; ok {
		return f.path, f.rows, nil
	}
	if c.scratch == "" {
		dir, err := os.MkdirTemp("", scratchPrefix)
		if err != nil {
			return "", 0, err
		}
		c.scratch, c.ownScratch = dir, true
	}
	dir := filepath.Join(c.scratch, fmt.Sprint(snapID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	base := path.Base(t.File.FilePath())
	if !strings.HasSuffix(base, ".parquet") {
		base += ".parquet"
	}
	out := filepath.Join(dir, base)
	for n := 1; c.scannedNames[out]; n++ {
		out = filepath.Join(dir, fmt.Sprintf("%s-%d.parquet", strings.TrimSuffix(base, ".parquet"), n))
	}

	scan := tbl.Scan(table.WithSnapshotID(snapID))
	defer scan.Close()
	sc, recs, err := scan.ReadTasks(ctx, []table.FileScanTask{t})
	if err != nil {
		return "", 0, err
	}
	f, err := os.Create(out)
	if err != nil {
		return "", 0, err
	}
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		os.Remove(out)
		return "", 0, err
	}
	var rows int64
	for rec, err := range recs {
		if err == nil {
			rows += rec.NumRows()
			err = w.WriteBuffered(rec)
			rec.Release()
		}
		if err != nil {
			w.Close()
			os.Remove(out)
			return "", 0, err
		}
	}
	if err := w.Close(); err != nil { // closes f
		os.Remove(out)
		return "", 0, err
	}
	c.scannedFiles[key] = scannedFile{path: out, rows: rows}
	c.scannedNames[out] = true
	return out, rows, nil
}

// removeDeadScratch removes other catalogs' temporary scratch directories
// older than scratchMaxAge: those of runs that were killed before Close.
func removeDeadScratch() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), scratchPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > scratchMaxAge {
			os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
}
