package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunVerbose: --verbose shows Beam's and Prism's own INFO lines, which a
// plain run hides (TestCLITestdataShards checks that side).
func TestRunVerbose(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	r := mustRelabel(t, "run", "--input", digitsShards, "--output", out, "--verbose", "--report=false", "--rounds", "2")
	for _, want := range []string{"level=INFO", "Submitted job", "relabel: round 2/2"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--verbose stderr lacks %q:\n%s", want, tail(r.stderr, 2000))
		}
	}
}

// TestRunProgressTmux runs relabel in a real terminal (a tmux pane) and
// captures the pane while it runs and after: one line updated in place (no
// scrolling log of rounds), no INFO noise, and the text report at the end.
// tmux comes from Debian (.ci/run installs it); the test skips without it.
func TestRunProgressTmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed (apt-get install tmux): the terminal progress test needs a real terminal")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "tmux.sock")
	out := filepath.Join(dir, "out")
	in, err := filepath.Abs(digitsShards)
	if err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "done")
	script := relabelBin + " run --input '" + in + "' --output " + out + " --report=false; touch " + done + "; sleep 600"
	tm := func(args ...string) string {
		cmd := exec.Command(tmux, append([]string{"-S", sock}, args...)...)
		cmd.Env = append(os.Environ(), "TERM=xterm")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, b)
		}
		return string(b)
	}
	tm("new-session", "-d", "-s", "p", "-x", "160", "-y", "50", script)
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()

	var live []string // the pane's non-empty lines while running
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(done); err == nil {
			break
		}
		pane := tm("capture-pane", "-p", "-t", "p")
		if strings.Contains(pane, "round ") && !strings.Contains(pane, "rows relabelled") {
			live = append(live, strings.TrimSpace(pane))
		}
		time.Sleep(150 * time.Millisecond)
	}
	if _, err := os.Stat(done); err != nil {
		t.Fatalf("relabel did not finish in the tmux pane:\n%s", tm("capture-pane", "-p", "-t", "p"))
	}
	if len(live) == 0 {
		t.Fatal("never saw a progress line while the run was going")
	}
	for _, p := range live {
		lines := nonEmpty(p)
		if len(lines) != 1 {
			t.Errorf("while running the pane holds %d lines, want one live line:\n%s", len(lines), p)
			break
		}
		if !strings.HasPrefix(lines[0], "relabel: ") || !strings.Contains(lines[0], "elapsed") || !strings.Contains(lines[0], "rows read") {
			t.Errorf("live line %q lacks stage, rows read or elapsed time", lines[0])
		}
	}
	final := tm("capture-pane", "-p", "-t", "p")
	for _, noise := range []string{"level=INFO", "Staged binary", "round 1/10\n"} {
		if strings.Contains(final, noise) {
			t.Errorf("final pane shows %q:\n%s", noise, final)
		}
	}
	for _, want := range []string{"1797 rows relabelled", "Noisiest classes", "Likeliest wrong labels"} {
		if !strings.Contains(final, want) {
			t.Errorf("final pane lacks %q:\n%s", want, final)
		}
	}
	t.Logf("%d captures of the live line, last %q; final pane:\n%s", len(live), live[len(live)-1], strings.Join(nonEmpty(final), "\n"))
}

func nonEmpty(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
