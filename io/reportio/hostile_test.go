package reportio

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/relabel/relabel/io/shardio"
)

// TestSaveReplacesNothingItDidNotWrite: --out naming an
// existing file (an output shard, an input, any file) is refused and the
// file kept, unless Overwrite; the default DIR/report.html is replaced only
// when it is an earlier report; a directory is refused naming it.
func TestSaveReplacesNothingItDidNotWrite(t *testing.T) {
	ctx := context.Background()
	f := randomFixture(5, 2, 50, []shardio.Format{shardio.ArrowFile}, nil, false, false)
	dir := t.TempDir()
	f.write(t, dir, nil)
	shards, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	if len(shards) == 0 {
		t.Fatal("fixture wrote no shard")
	}
	shard := shards[0]
	before, _ := os.ReadFile(shard)

	// --out an output shard: refused, the shard unchanged.
	if _, err := Write(ctx, dir, Options{Out: shard}); !errors.Is(err, ErrExists) {
		t.Errorf("Write over the output shard: err = %v, want ErrExists", err)
	}
	if after, _ := os.ReadFile(shard); !bytes.Equal(before, after) {
		t.Error("the output shard was changed")
	}
	// A user's file at the default place: refused too.
	def := filepath.Join(dir, FileName)
	if err := os.WriteFile(def, []byte("my notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, dir, Options{}); !errors.Is(err, ErrExists) {
		t.Errorf("Write over a user's report.html: err = %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(def); string(b) != "my notes" {
		t.Errorf("the user's report.html was replaced: %.40q", b)
	}
	// Overwrite replaces it; then an earlier report there is replaced
	// without being told.
	if _, err := Write(ctx, dir, Options{Overwrite: true}); err != nil {
		t.Fatalf("Write with Overwrite: %v", err)
	}
	if b, _ := os.ReadFile(def); !bytes.Contains(b, []byte(reportMark)) {
		t.Error("Overwrite did not write the report")
	}
	if _, err := Write(ctx, dir, Options{}); err != nil {
		t.Errorf("Write over an earlier report at the default place: %v", err)
	}
	// A new --out is created; written again, it is refused (it was not
	// written by this call).
	out := filepath.Join(t.TempDir(), "page.html")
	if _, err := Write(ctx, dir, Options{Out: out}); err != nil {
		t.Fatalf("Write to a new --out: %v", err)
	}
	if _, err := Write(ctx, dir, Options{Out: out}); !errors.Is(err, ErrExists) {
		t.Errorf("Write to an existing --out: err = %v, want ErrExists", err)
	}
	// A directory: refused, naming it and what to give instead.
	d := t.TempDir()
	_, err := Write(ctx, dir, Options{Out: d, Overwrite: true})
	if err == nil || !strings.Contains(err.Error(), "is a directory") || strings.Contains(err.Error(), "rename") {
		t.Errorf("Write to a directory: err = %v, want one saying it is a directory", err)
	}
	if left, _ := os.ReadDir(d); len(left) != 0 {
		t.Errorf("Write to a directory left %d files in it", len(left))
	}
}

// TestTextSafe (target 3): class names and ids that carry escape sequences
// (clear screen, recolour, window title) and newlines reach the terminal
// report escaped, each table row on one line.
func TestTextSafe(t *testing.T) {
	names := []string{"a\x1b[2J\x1b[H", "b\x1b]0;owned\x07", "c\nd", "e\x1b[31m"}
	f := randomFixture(3, 4, 80, []shardio.Format{shardio.Parquet}, names, true, false)
	for s := range f.shards {
		for i := range f.shards[s] {
			f.shards[s][i].sid = "id\x1b[2J\n" + f.shards[s][i].sid
		}
	}
	dir := t.TempDir()
	f.write(t, dir, nil)
	r, err := Build(context.Background(), dir, Options{Top: 20})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Text(&b, 5); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("the text report holds a raw escape:\n%q", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "d") || strings.HasPrefix(l, "[2J") {
			t.Errorf("a name's or an id's newline broke a table row: %q", l)
		}
	}
	if !strings.Contains(out, `c\nd`) {
		t.Errorf("class name c\\nd not shown escaped:\n%s", out)
	}
}

// TestClassTableBounded (target 2): a run over more classes than
// MaxClassRows lists MaxClassRows of them (those with the most given
// labels) and says so, so the page stays small.
func TestClassTableBounded(t *testing.T) {
	r := &Report{}
	for k := range MaxClassRows + 500 {
		r.Classes = append(r.Classes, ClassRow{Class: k, Given: int64(k % 7)})
	}
	rows, note := r.classTable()
	if len(rows) != MaxClassRows {
		t.Fatalf("classTable lists %d classes, want %d", len(rows), MaxClassRows)
	}
	for i, c := range rows {
		if c.Given < 2 {
			t.Errorf("row %d: class %d with %d given labels listed over classes with more", i, c.Class, c.Given)
			break
		}
		if i > 0 && rows[i-1].Class >= c.Class {
			t.Errorf("rows out of class order at %d", i)
			break
		}
	}
	if !strings.Contains(note, "are not") {
		t.Errorf("note %q does not say classes are left out", note)
	}
	small := &Report{Classes: r.Classes[:10]}
	if rows, note := small.classTable(); len(rows) != 10 || note != "" {
		t.Errorf("10 classes: %d rows, note %q; want all, no note", len(rows), note)
	}
}

// TestPageUTF8 (target 4): the page of an output whose class names hold
// control characters and whose ids are not UTF-8 (an output edited by hand:
// relabel run refuses such input) is valid UTF-8: the ids' invalid bytes
// are shown as U+FFFD.
func TestPageUTF8(t *testing.T) {
	names := []string{"x\x1b[2J", "y\u202e", "z"}
	f := randomFixture(4, 3, 40, []shardio.Format{shardio.Parquet}, names, true, false)
	for s := range f.shards {
		for i := range f.shards[s] {
			f.shards[s][i].sid += "\xff\xfe"
		}
	}
	dir := t.TempDir()
	f.write(t, dir, nil)
	r, err := Build(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Render(&b); err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(b.Bytes()) {
		t.Error("report.html is not valid UTF-8")
	}
}
