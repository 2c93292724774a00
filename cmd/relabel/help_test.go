package main

import (
	"strings"
	"testing"
)

// TestHelpListsCommands: `relabel --help`,
// `-h`, `help` and `-help` print relabel's usage, every command listed, on
// stdout with exit 0, not Beam's flag set (which main hands flags to when
// relabel runs as a Beam worker); no arguments prints the same usage on
// stderr with exit 2.
func TestHelpListsCommands(t *testing.T) {
	commands := []string{"run", "noise", "eval", "report", "synth", "worker", "version"}
	check := func(args []string, code int, text string, got result) {
		t.Helper()
		if got.code != code {
			t.Errorf("relabel %q: exit %d, want %d", args, got.code, code)
		}
		for _, c := range commands {
			if !strings.Contains(text, "relabel "+c) {
				t.Errorf("relabel %q: the usage does not list %q:\n%s", args, c, text)
			}
		}
		// Beam's flags (and Go's flag package's heading) must not appear.
		for _, beam := range []string{"environment_type", "Usage of", "-runner"} {
			if strings.Contains(got.stdout+got.stderr, beam) {
				t.Errorf("relabel %q prints Beam's flags (%q):\n%s", args, beam, tail(got.stdout+got.stderr, 1500))
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"-help"}, {"--h"}} {
		r := relabel(t, args...)
		check(args, 0, r.stdout, r)
	}
	r := relabel(t)
	check(nil, 2, r.stderr, r)
}
