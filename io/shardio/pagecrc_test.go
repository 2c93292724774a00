package shardio

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/relabel/relabel/io/blobio"
	"github.com/relabel/relabel/schemas"
)

// writeTestParquet writes a few row groups of synthetic rows as Parquet (with
// page checksums, as every Parquet file relabel writes) and returns the path.
func writeTestParquet(t *testing.T, dir string, multi bool) string {
	t.Helper()
	path := filepath.Join(dir, "x.parquet")
	fs, _ := blobio.For(path)
	rows := []*schemas.Rows{synth(0, 300, 7, 5, schemas.IDInt64, multi), synth(300, 250, 7, 5, schemas.IDInt64, multi)}
	if err := WriteInput(context.Background(), fs, path, Parquet, rows, schemas.LabelInt32, nil, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPageCRCsWritten: every page of every column chunk of a file relabel
// writes carries the CRC-32 of its bytes, and arrow-go still reads the file
// (its footer offsets were moved correctly).
func TestPageCRCsWritten(t *testing.T) {
	for _, multi := range []bool{false, true} {
		path := writeTestParquet(t, t.TempDir(), multi)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		pages := 0
		for rg := 0; rg < pr.NumRowGroups(); rg++ {
			md := pr.MetaData().RowGroup(rg)
			for j := 0; j < md.NumColumns(); j++ {
				c, _ := md.ColumnChunk(j)
				start := chunkStart(c)
				ps, err := walkPages(b[start:start+c.TotalCompressedSize()], start)
				if err != nil {
					t.Fatalf("multi %v rg %d col %d: %v", multi, rg, j, err)
				}
				for _, p := range ps {
					if p.Hdr.field(phCRC) == nil {
						t.Errorf("multi %v rg %d col %d: page at %d has no crc", multi, rg, j, p.Off)
					}
					pages++
				}
				if err := verifyPageCRCs(bytes.NewReader(b), start, c.TotalCompressedSize()); err != nil {
					t.Errorf("multi %v rg %d col %d: %v", multi, rg, j, err)
				}
			}
		}
		pr.Close()
		if pages < 2*5 {
			t.Errorf("multi %v: %d pages checked, want at least one per column chunk", multi, pages)
		}
		_, got, err := readAll(context.Background(), path, ReadOptions{Classes: 5})
		if err != nil || len(got) != 2 || got[0].Len() != 300 || got[1].Len() != 250 {
			t.Fatalf("multi %v: reading the checksummed file back: %v", multi, err)
		}
		want := synth(0, 300, 7, 5, schemas.IDInt64, multi)
		if !reflect.DeepEqual(got[0].Features, want.Features) || !reflect.DeepEqual(got[0].Labels, want.Labels) {
			t.Errorf("multi %v: rows read back differ from those written", multi)
		}
	}
}

// TestThriftRoundTrip: decoding and re-encoding a footer arrow-go wrote gives
// its bytes back, so the rewrite changes only what it means to.
func TestThriftRoundTrip(t *testing.T) {
	b, err := os.ReadFile(writeTestParquet(t, t.TempDir(), true))
	if err != nil {
		t.Fatal(err)
	}
	flen := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	foot := b[len(b)-8-flen : len(b)-8]
	d := tdecoder{b: foot}
	v, err := d.structValue()
	if err != nil || d.pos != len(foot) {
		t.Fatalf("decoding the footer: %v (read %d of %d bytes)", err, d.pos, len(foot))
	}
	e := tencoder{}
	e.structValue(&v)
	if !bytes.Equal(e.b, foot) {
		t.Errorf("re-encoded footer differs from arrow-go's (%d vs %d bytes)", len(e.b), len(foot))
	}
}

// TestPageCRCBitFlips flips single bytes all over a Parquet file: each read
// either fails naming the file or returns exactly the rows written, never
// altered data (before page checksums, 1 flip in 10 went unnoticed).
func TestPageCRCBitFlips(t *testing.T) {
	dir := t.TempDir()
	path := writeTestParquet(t, dir, false)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := readAll(context.Background(), path, ReadOptions{Classes: 5})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	caught, same := 0, 0
	for trial := 0; trial < 300; trial++ {
		b := append([]byte(nil), orig...)
		pos := 4 + rng.IntN(len(b)-12)
		b[pos] ^= byte(1 << rng.IntN(8))
		bad := filepath.Join(dir, "flip.parquet")
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, got, err := readAll(context.Background(), bad, ReadOptions{Classes: 5})
		switch {
		case err != nil:
			caught++
			if !strings.Contains(err.Error(), bad) {
				t.Errorf("flip at byte %d: error does not name the file: %v", pos, err)
			}
		case reflect.DeepEqual(got, want) || rowsEqual(got, want):
			same++ // a flip in bytes that do not reach the data (a statistic, created_by)
		default:
			t.Errorf("flip at byte %d of %d: read succeeded with altered rows", pos, len(b))
		}
	}
	t.Logf("300 single-bit flips: %d refused, %d harmless", caught, same)
	if caught < 200 {
		t.Errorf("only %d of 300 flips refused", caught)
	}
}

func rowsEqual(a, b []*schemas.Rows) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].IDs, b[i].IDs) || !reflect.DeepEqual(a[i].Features, b[i].Features) ||
			!reflect.DeepEqual(a[i].Labels, b[i].Labels) || !reflect.DeepEqual(a[i].LabelOff, b[i].LabelOff) {
			return false
		}
	}
	return true
}

// TestAddPageCRCsRefuses: input the rewrite cannot handle is an error, not a
// broken file.
func TestAddPageCRCsRefuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":     nil,
		"not PAR1":  []byte("PAR2xxxxxxxxPAR1"),
		"footer":    append([]byte("PAR1\x05\x00\x00\x00"), []byte("\x00\x00\x00\x10PAR1")...),
		"truncated": []byte("PAR1\x00\x00PAR1"),
	} {
		if _, err := addPageCRCs(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
