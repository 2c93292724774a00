package shardio

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// A corrupt Arrow stream whose record batch claims far more rows than its
// 1 KB of buffers hold (found by FuzzArrowStream) is read, or refused,
// allocating about what the file holds: the readers once sized the unit's
// features by the claimed count, 11 GB for this file.
func TestCorruptRowCountAllocates(t *testing.T) {
	raw, err := os.ReadFile("testdata/fuzz/FuzzArrowStream/a18ecdcbb455b5d0")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, "[]byte(")
	b, err := strconv.Unquote(s[i+len("[]byte(") : strings.LastIndex(s, ")")])
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fuzzRead(t, []byte(b)) // the fuzz target's read, its checks included
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("reading a %d-byte file allocated %d MB", len(b), got>>20)
	}
}
