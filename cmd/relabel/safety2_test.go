package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relabel/relabel/io/icebergio/catalogname"
	"github.com/relabel/relabel/schemas"
)

// TestNoiseOutputIsInput: relabel noise refuses, with exit 2 naming the
// flag, an --output or --truth-output that is its input however spelled
// (the same path, "..", a symbolic link, a hard link, a file:// URI), or
// that names the other output's file, even with --overwrite; the input
// stays as it was.
func TestNoiseOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "clean.parquet")
	writeRows(t, in, schemas.LabelInt32, nil, synthRows(0, 60))
	before, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link.parquet")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.parquet")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "noisy.parquet")
	for _, tc := range []struct {
		name  string
		input string
		extra []string
		flag  string
	}{
		{"same path", in, []string{"--output", in}, "--output"},
		{"dot-dot", in, []string{"--output", filepath.Join(sub, "..", "clean.parquet")}, "--output"},
		{"symlink", in, []string{"--output", link}, "--output"},
		{"input through a symlink", link, []string{"--output", in}, "--output"},
		{"hard link", in, []string{"--output", hard}, "--output"},
		{"file uri", in, []string{"--output", "file://" + in}, "--output"},
		{"glob", filepath.Join(dir, "*.parquet"), []string{"--output", in}, "--output"},
		{"truth output", in, []string{"--output", other, "--truth-output", link}, "--truth-output"},
		{"both outputs one file", in, []string{"--output", other, "--truth-output", other}, "--truth-output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"noise", "--input", tc.input, "--kind", "sym", "--rate", "0.3", "--overwrite"}, tc.extra...)
			r := relabel(t, args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.flag) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s", r.code, tail(r.stderr, 300), tc.flag)
			}
			if after, err := os.ReadFile(in); err != nil || !bytes.Equal(before, after) {
				t.Fatalf("the input was changed (%v)", err)
			}
			if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the link was replaced (%v)", err)
			}
		})
	}
	// The check does not refuse what it should not: a new file beside the input.
	r := relabel(t, "noise", "--input", in, "--kind", "sym", "--rate", "0.3", "--output", filepath.Join(dir, "noisy.parquet"))
	if r.code != 0 {
		t.Errorf("a new output beside the input: exit %d, stderr %q", r.code, tail(r.stderr, 300))
	}
}

// TestNoiseOverwriteNonRegular: --overwrite replaces regular files only: an
// output that is a symbolic link (to a file that is not the input) or a
// FIFO is refused with exit 2, and left as it was.
func TestNoiseOverwriteNonRegular(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "clean.parquet")
	writeRows(t, in, schemas.LabelInt32, nil, synthRows(0, 60))
	target := filepath.Join(dir, "target.txt")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.parquet")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{link, fifo} {
		r := relabel(t, "noise", "--input", in, "--kind", "sym", "--rate", "0.3", "--output", out, "--overwrite")
		if r.code != 2 || !strings.Contains(r.stderr, "--output") || !strings.Contains(r.stderr, "regular") {
			t.Errorf("--output %s: exit %d, stderr %q; want 2 naming --output", out, r.code, tail(r.stderr, 300))
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced (%v)", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Errorf("the link's target now holds %q", b)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced (%v)", err)
	}
}

// digitsOutput is the digits run's output directory the report tests share.
func digitsOutput(t *testing.T) string {
	t.Helper()
	dir := outDir(t, "testdata-digits")
	sharedRun(t, "run", "--input", digitsShards, "--output", dir)
	return dir
}

// TestReportOutStreams: --out - and --out /dev/stdout write the page to
// standard output (nothing else there); a FIFO is written into, even with
// --overwrite, and stays a FIFO.
func TestReportOutStreams(t *testing.T) {
	dir := digitsOutput(t)
	for _, out := range []string{"-", "/dev/stdout"} {
		for _, extra := range [][]string{nil, {"--overwrite"}} {
			r := relabel(t, append([]string{"report", dir, "--out", out}, extra...)...)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "<!DOCTYPE html>") || !strings.Contains(r.stdout, "<title>relabel report:") || strings.Contains(r.stdout, "relabel report: wrote") {
				t.Errorf("--out %s %v: exit %d, stdout %q..., stderr %q; want the page alone", out, extra, r.code, tail(r.stdout[:min(len(r.stdout), 200)], 200), tail(r.stderr, 300))
			}
		}
	}

	fifo := filepath.Join(t.TempDir(), "page.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- b
	}()
	var stdout, stderr bytes.Buffer
	if err := reportCmd(context.Background(), []string{dir, "--out", fifo, "--overwrite"}, &stdout, &stderr); err != nil {
		t.Fatalf("--out FIFO: %v", err)
	}
	select {
	case b := <-got:
		if !strings.Contains(string(b), "<title>relabel report:") {
			t.Errorf("the FIFO's reader got %d bytes without the page's title", len(b))
		}
	case <-time.After(time.Minute):
		t.Fatal("the FIFO's reader got nothing")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced (%v)", err)
	}
}

