package shardio

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// ipcBatchRows returns the number of rows of every record batch of an Arrow
// IPC file, reading only the footer and each batch's metadata message, not
// the bodies. arrow-go's ipc.FileReader exposes no row counts short of loading
// each whole batch, which would make Scan read every byte of every shard
// (on gs://, download it) before the pipeline starts; so the few flatbuffer
// fields needed are read here (format/File.fbs, format/Message.fbs).
func ipcBatchRows(r io.ReaderAt, size int64) ([]int64, error) {
	const tail = 4 + 6 // int32 footer length, then "ARROW1"
	if size < int64(len(magicArrow))+2+tail {
		return nil, errors.New("file too small for an Arrow IPC file")
	}
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil {
		return nil, err
	}
	if string(buf[4:]) != string(magicArrow) {
		return nil, errors.New("no ARROW1 magic at the end (truncated?)")
	}
	flen := int64(binary.LittleEndian.Uint32(buf))
	if flen <= 0 || flen > size-tail-8 {
		return nil, fmt.Errorf("footer length %d in a file of %d bytes", flen, size)
	}
	footer := make([]byte, flen)
	if _, err := r.ReadAt(footer, size-tail-flen); err != nil {
		return nil, err
	}
	if err := footerSchema(footer); err != nil {
		return nil, fmt.Errorf("footer schema: %w", err)
	}
	// The dictionary batches' compressed buffers are bounded as the record
	// batches' are (checkDecompressed), before arrow-go reads them.
	dicts, err := footerBlocks(footer, 2)
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	for i, b := range dicts {
		if _, err := blockMessage(r, b, size); err != nil {
			return nil, fmt.Errorf("dictionary batch %d: %w", i, err)
		}
	}
	blocks, err := footerBlocks(footer, 3)
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	rows := make([]int64, len(blocks))
	for i, b := range blocks {
		msg, err := blockMessage(r, b, size)
		if err == nil {
			rows[i], err = messageRows(msg)
		}
		if err != nil {
			return nil, fmt.Errorf("record batch %d: %w", i, err)
		}
	}
	return rows, nil
}

type ipcBlock struct {
	offset  int64
	metaLen int32
}

// blockMessage reads the message of an Arrow file's block (its prefix
// stripped) and checks the compressed buffers of its body
// (checkDecompressed).
func blockMessage(r io.ReaderAt, b ipcBlock, size int64) ([]byte, error) {
	if b.offset < 8 || b.metaLen <= 8 || b.offset+int64(b.metaLen) > size {
		return nil, fmt.Errorf("block at %d+%d outside the file", b.offset, b.metaLen)
	}
	meta := make([]byte, b.metaLen)
	if _, err := r.ReadAt(meta, b.offset); err != nil {
		return nil, err
	}
	metaLen, prefix, ok := messagePrefix(meta)
	if !ok || metaLen > int64(len(meta))-prefix {
		return nil, errCorrupt
	}
	msg := meta[prefix : prefix+metaLen]
	if err := checkDecompressed(r, msg, b.offset+int64(b.metaLen), size); err != nil {
		return nil, err
	}
	return msg, nil
}

// messagePrefix reads the prefix of an encapsulated IPC message: the
// continuation marker and the int32 metadata length (8 bytes), or, before
// Arrow 0.15, the length alone (4 bytes). ok is false where head is too
// short to hold it.
func messagePrefix(head []byte) (metaLen, prefix int64, ok bool) {
	if len(head) < 4 {
		return 0, 0, false
	}
	metaLen, prefix = int64(binary.LittleEndian.Uint32(head)), 4
	if metaLen == 0xffffffff {
		if len(head) < 8 {
			return 0, 0, false
		}
		metaLen, prefix = int64(binary.LittleEndian.Uint32(head[4:])), 8
	}
	return metaLen, prefix, true
}

// fb is a flatbuffer table: bounds-checked field access, since the bytes come
// from a file that may be corrupt.
type fb struct {
	b   []byte
	pos int
}

var errCorrupt = errors.New("corrupt flatbuffer")

func (t fb) u32(at int) (uint32, error) {
	if at < 0 || at+4 > len(t.b) {
		return 0, errCorrupt
	}
	return binary.LittleEndian.Uint32(t.b[at:]), nil
}

