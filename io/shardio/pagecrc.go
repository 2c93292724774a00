package shardio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
)

// Parquet page checksums. The format gives every page header an optional
// crc: the CRC-32 (the IEEE polynomial, as zlib's) of the page's bytes as
// stored, after its header. arrow-go v18.8.0 neither writes nor checks it
// (its page writer leaves PageHeader.Crc unset, its reader ignores it), so
// relabel adds the checksums to every Parquet file it writes (addPageCRCs,
// a rewrite of the finished file: each header gains its crc field and the
// footer's offsets move by the bytes added) and checks them on read
// (verifyPageCRCs) wherever a writer put them (parquet-mr writes them by
// default; pyarrow with write_page_checksum=True). A flipped bit in a page is
// then a read error naming the file, not altered features.

// parquet.thrift field ids used here.
const (
	// PageHeader
	phCompressedSize = 3
	phCRC            = 4
	// FileMetaData
	fmRowGroups = 4
	// RowGroup
	rgColumns       = 1
	rgTotalByteSize = 2
	rgFileOffset    = 5
	rgTotalCompSize = 6
	// ColumnChunk
	ccFilePath          = 1
	ccFileOffset        = 2
	ccMetaData          = 3
	ccOffsetIndexOffset = 4
	ccColumnIndexOffset = 6
	ccCryptoMetadata    = 8
	ccEncryptedMeta     = 9
	// ColumnMetaData
	cmTotalUncompSize = 6
	cmTotalCompSize   = 7
	cmDataPageOffset  = 9
	cmIndexPageOffset = 10
	cmDictPageOffset  = 11
	cmBloomOffset     = 14
)

// maxPageHeader bounds a page header (arrow-go's own default limit is 16 MiB;
// relabel's pages carry no statistics of that size).
const maxPageHeader = 16 << 20

// page is one page of a column chunk: header at Off, HdrLen bytes, then
// DataLen bytes of page data.
type page struct {
	Off     int64
	HdrLen  int
	DataLen int
	Hdr     tvalue
}

// walkPages decodes the headers of the pages that fill chunk (the chunk's
// bytes, which start at file offset start).
func walkPages(chunk []byte, start int64) ([]page, error) {
	var pages []page
	for pos := 0; pos < len(chunk); {
		d := tdecoder{b: chunk[pos:min(len(chunk), pos+maxPageHeader)]}
		hdr, err := d.structValue()
		if err != nil {
			return nil, fmt.Errorf("page header at %d: %w", start+int64(pos), err)
		}
		cs := hdr.field(phCompressedSize)
		if cs == nil || cs.Int < 0 || cs.Int > int64(len(chunk)-pos-d.pos) {
			return nil, fmt.Errorf("page at %d: compressed size outside its column chunk", start+int64(pos))
		}
		pages = append(pages, page{Off: start + int64(pos), HdrLen: d.pos, DataLen: int(cs.Int), Hdr: hdr})
		pos += d.pos + int(cs.Int)
	}
	return pages, nil
}

// chunkRange is where a column chunk's pages lie: from its dictionary page
// (when it has one) or first data page, TotalCompressedSize bytes.
func chunkRange(meta *tvalue) (start, size int64, err error) {
	data, comp := meta.field(cmDataPageOffset), meta.field(cmTotalCompSize)
	if data == nil || comp == nil {
		return 0, 0, fmt.Errorf("column chunk without data page offset or size")
	}
	start = data.Int
	// A chunk of 0 rows has a dictionary page and no data page (offset 0).
	if dict := meta.field(cmDictPageOffset); dict != nil && dict.Int > 0 && (dict.Int < start || start == 0) {
		start = dict.Int
	}
	return start, comp.Int, nil
}

// verifyPageCRCs checks the crc of every page of the column chunk at
// [start, start+size) of r that has one.
func verifyPageCRCs(r io.ReaderAt, start, size int64) error {
	chunk := make([]byte, size)
	if _, err := r.ReadAt(chunk, start); err != nil {
		return fmt.Errorf("reading the column chunk at %d: %w", start, err)
	}
	pages, err := walkPages(chunk, start)
	if err != nil {
		return err
	}
	for _, p := range pages {
		crc := p.Hdr.field(phCRC)
		if crc == nil {
			continue
		}
		at := int(p.Off-start) + p.HdrLen
		if got := int32(crc32.ChecksumIEEE(chunk[at : at+p.DataLen])); got != int32(crc.Int) {
			return fmt.Errorf("page at byte %d: checksum mismatch (stored %08x, computed %08x): the file is corrupt", p.Off, uint32(crc.Int), uint32(got))
		}
	}
	return nil
}

