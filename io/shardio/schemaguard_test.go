package shardio

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// patchFieldsLength sets the Schema.fields vector length of the schema table
// at t.pos to n, in place.
func patchFieldsLength(t *testing.T, tb fb, n uint32) {
	t.Helper()
	vec, err := vector(tb, 1)
	if err != nil || len(vec) == 0 {
		t.Fatalf("no fields vector: %v", err)
	}
	binary.LittleEndian.PutUint32(tb.b[vec[0]-4:], n)
}

// patchStreamSchema sets the Schema.fields vector length of the schema
// message that starts the Arrow stream b (after its 8-byte prefix) to n, in
// place.
func patchStreamSchema(t *testing.T, b []byte, n uint32) {
	t.Helper()
	metaLen := int(binary.LittleEndian.Uint32(b[4:]))
	msg := b[8 : 8+metaLen]
	rt, _ := root(msg)
	at, _ := rt.field(2)
	s, _ := rt.indirect(at)
	patchFieldsLength(t, fb{b: msg, pos: s}, n)
}

// TestSchemaGuard: an Arrow stream or file whose schema claims a huge field
// vector is refused with an error naming the file, before arrow-go would
// size a slice by it (2^31 fields: hundreds of GiB).
func TestSchemaGuard(t *testing.T) {
	dir := t.TempDir()
	// Stream: the schema is the first message, after the 8-byte prefix.
	b, err := os.ReadFile("testdata/int.arrows")
	if err != nil {
		t.Fatal(err)
	}
	patchStreamSchema(t, b, 1<<31-1)
	stream := filepath.Join(dir, "huge.arrows")
	os.WriteFile(stream, b, 0o644)

	// File: the footer's schema.
	b, err = os.ReadFile("testdata/int.arrow")
	if err != nil {
		t.Fatal(err)
	}
	flen := int(binary.LittleEndian.Uint32(b[len(b)-10:]))
	footer := b[len(b)-10-flen : len(b)-10]
	rt, _ := root(footer)
	at, _ := rt.field(1)
	s, _ := rt.indirect(at)
	patchFieldsLength(t, fb{b: footer, pos: s}, 1<<31-1)
	file := filepath.Join(dir, "huge.arrow")
	os.WriteFile(file, b, 0o644)

	for _, p := range []string{stream, file} {
		_, err := Scan(context.Background(), p, ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "vector") {
			t.Errorf("%s: %v; want an error naming the file and the oversized vector", p, err)
		}
	}
}

// TestStoredSchemaGuard: a Parquet file whose footer keeps an Arrow schema
// ("ARROW:schema") claiming a huge field vector is refused with an error
// naming the file, by Scan, ReadUnit's opener and the dimension probe alike,
// before pqarrow's IPC decoding would size a slice by it.
func TestStoredSchemaGuard(t *testing.T) {
	src := "testdata/str-multi.parquet"
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := file.OpenParquetFile(src, false)
	if err != nil {
		t.Fatal(err)
	}
	v := pr.MetaData().KeyValueMetadata().FindValue("ARROW:schema")
	pr.Close()
	if v == nil {
		t.Fatal("testdata has no stored Arrow schema")
	}
	at := bytes.Index(b, []byte(*v))
	enc := base64.StdEncoding
	if len(*v)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	stored, err := enc.DecodeString(*v)
	if at < 0 || err != nil {
		t.Fatalf("stored schema at %d: %v", at, err)
	}
	if err := storedArrowSchema(pr.MetaData().KeyValueMetadata()); err != nil {
		t.Fatalf("the intact stored schema is refused: %v", err)
	}
	patchStreamSchema(t, stored, 1<<31-1)
	patched := enc.EncodeToString(stored)
	if len(patched) != len(*v) {
		t.Fatalf("re-encoded schema of %d bytes, want %d", len(patched), len(*v))
	}
	copy(b[at:], patched)
	p := filepath.Join(t.TempDir(), "huge.parquet")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Scan(context.Background(), p, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "vector") {
		t.Errorf("Scan: %v; want an error naming the file and the oversized vector", err)
	}
	_, err = ReadUnit(context.Background(), Unit{Path: p, Format: Parquet}, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "vector") {
		t.Errorf("ReadUnit: %v; want an error naming the file and the oversized vector", err)
	}
}