func (t fb) u16(at int) (uint16, error) {
	if at < 0 || at+2 > len(t.b) {
		return 0, errCorrupt
	}
	return binary.LittleEndian.Uint16(t.b[at:]), nil
}

func root(b []byte) (fb, error) {
	t := fb{b: b}
	off, err := t.u32(0)
	if err != nil {
		return t, err
	}
	t.pos = int(off)
	return t, nil
}

// field returns the absolute position of field slot's value, or -1 when the
// field is absent (its default applies).
func (t fb) field(slot int) (int, error) {
	soff, err := t.u32(t.pos)
	if err != nil {
		return 0, err
	}
	vt := t.pos - int(int32(soff))
	vtLen, err := t.u16(vt)
	if err != nil {
		return 0, err
	}
	// Present exactly where the flatbuffers runtime arrow-go decodes with
	// reads it: an entry whose offset is below the vtable's stated length,
	// even an odd length that cuts the entry in two (a fuzzed stream with a
	// vtable of 9 bytes had its schema's metadata vector, of 4 billion
	// entries, read by arrow-go and skipped here).
	o := 4 + 2*slot
	if o >= int(vtLen) {
		return -1, nil
	}
	fo, err := t.u16(vt + o)
	if err != nil || fo == 0 {
		return -1, err
	}
	return t.pos + int(fo), nil
}

// indirect follows the uoffset stored at pos.
func (t fb) indirect(pos int) (int, error) {
	off, err := t.u32(pos)
	return pos + int(off), err
}

// footerBlocks reads Footer.recordBatches (slot 3) or Footer.dictionaries
// (slot 2): a vector of Block structs {offset: long, metaDataLength: int,
// (padding), bodyLength: long}.
func footerBlocks(b []byte, slot int) ([]ipcBlock, error) {
	t, err := root(b)
	if err != nil {
		return nil, err
	}
	at, err := t.field(slot)
	if err != nil || at < 0 {
		return nil, err // none
	}
	vec, err := t.indirect(at)
	if err != nil {
		return nil, err
	}
	n, err := t.u32(vec)
	if err != nil {
		return nil, err
	}
	const blockSize = 24
	if int(n) > (len(b)-vec-4)/blockSize {
		return nil, errCorrupt
	}
	blocks := make([]ipcBlock, n)
	for i := range blocks {
		p := vec + 4 + i*blockSize
		blocks[i] = ipcBlock{
			offset:  int64(binary.LittleEndian.Uint64(b[p:])),
			metaLen: int32(binary.LittleEndian.Uint32(b[p+8:])),
		}
	}
	return blocks, nil
}

// messageRows reads RecordBatch.length from a message without its prefix:
// Message {version, header_type, header: RecordBatch {length: long, ...},
// ...}.
func messageRows(msg []byte) (int64, error) {
	typ, rows, _, err := messageInfo(msg)
	if err != nil {
		return 0, err
	}
	if typ != headerRecordBatch {
		return 0, errors.New("message is not a record batch")
	}
	return rows, nil
}

// MessageHeader values (format/Message.fbs).
const (
	headerSchema      = 1
	headerDictionary  = 2
	headerRecordBatch = 3
)

// messageInfo reads a Message flatbuffer (without its prefix): its header
// type, the rows of a record batch (0 for other messages) and the length of
// the body that follows it. Message {version: short, header_type: ubyte,
// header: union, bodyLength: long, custom_metadata}.
func messageInfo(msg []byte) (typ byte, rows, body int64, err error) {
	t, err := root(msg)
	if err != nil {
		return 0, 0, 0, err
	}
	at, err := t.field(1) // header_type
	if err != nil {
		return 0, 0, 0, err
	}
	if at < 0 || at >= len(t.b) {
		return 0, 0, 0, errCorrupt
	}
	typ = t.b[at]
	if at, err = t.field(3); err != nil { // bodyLength
		return 0, 0, 0, err
	}
	if at >= 0 {
		if at+8 > len(t.b) {
			return 0, 0, 0, errCorrupt
		}
		if body = int64(binary.LittleEndian.Uint64(t.b[at:])); body < 0 {
			return 0, 0, 0, fmt.Errorf("body length %d", body)
		}
	}
	if typ != headerRecordBatch {
		return typ, 0, body, nil
	}
	if at, err = t.field(2); err != nil || at < 0 {
		return 0, 0, 0, errCorrupt
	}
	hdr, err := t.indirect(at)
	if err != nil {
		return 0, 0, 0, err
	}
	rb := fb{b: t.b, pos: hdr}
	at, err = rb.field(0) // length
	if err != nil {
		return 0, 0, 0, err
	}
	if at < 0 {
		return typ, 0, body, nil // absent: the default, 0 rows
	}
	if at+8 > len(rb.b) {
		return 0, 0, 0, errCorrupt
	}
	if rows = int64(binary.LittleEndian.Uint64(rb.b[at:])); rows < 0 {
		return 0, 0, 0, fmt.Errorf("length %d", rows)
	}
	return typ, rows, body, nil
}