// addPageCRCs returns the Parquet file f with every page header carrying its
// page's crc, and the footer's offsets and sizes moved accordingly. Files
// with page indexes, external column chunks or encryption are refused (relabel
// writes none of them).
func addPageCRCs(f []byte) ([]byte, error) {
	if len(f) < 12 || !bytes.Equal(f[:4], magicParquet) || !bytes.Equal(f[len(f)-4:], magicParquet) {
		return nil, fmt.Errorf("pagecrc: not a plain Parquet file")
	}
	flen := int(binary.LittleEndian.Uint32(f[len(f)-8:]))
	if flen > len(f)-12 {
		return nil, fmt.Errorf("pagecrc: footer length %d", flen)
	}
	footEnd := len(f) - 8
	d := tdecoder{b: f[footEnd-flen : footEnd]}
	meta, err := d.structValue()
	if err != nil {
		return nil, fmt.Errorf("pagecrc: footer: %w", err)
	}
	type chunkRef struct {
		start, size int64
		cc          *tvalue
	}
	var chunks []chunkRef
	empty := map[*tvalue]bool{}
	rgs := meta.field(fmRowGroups)
	if rgs != nil {
		for i := range rgs.Elems {
			cols := rgs.Elems[i].field(rgColumns)
			if cols == nil {
				continue
			}
			for j := range cols.Elems {
				cc := &cols.Elems[j]
				for _, id := range []int16{ccFilePath, ccOffsetIndexOffset, ccColumnIndexOffset, ccCryptoMetadata, ccEncryptedMeta} {
					if cc.field(id) != nil {
						return nil, fmt.Errorf("pagecrc: column chunk field %d (page index, external file or encryption) not supported", id)
					}
				}
				cm := cc.field(ccMetaData)
				if cm == nil {
					return nil, fmt.Errorf("pagecrc: column chunk without metadata")
				}
				start, size, err := chunkRange(cm)
				if err != nil {
					return nil, fmt.Errorf("pagecrc: %w", err)
				}
				if size == 0 {
					empty[cc] = true // a 0-row file's chunks: no pages, nothing to move
					continue
				}
				chunks = append(chunks, chunkRef{start, size, cc})
			}
		}
	}
	sort.Slice(chunks, func(a, b int) bool { return chunks[a].start < chunks[b].start })
	dataEnd := int64(4)
	for _, c := range chunks {
		if c.start != dataEnd || c.size < 0 || c.start+c.size > int64(footEnd-flen) {
			return nil, fmt.Errorf("pagecrc: column chunks are not contiguous at %d", c.start)
		}
		dataEnd += c.size
	}

	out := make([]byte, 0, len(f)+len(chunks)*16)
	out = append(out, magicParquet...)
	moved := map[int64]int64{} // a page's old offset -> its new one
	growth := map[*tvalue]int64{}
	for _, c := range chunks {
		pages, err := walkPages(f[c.start:c.start+c.size], c.start)
		if err != nil {
			return nil, fmt.Errorf("pagecrc: %w", err)
		}
		before := int64(len(out))
		for _, p := range pages {
			moved[p.Off] = int64(len(out))
			data := f[p.Off+int64(p.HdrLen) : p.Off+int64(p.HdrLen)+int64(p.DataLen)]
			p.Hdr.setField(phCRC, tvalue{Type: tI32, Int: int64(int32(crc32.ChecksumIEEE(data)))})
			e := tencoder{b: out}
			e.structValue(&p.Hdr)
			out = append(e.b, data...)
		}
		growth[c.cc] = int64(len(out)) - before - c.size
	}
	shift := int64(len(out)) - dataEnd
	out = append(out, f[dataEnd:footEnd-flen]...) // whatever lies between data and footer
	move := func(v *tvalue) error {
		if v == nil || v.Int == 0 {
			return nil // absent, or no such page (a 0-row chunk's data page)
		}
		if n, ok := moved[v.Int]; ok {
			v.Int = n
			return nil
		}
		if v.Int >= dataEnd {
			v.Int += shift
			return nil
		}
		return fmt.Errorf("pagecrc: offset %d is not a page's", v.Int)
	}
	if rgs != nil {
		for i := range rgs.Elems {
			rg := &rgs.Elems[i]
			var grown int64
			if cols := rg.field(rgColumns); cols != nil {
				for j := range cols.Elems {
					cc := &cols.Elems[j]
					if empty[cc] {
						continue
					}
					g := growth[cc]
					grown += g
					cm := cc.field(ccMetaData)
					for _, id := range []int16{cmDataPageOffset, cmIndexPageOffset, cmDictPageOffset, cmBloomOffset} {
						if err := move(cm.field(id)); err != nil {
							return nil, err
						}
					}
					for _, id := range []int16{cmTotalUncompSize, cmTotalCompSize} {
						if v := cm.field(id); v != nil {
							v.Int += g
						}
					}
					if err := move(cc.field(ccFileOffset)); err != nil {
						return nil, err
					}
				}
			}
			if err := move(rg.field(rgFileOffset)); err != nil {
				return nil, err
			}
			for _, id := range []int16{rgTotalByteSize, rgTotalCompSize} {
				if v := rg.field(id); v != nil {
					v.Int += grown
				}
			}
		}
	}
	footStart := len(out)
	e := tencoder{b: out}
	e.structValue(&meta)
	out = binary.LittleEndian.AppendUint32(e.b, uint32(len(e.b)-footStart))
	return append(out, magicParquet...), nil
}