// TestReportOutRefused: --out never replaces a symbolic link (exit 2, link
// and target kept, --overwrite or not), nor, with --overwrite, a file of
// the output directory the report reads.
func TestReportOutRefused(t *testing.T) {
	dir := digitsOutput(t)
	tmp := t.TempDir()
	target := filepath.Join(tmp, "mine.html")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link.html")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--overwrite"}} {
		var stdout, stderr bytes.Buffer
		err := reportCmd(context.Background(), append([]string{dir, "--out", link}, extra...), &stdout, &stderr)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("--out LINK %v: %v, want a usage error (exit 2) saying it is a link", extra, err)
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced (%v)", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Errorf("the link's target now holds %q", b)
	}
	summary := filepath.Join(dir, "summary.json")
	before, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{summary, filepath.Join(dir, ".", "summary.json")} {
		var stdout, stderr bytes.Buffer
		if err := reportCmd(context.Background(), []string{dir, "--out", out, "--overwrite"}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "which the report reads, is never replaced") {
			t.Errorf("--out %s --overwrite: %v, want a refusal", out, err)
		}
	}
	if after, _ := os.ReadFile(summary); !bytes.Equal(before, after) {
		t.Fatal("summary.json was replaced")
	}
}

// TestRunSpillDirUnwritable: a --spill-dir relabel cannot write is a bad
// flag value: exit 2 naming the flag, before anything runs.
func TestRunSpillDirUnwritable(t *testing.T) {
	in := filepath.Join(t.TempDir(), "a.parquet")
	writeRows(t, in, schemas.LabelInt32, nil, synthRows(0, 60))
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(file, "sub")}
	if os.Geteuid() == 0 {
		dirs = append(dirs, "/proc") // root writes anywhere but a pseudo file system
	} else {
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, ro)
	}
	for _, d := range dirs {
		out := filepath.Join(t.TempDir(), "out")
		r := relabel(t, "run", "--input", in, "--output", out, "--spill-dir", d, "--rounds", "1")
		if r.code != 2 || !strings.Contains(r.stderr, "--spill-dir") {
			t.Errorf("--spill-dir %s: exit %d, stderr %q; want 2 naming --spill-dir", d, r.code, tail(r.stderr, 300))
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--spill-dir %s: the output %s was made", d, out)
		}
	}
}

// TestRunCatalogCredentialsInClear: a REST catalog over plain http:// beyond
// loopback with a token or client credential in the environment is refused
// with exit 2 naming --catalog and why, never showing the credential.
func TestRunCatalogCredentialsInClear(t *testing.T) {
	const secret = "s3cr3t-value"
	for _, env := range []string{catalogname.EnvCatalogToken, catalogname.EnvCatalogCredential} {
		t.Run(env, func(t *testing.T) {
			for _, k := range []string{catalogname.EnvCatalogToken, catalogname.EnvCatalogCredential, catalogname.EnvCatalogOAuthURI} {
				t.Setenv(k, "")
			}
			t.Setenv(env, "relabel:"+secret)
			start := time.Now()
			r := relabel(t, "run", "--catalog", "http://203.0.113.7:8181/", "--input-table", "ns.items", "--output-table", "ns.out")
			if r.code != 2 || !strings.Contains(r.stderr, "--catalog") || !strings.Contains(r.stderr, "plain http://") || !strings.Contains(r.stderr, env) {
				t.Errorf("exit %d, stderr %q; want 2 naming --catalog, %s and why", r.code, tail(r.stderr, 400), env)
			}
			if strings.Contains(r.stderr+r.stdout, secret) {
				t.Errorf("the output shows the credential: %q", r.stderr)
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("refused after %s", d)
			}
		})
	}
	t.Run("password in the URI", func(t *testing.T) {
		r := relabel(t, "run", "--catalog", "https://user:pa55 word@cat.example.com/", "--input-table", "ns.items", "--output-table", "ns.out")
		if r.code != 2 || strings.Contains(r.stderr, "pa55") || strings.Contains(r.stderr, "word@") {
			t.Errorf("exit %d, stderr %q; want 2 without the password", r.code, tail(r.stderr, 400))
		}
	})
}

// TestRunOneClass: labels all in one class are refused up front with exit 2
// naming --input and the reason, and no output is made.
func TestRunOneClass(t *testing.T) {
	in := filepath.Join(t.TempDir(), "a.parquet")
	rows := synthRows(0, 60)
	for i := range rows.Labels {
		rows.Labels[i] = 0
	}
	writeRows(t, in, schemas.LabelInt32, nil, rows)
	out := filepath.Join(t.TempDir(), "out")
	r := relabel(t, "run", "--input", in, "--output", out)
	if r.code != 2 || !strings.Contains(r.stderr, "--input") || !strings.Contains(r.stderr, "one class") {
		t.Errorf("exit %d, stderr %q; want 2 naming --input and one class", r.code, tail(r.stderr, 400))
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the output %s was made", out)
	}
}