// streamBatchRows walks the messages of an Arrow IPC stream, reading each
// message's metadata but not its body, and returns the number of rows of
// every record batch. arrow-go's ipc.Reader reports the end-of-stream marker
// and a stream that simply stops between two messages alike (io.EOF), so a
// stream cut at a batch boundary would read as shorter data; here a missing
// marker, a message running past the end of the file and bytes after the
// marker are errors. It costs one small ranged read per message.
func streamBatchRows(r io.ReaderAt, size int64) ([]int64, error) {
	var rows []int64
	buf := make([]byte, 512)
	for off := int64(0); ; {
		if off == size {
			return nil, fmt.Errorf("no end-of-stream marker after %d record batches (truncated?)", len(rows))
		}
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !(err == io.EOF && int64(n) == min(int64(len(buf)), size-off)) {
			return nil, err
		}
		head := buf[:n]
		metaLen, prefix, ok := messagePrefix(head)
		if !ok {
			return nil, fmt.Errorf("ends inside a message prefix at byte %d (truncated?)", off)
		}
		if metaLen == 0 {
			if end := off + prefix; end != size {
				return nil, fmt.Errorf("%d bytes after the end-of-stream marker at byte %d", size-end, off)
			}
			return rows, nil
		}
		if metaLen > size-off-prefix {
			return nil, fmt.Errorf("message at byte %d: %d bytes of metadata run past the end of the file (truncated?)", off, metaLen)
		}
		var meta []byte
		if prefix+metaLen <= int64(len(head)) {
			meta = head[prefix : prefix+metaLen]
		} else {
			meta = make([]byte, metaLen) // bounded by the file size, checked above
			if _, err := r.ReadAt(meta, off+prefix); err != nil {
				return nil, err
			}
		}
		typ, n64, body, err := messageInfo(meta)
		if err != nil {
			return nil, fmt.Errorf("message at byte %d: %w", off, err)
		}
		if off == 0 && typ != headerSchema {
			return nil, errors.New("the stream does not start with a schema")
		}
		if off == 0 {
			if err := schemaMessage(meta); err != nil {
				return nil, fmt.Errorf("schema: %w", err)
			}
		}
		if body > size-off-prefix-metaLen {
			return nil, fmt.Errorf("message at byte %d: a body of %d bytes runs past the end of the file (truncated?)", off, body)
		}
		if err := checkDecompressed(r, meta, off+prefix+metaLen, size); err != nil {
			return nil, fmt.Errorf("message at byte %d: %w", off, err)
		}
		if typ == headerRecordBatch {
			rows = append(rows, n64)
		}
		off += prefix + metaLen + body
	}
}

// checkSchema bounds what arrow-go would allocate decoding the Schema table
// at t.pos (format/Schema.fbs): arrow-go sizes its slices by the vector
// lengths the flatbuffer states (Schema.fields, Field.children, the
// custom_metadata vectors) without checking them against the buffer, so a
// few crafted bytes could ask for gigabytes, and shared sub-tables could make
// a small buffer describe an exponentially large tree. Every vector must fit
// in the buffer, the tree may not nest deeper than maxSchemaDepth, and the
// fields of the expanded tree may not outnumber the buffer's bytes.
func checkSchema(t fb) error {
	budget := len(t.b)
	return checkFields(t, 1, 2, 0, &budget)
}

const maxSchemaDepth = 64

