// Package pins reads and writes the files of sha256 sums that pin
// relabel's outputs in tests (cmd/relabel's golden outputs, pipelines' lake
// rows): one "SUM KEY" line per pinned thing, keys sorted, so that a
// refactor that must keep the bytes can prove it and an intended change
// shows as a reviewable diff.
package pins

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// Sum is b's sha256, in hex.
func Sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// Read reads a pin file: sum by key.
func Read(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		h, k, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		m[k] = h
	}
	return m, sc.Err()
}

// Write writes m as a pin file, keys sorted.
func Write(path string, m map[string]string) error {
	var buf bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&buf, "%s %s\n", m[k], k)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Diff lists, sorted by key, how got differs from want: a key pinned with
// another sum, a key not pinned, a key pinned but not computed.
func Diff(got, want map[string]string) []string {
	keys := slices.Sorted(maps.Keys(got))
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		g, inGot := got[k]
		w, inWant := want[k]
		switch {
		case !inWant:
			out = append(out, fmt.Sprintf("%s: not pinned (rerun with the update flag if the new output is intended)", k))
		case !inGot:
			out = append(out, fmt.Sprintf("%s: pinned, but not computed", k))
		case g != w:
			out = append(out, fmt.Sprintf("%s: sha256 %s, pinned %s", k, g, w))
		}
	}
	return out
}

// Check compares got with the pin file at path, an error per difference
// (Diff); with update it writes got there instead.
func Check(t testing.TB, path string, got map[string]string, update bool) {
	t.Helper()
	if update {
		if err := Write(path, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Diff(got, want) {
		t.Error(d)
	}
}
