package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSynthCmd: relabel synth writes the shards and truth.i32 it says, the
// same bytes for the same flags, and rejects bad usage with status 2.
func TestSynthCmd(t *testing.T) {
	read := func(dir string) map[string][]byte {
		t.Helper()
		out := map[string][]byte{}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = b
		}
		return out
	}
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := dispatch(context.Background(), []string{"synth", "--rows", "3000", "--d", "16", "--classes", "5",
			"--shards", "3", "--batch-rows", "500", "--seed", "4", "--output", dir}, &stdout, &stderr)
		if code != 0 || !strings.Contains(stdout.String(), "wrote 3000 rows") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
		}
		dirs = append(dirs, dir)
	}
	a, b := read(dirs[0]), read(dirs[1])
	if len(a) != 4 || len(a["truth.i32"]) != 4*3000 {
		t.Errorf("files %d, truth.i32 %d bytes; want 3 shards and 12000 bytes", len(a), len(a["truth.i32"]))
	}
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			t.Errorf("%s differs between two runs with the same flags", name)
		}
	}
	for _, args := range [][]string{
		{"synth"},
		{"synth", "--output", t.TempDir(), "--classes", "1"},
		{"synth", "--output", t.TempDir(), "--format", "csv"},
		{"synth", "--output", t.TempDir(), "extra"},
		{"synth", "--output", t.TempDir(), "--separation", "-1"},
		{"synth", "--output", t.TempDir(), "--jitter", "NaN"},
		{"synth", "--output", t.TempDir(), "--jitter", "+Inf"},
	} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
}

// TestSynthDifficulty: --separation and --jitter reach the generator (other
// bytes than the defaults'), and their defaults given explicitly change
// nothing.
func TestSynthDifficulty(t *testing.T) {
	write := func(extra ...string) []byte {
		t.Helper()
		dir := t.TempDir()
		args := append([]string{"synth", "--rows", "200", "--d", "8", "--classes", "3", "--output", dir}, extra...)
		var stdout, stderr bytes.Buffer
		if code := dispatch(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("%q: exit %d, stderr %q", args, code, stderr.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, "part-00000.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	def := write()
	if !bytes.Equal(def, write("--separation", "0.25", "--jitter", "0.6")) {
		t.Error("--separation 0.25 --jitter 0.6 (the defaults) wrote other bytes than no flags")
	}
	for _, f := range [][]string{{"--separation", "0.15"}, {"--jitter", "1.5"}} {
		if bytes.Equal(def, write(f...)) {
			t.Errorf("%v wrote the defaults' bytes", f)
		}
	}
}