// checkFields checks the table's field vector (slot fieldsSlot: Schema.fields
// or Field.children) and its custom_metadata vector (slot metaSlot), then
// every field, recursively.
func checkFields(t fb, fieldsSlot, metaSlot, depth int, budget *int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("schema nested deeper than %d", maxSchemaDepth)
	}
	if _, err := vector(t, metaSlot); err != nil {
		return err
	}
	fields, err := vector(t, fieldsSlot)
	if err != nil {
		return err
	}
	for _, pos := range fields {
		if *budget--; *budget < 0 {
			return errors.New("schema describes more fields than its bytes can hold")
		}
		f, err := t.indirect(pos)
		if err != nil {
			return err
		}
		// Field {name: 0, nullable: 1, type_type: 2, type: 3, dictionary: 4,
		// children: 5, custom_metadata: 6}.
		if err := checkFields(fb{b: t.b, pos: f}, 5, 6, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}

// vector returns the element positions of the table's vector field slot of
// 4-byte offsets (none when absent), checking that it fits in the buffer.
func vector(t fb, slot int) ([]int, error) {
	at, err := t.field(slot)
	if err != nil || at < 0 {
		return nil, err
	}
	vec, err := t.indirect(at)
	if err != nil {
		return nil, err
	}
	n, err := t.u32(vec)
	if err != nil {
		return nil, err
	}
	if int64(n) > int64(len(t.b)-vec-4)/4 {
		return nil, fmt.Errorf("%w: a vector of %d entries in %d bytes", errCorrupt, n, len(t.b))
	}
	pos := make([]int, n)
	for i := range pos {
		pos[i] = vec + 4 + 4*i
	}
	return pos, nil
}

// schemaMessage checks the Schema of a stream's first message.
func schemaMessage(msg []byte) error {
	t, err := root(msg)
	if err != nil {
		return err
	}
	at, err := t.field(2) // header
	if err != nil || at < 0 {
		return errCorrupt
	}
	s, err := t.indirect(at)
	if err != nil {
		return err
	}
	return checkSchema(fb{b: msg, pos: s})
}

// footerSchema checks the Schema of an Arrow file's footer (Footer {version:
// 0, schema: 1, dictionaries: 2, recordBatches: 3}).
func footerSchema(footer []byte) error {
	t, err := root(footer)
	if err != nil {
		return err
	}
	at, err := t.field(1)
	if err != nil || at < 0 {
		return errCorrupt
	}
	s, err := t.indirect(at)
	if err != nil {
		return err
	}
	return checkSchema(fb{b: footer, pos: s})
}

// storedArrowSchema checks the Arrow schema a Parquet writer may keep in its
// footer's key-value metadata ("ARROW:schema": base64 of an IPC stream whose
// first message is the schema), which pqarrow decodes through arrow-go's IPC
// reader whenever it opens the file: unchecked, a few crafted bytes there
// ask for gigabytes as an Arrow stream's schema can (checkSchema). It is
// decoded as pqarrow decodes it (getOriginSchema: padded base64 where the
// length allows, else unpadded); a value pqarrow cannot decode either is
// left for pqarrow to refuse.
func storedArrowSchema(kv metadata.KeyValueMetadata) error {
	v := kv.FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	var b []byte
	var err error
	if len(*v)%4 == 0 {
		b, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(b) == 0 || err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return nil
		}
	}
	metaLen, prefix, ok := messagePrefix(b)
	if !ok {
		return fmt.Errorf("%w: a stored Arrow schema of %d bytes", errCorrupt, len(b))
	}
	if metaLen == 0 || metaLen > int64(len(b))-prefix {
		return fmt.Errorf("%w: a stored Arrow schema's message of %d bytes in %d", errCorrupt, metaLen, int64(len(b))-prefix)
	}
	meta := b[prefix : prefix+metaLen]
	typ, _, body, err := messageInfo(meta)
	if err != nil {
		return err
	}
	if typ != headerSchema {
		return fmt.Errorf("%w: the stored Arrow schema's message is not a schema", errCorrupt)
	}
	// arrow-go allocates the body the message states before reading it.
	if body > int64(len(b))-prefix-metaLen {
		return fmt.Errorf("%w: the stored Arrow schema's message states a body of %d bytes, %d follow", errCorrupt, body, int64(len(b))-prefix-metaLen)
	}
	return schemaMessage(meta)
}

