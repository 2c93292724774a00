package shardio

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestDecompressedSizeGuard: a compressed Arrow stream or file reads as its
// uncompressed twin does, and one whose compressed buffer declares far more
// uncompressed bytes than it could hold is refused naming the file and the
// buffer, before arrow-go allocates what it declares.
func TestDecompressedSizeGuard(t *testing.T) {
	rec := rowsRecord(t, 3)
	dir := t.TempDir()
	constantColumns(t, dir)
	for _, stream := range []bool{true, false} {
		for _, codec := range []ipc.Option{ipc.WithZstd(), ipc.WithLZ4()} {
			p := filepath.Join(dir, "c.arrows")
			if !stream {
				p = filepath.Join(dir, "c.arrow")
			}
			writeIPC(t, p, rec, stream, codec)
			shards, err := Scan(context.Background(), p, ReadOptions{})
			if err != nil {
				t.Fatalf("%s: Scan: %v", p, err)
			}
			r, err := ReadUnit(context.Background(), shards[0].Units[0], ReadOptions{Classes: 2})
			if err != nil || r.Len() != 3 || r.Features[5] != 6 {
				t.Fatalf("%s: ReadUnit: %v, %+v", p, err, r)
			}
			// The first compressed buffer's declared size, 16 GiB.
			b, _ := os.ReadFile(p)
			at := firstCompressedBuffer(t, b, stream)
			binary.LittleEndian.PutUint64(b[at:], 1<<34)
			os.WriteFile(p, b, 0o644)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			_, err = Scan(context.Background(), p, ReadOptions{Mem: mem})
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "17179869184 bytes uncompressed") {
				t.Errorf("%s: %v; want an error naming the file and the declared size", p, err)
			}
			if n := mem.CurrentAlloc(); n > 1<<20 {
				t.Errorf("%s: %d bytes allocated", p, n)
			}
		}
	}
}

// firstCompressedBuffer is the file offset of the first non-empty buffer of
// the first record batch of the Arrow stream (or file) b.
func firstCompressedBuffer(t *testing.T, b []byte, stream bool) int {
	return firstBuffer(t, b, stream, headerRecordBatch)
}

// firstBuffer is the file offset of the first non-empty buffer of the first
// message of type typ (a record batch or a dictionary batch's data) of the
// Arrow stream (or file) b.
func firstBuffer(t *testing.T, b []byte, stream bool, want byte) int {
	t.Helper()
	off := 0
	if !stream {
		off = 8 // "ARROW1" and padding
	}
	for {
		metaLen := int(binary.LittleEndian.Uint32(b[off+4:]))
		msg := b[off+8 : off+8+metaLen]
		typ, _, body, err := messageInfo(msg)
		if err != nil {
			t.Fatal(err)
		}
		if typ != want {
			off += 8 + metaLen + int(body)
			continue
		}
		rt, _ := root(msg)
		at, _ := rt.field(2)
		hdr, _ := rt.indirect(at)
		rb := fb{b: msg, pos: hdr}
		if typ == headerDictionary {
			at, _ = rb.field(1)
			hdr, _ = rb.indirect(at)
			rb = fb{b: msg, pos: hdr}
		}
		at, _ = rb.field(2)
		vec, _ := rb.indirect(at)
		n, _ := rb.u32(vec)
		for i := 0; i < int(n); i++ {
			p := vec + 4 + 16*i
			if l := binary.LittleEndian.Uint64(msg[p+8:]); l > 0 {
				return off + 8 + metaLen + int(binary.LittleEndian.Uint64(msg[p:]))
			}
		}
		t.Fatal("no non-empty buffer")
	}
}

// constantColumns: a shard of one class, its labels and features constant,
// compresses near its codec's limit and reads whole, in both codecs and
// formats.
func constantColumns(t *testing.T, dir string) {
	t.Helper()
	const n = 300_000
	sc := rowsRecord(t, 1).Schema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		fl := b.Field(1).(*array.FixedSizeListBuilder)
		fl.Append(true)
		fl.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{0, 0, 0}, nil)
		b.Field(2).(*array.Int32Builder).Append(1)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, stream := range []bool{true, false} {
		for _, codec := range []ipc.Option{ipc.WithZstd(), ipc.WithLZ4()} {
			p := filepath.Join(dir, map[bool]string{true: "constant.arrows", false: "constant.arrow"}[stream])
			writeIPC(t, p, rec, stream, codec)
			shards, err := Scan(context.Background(), p, ReadOptions{})
			if err != nil {
				t.Fatalf("constant columns: Scan: %v", err)
			}
			r, err := ReadUnit(context.Background(), shards[0].Units[0], ReadOptions{Classes: 2})
			if err != nil || r.Len() != n || r.Labels[n-1] != 1 {
				t.Fatalf("constant columns: ReadUnit: %v", err)
			}
		}
	}
}

// writeIPC writes rec as an Arrow IPC stream (or file) at path, with opts
// (a codec) after its schema.
func writeIPC(t *testing.T, path string, rec arrow.RecordBatch, stream bool, opts ...ipc.Option) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts = append([]ipc.Option{ipc.WithSchema(rec.Schema())}, opts...)
	var w interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	if stream {
		w = ipc.NewWriter(f, opts...)
	} else if w, err = ipc.NewFileWriter(f, opts...); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDecompressedDictionary: the bound holds for a compressed dictionary
// batch too (a dictionary-encoded label column), in a stream and a file.
func TestDecompressedDictionary(t *testing.T) {
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)},
		{Name: "label", Type: dt},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range 4 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		fl := b.Field(1).(*array.FixedSizeListBuilder)
		fl.Append(true)
		fl.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(i), 1, 2}, nil)
		if err := b.Field(2).(*array.BinaryDictionaryBuilder).AppendString([]string{"cat", "dog"}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	dir := t.TempDir()
	for _, stream := range []bool{true, false} {
		p := filepath.Join(dir, map[bool]string{true: "d.arrows", false: "d.arrow"}[stream])
		writeIPC(t, p, rec, stream, ipc.WithZstd())
		if _, err := Scan(context.Background(), p, ReadOptions{}); err != nil {
			t.Fatalf("%s: Scan: %v", p, err)
		}
		raw, _ := os.ReadFile(p)
		binary.LittleEndian.PutUint64(raw[firstBuffer(t, raw, stream, headerDictionary):], 1<<34)
		os.WriteFile(p, raw, 0o644)
		_, err := Scan(context.Background(), p, ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "17179869184 bytes uncompressed") {
			t.Errorf("%s: %v; want an error naming the file and the declared size", p, err)
		}
	}
}
