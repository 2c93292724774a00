package shardio

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// TestIPCBatchRows checks the footer parser against arrow-go's reader, which
// loads each batch whole: on files of this writer and on one of Arrow JS.
func TestIPCBatchRows(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "batches.arrow")
	var batches []*schemas.Rows
	for i, n := range []int{5, 1, 300, 2} {
		batches = append(batches, synth(int64(i*1000), n, 3, 4, schemas.IDString, false))
	}
	if err := WriteInput(context.Background(), blobio.Local{}, mine, ArrowFile, batches, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
	files := []string{mine}
	if p := filepath.Join(sharedData, "sklearn_digits/noisy-sym-0.4.arrow"); fileExists(p) {
		files = append(files, p)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ipcBatchRows(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		r, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != r.NumRecords() {
			t.Fatalf("%s: %d batches, arrow-go reads %d", p, len(got), r.NumRecords())
		}
		for i := range got {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != rec.NumRows() {
				t.Errorf("%s batch %d: %d rows, arrow-go reads %d", p, i, got[i], rec.NumRows())
			}
			rec.Release()
		}
		r.Close()

		// Corrupt each byte of the footer in turn: errors or plausible
		// counts, never a panic.
		for i := len(b) - 10 - 200; i < len(b); i++ {
			if i < 0 {
				continue
			}
			c := bytes.Clone(b)
			c[i] ^= 0xa5
			_, _ = ipcBatchRows(bytes.NewReader(c), int64(len(c)))
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
