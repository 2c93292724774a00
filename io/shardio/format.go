package shardio

import (
	"bytes"
	"fmt"
	"strconv"
)

// Format is a shard's file format.
type Format uint8

const (
	// Parquet: one unit per row group.
	Parquet Format = iota + 1
	// ArrowFile is the Arrow IPC file format (Feather v2): one unit per
	// record batch.
	ArrowFile
	// ArrowStream is the Arrow IPC stream format, which has no footer to seek
	// by: the whole file is one unit.
	ArrowStream
)

func (f Format) String() string {
	switch f {
	case Parquet:
		return "parquet"
	case ArrowFile:
		return "arrow"
	case ArrowStream:
		return "arrow-stream"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// Ext is the file name extension of outputs in format f.
func (f Format) Ext() string {
	if f == Parquet {
		return ".parquet"
	}
	return ".arrow"
}

// ParseFormat reads a format as String writes it (the --format flag).
func ParseFormat(s string) (Format, error) {
	for _, f := range []Format{Parquet, ArrowFile, ArrowStream} {
		if s == f.String() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("shardio: format %q, want parquet, arrow or arrow-stream", s)
}

var (
	magicParquet = []byte("PAR1")
	magicArrow   = []byte("ARROW1")
	// An IPC stream starts with a message: the continuation marker, then its
	// length (pre-1.0 writers left the marker out; those are not accepted).
	magicStream = []byte{0xff, 0xff, 0xff, 0xff}
)

// detect tells the format from a file's first bytes, never from its name:
// shards are often named part-0000 with no extension, or .feather, or .ipc.
func detect(head []byte) (Format, error) {
	switch {
	case len(head) == 0:
		return 0, fmt.Errorf("empty file (0 bytes)")
	case bytes.HasPrefix(head, magicParquet):
		return Parquet, nil
	case bytes.HasPrefix(head, magicArrow):
		return ArrowFile, nil
	case bytes.HasPrefix(head, magicStream):
		return ArrowStream, nil
	}
	return 0, fmt.Errorf("not Parquet (PAR1) nor Arrow IPC (ARROW1 or a stream): starts with % x", head[:min(len(head), 8)])
}