// maxExpansion is the most bytes one compressed byte of an Arrow IPC body
// buffer can stand for, per codec (BodyCompression.codec: 0 LZ4 frame, 1
// zstd): a buffer declares its uncompressed size in the int64 that starts
// it, and arrow-go allocates that much before decompressing, so a 1 KB
// stream could ask for 16 GiB. No valid buffer goes beyond its codec's
// format limit: LZ4 encodes a run in at least one byte per 255, zstd's
// densest block (one byte repeated, an RLE block) is 4 bytes for 128 KiB.
// Those limits, not a guess at how well data compresses: a shard of one
// class has a constant label column, which zstd does compress near its
// limit. (Arrow's own readers trust the prefix; ClickHouse checks it
// against the codec frame's optional content size, which pyarrow's LZ4
// frames omit, and which a forger sets as easily.)
var maxExpansion = [2]int64{256, 1 << 15}

// minExpansionCap is what any compressed buffer may declare, whatever its
// size: the frames' own headers.
const minExpansionCap = 1 << 16

// checkDecompressed checks the declared uncompressed size of every buffer of
// a compressed record batch or dictionary batch (msg, without its prefix;
// its body at bodyOff in a file of size bytes) against maxExpansion,
// reading the 8 bytes that start each buffer. Uncompressed batches, and
// other messages, pass.
func checkDecompressed(r io.ReaderAt, msg []byte, bodyOff, size int64) error {
	t, err := root(msg)
	if err != nil {
		return err
	}
	at, err := t.field(1) // header_type
	if err != nil || at < 0 || at >= len(msg) {
		return err
	}
	typ := msg[at]
	if typ != headerRecordBatch && typ != headerDictionary {
		return nil
	}
	if at, err = t.field(2); err != nil || at < 0 {
		return errCorrupt
	}
	hdr, err := t.indirect(at)
	if err != nil {
		return err
	}
	rb := fb{b: msg, pos: hdr}
	if typ == headerDictionary { // DictionaryBatch {id: 0, data: 1, isDelta: 2}
		if at, err = rb.field(1); err != nil || at < 0 {
			return err
		}
		if hdr, err = rb.indirect(at); err != nil {
			return err
		}
		rb = fb{b: msg, pos: hdr}
	}
	// RecordBatch {length: 0, nodes: 1, buffers: 2, compression: 3}.
	if at, err = rb.field(3); err != nil || at < 0 {
		return err // not compressed
	}
	bc, err := rb.indirect(at)
	if err != nil {
		return err
	}
	codec := 0 // BodyCompression {codec: 0 (default LZ4_FRAME), method: 1}
	if at, err = (fb{b: msg, pos: bc}).field(0); err != nil {
		return err
	}
	if at >= 0 {
		if at >= len(msg) || msg[at] > 1 {
			return errCorrupt // arrow-go knows no other codec
		}
		codec = int(msg[at])
	}
	if at, err = rb.field(2); err != nil || at < 0 {
		return err
	}
	vec, err := rb.indirect(at)
	if err != nil {
		return err
	}
	n, err := rb.u32(vec)
	if err != nil {
		return err
	}
	const bufferSize = 16 // Buffer {offset: long, length: long}
	if int64(n) > int64(len(msg)-vec-4)/bufferSize {
		return errCorrupt
	}
	var head [8]byte
	for i := 0; i < int(n); i++ {
		p := vec + 4 + i*bufferSize
		bo, bl := int64(binary.LittleEndian.Uint64(msg[p:])), int64(binary.LittleEndian.Uint64(msg[p+8:]))
		if bl == 0 {
			continue
		}
		if bo < 0 || bl < 8 || bo > size-bodyOff || bl > size-bodyOff-bo {
			return fmt.Errorf("compressed buffer %d at %d+%d outside the file", i, bo, bl)
		}
		if _, err := r.ReadAt(head[:], bodyOff+bo); err != nil {
			return err
		}
		u := int64(binary.LittleEndian.Uint64(head[:]))
		if u == -1 {
			continue // stored uncompressed
		}
		if u < 0 || u > max(minExpansionCap, maxExpansion[codec]*(bl-8)) {
			return fmt.Errorf("compressed buffer %d declares %d bytes uncompressed from %d compressed, more than its codec's %d times", i, u, bl-8, maxExpansion[codec])
		}
	}
	return nil
}
