package shardio

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// writeBytes writes rows (one record batch each) as a file of format and
// returns its bytes.
func writeBytes(t *testing.T, path string, format Format, rows ...*schemas.Rows) []byte {
	t.Helper()
	if err := WriteInput(context.Background(), blobio.Local{}, path, format, rows, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamCutAtBatchBoundary cuts an Arrow IPC stream exactly after a
// record batch, so that what remains is a well-formed stream without its
// end-of-stream marker: Scan and ReadUnit must both call it truncated rather
// than read fewer rows.
func TestStreamCutAtBatchBoundary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	full := writeBytes(t, filepath.Join(dir, "full.arrows"), ArrowStream,
		synth(0, 900, 4, 10, schemas.IDInt64, false), synth(900, 897, 4, 10, schemas.IDInt64, false))
	// The message boundaries, from the walker and checked here by hand: the
	// stream must end with the 8-byte marker.
	if !bytes.HasSuffix(full, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) {
		t.Fatal("the written stream does not end with the end-of-stream marker")
	}
	rows, err := streamBatchRows(bytes.NewReader(full), int64(len(full)))
	if err != nil || len(rows) != 2 || rows[0] != 900 || rows[1] != 897 {
		t.Fatalf("streamBatchRows = %v, %v; want [900 897]", rows, err)
	}
	shards, err := Scan(ctx, filepath.Join(dir, "full.arrows"), ReadOptions{Classes: 10})
	if err != nil || shards[0].Rows != 1797 {
		t.Fatalf("Scan of the whole stream: %v rows, %v", shards, err)
	}
	// Where the second batch starts: the first batch's end.
	cuts := map[string]int{"no end marker": len(full) - 8, "half the marker": len(full) - 4}
	for i := 0; i < len(full)-8; i++ {
		c := full[:i]
		if r, err := streamBatchRows(bytes.NewReader(c), int64(len(c))); err == nil {
			t.Fatalf("a stream cut to %d of %d bytes walks as %v without error", i, len(full), r)
		}
	}
	for off := 8; off < len(full)-8; off++ {
		// The start of the second record batch: a continuation marker
		// after which a prefix of the file is a stream of 1 batch.
		c := append(bytes.Clone(full[:off]), 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0)
		if r, err := streamBatchRows(bytes.NewReader(c), int64(len(c))); err == nil && len(r) == 1 {
			cuts["after batch 0"] = off
			break
		}
	}
	if _, ok := cuts["after batch 0"]; !ok {
		t.Fatal("found no batch boundary")
	}
	for name, n := range cuts {
		p := filepath.Join(dir, "cut.arrows")
		if err := os.WriteFile(p, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		_, got, err := readAll(ctx, p, ReadOptions{Classes: 10})
		if err == nil || !strings.HasPrefix(err.Error(), "shardio: "+p+": ") || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("%s (%d of %d bytes): read %d batches, error %v; want a truncation error naming the file", name, n, len(full), len(got), err)
		}
		// ReadUnit on its own (the file changed after Scan, or a caller
		// that made the unit itself) must see it too.
		_, err = ReadUnit(ctx, Unit{Path: p, Format: ArrowStream, Rows: -1, D: 4}, ReadOptions{Classes: 10})
		if err == nil || !strings.HasPrefix(err.Error(), "shardio: "+p+": ") {
			t.Errorf("%s: ReadUnit error %v, want one naming the file", name, err)
		}
	}
	// Bytes after the marker are not part of the stream.
	p := filepath.Join(dir, "trailing.arrows")
	if err := os.WriteFile(p, append(bytes.Clone(full), 1, 2, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Scan(ctx, p, ReadOptions{Classes: 10}); err == nil || !strings.Contains(err.Error(), "after the end-of-stream marker") {
		t.Errorf("trailing bytes: Scan error %v", err)
	}
	if _, err := ReadUnit(ctx, Unit{Path: p, Format: ArrowStream, Rows: -1, D: 4}, ReadOptions{Classes: 10}); err == nil || !strings.Contains(err.Error(), "after the end-of-stream marker") {
		t.Errorf("trailing bytes: ReadUnit error %v", err)
	}
}

// TestArrowFileTruncatedEverywhere cuts an Arrow IPC file at every length:
// each must be an error naming the file.
func TestArrowFileTruncatedEverywhere(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	full := writeBytes(t, filepath.Join(dir, "full.arrow"), ArrowFile,
		synth(0, 30, 3, 10, schemas.IDInt64, false), synth(30, 20, 3, 10, schemas.IDInt64, false))
	p := filepath.Join(dir, "cut.arrow")
	for n := 1; n < len(full); n++ {
		if err := os.WriteFile(p, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := readAll(ctx, p, ReadOptions{Classes: 10})
		if err == nil || !strings.HasPrefix(err.Error(), "shardio: "+p+": ") {
			t.Fatalf("cut to %d of %d bytes: error %v, want one naming the file", n, len(full), err)
		}
	}
}
