package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hostile are the strings of a hostile-input probe: sequences that clear the
// screen, recolour it and set the window title, newlines that break a
// table, bidi overrides and bytes that are not UTF-8.
var hostile = []struct{ name, in, want string }{
	{"plain", "class-7 naïve", "class-7 naïve"},
	{"clear screen", "a\x1b[2J\x1b[Hb", `a\x1b[2J\x1b[Hb`},
	{"recolour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
	{"OSC title", "\x1b]0;pwned\x07x", `\x1b]0;pwned\x07x`},
	{"newlines", "one\ntwo\r\nthree\tfour", `one\ntwo\r\nthree\tfour`},
	{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
	{"bidi override", "abc\u202edcba", `abc\u202edcba`},
	{"invalid UTF-8", "ok\xff\xfebad", `ok\xff\xfebad`},
	{"backslash kept", `C:\data`, `C:\data`},
}

func TestSafe(t *testing.T) {
	for _, c := range hostile {
		got := Safe(c.in)
		if got != c.want {
			t.Errorf("%s: Safe(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: Safe(%q) = %q is not valid UTF-8", c.name, c.in, got)
		}
		for _, r := range got {
			if unsafeRune(r, utf8.RuneLen(r)) {
				t.Errorf("%s: Safe(%q) = %q still holds %U", c.name, c.in, got, r)
			}
		}
	}
}

// TestDisplaySafe: a note (a skipped file's name) and a Printf line (Beam's
// log) reach the terminal escaped, one line each.
func TestDisplaySafe(t *testing.T) {
	var buf bytes.Buffer
	d := NewDisplay(&buf, false, time.Now)
	d.Handle(Event{Kind: Note, Text: "evil\x1b[2J\x1b]0;title\x07\nname.parquet: no rows, skipped"})
	d.Printf("warning from %s", "x\x1b[31m\ny")
	out := buf.String()
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("display wrote a raw escape: %q", out)
	}
	if lines := strings.Count(out, "\n"); lines != 2 {
		t.Errorf("display wrote %d lines, want 2 (one per message): %q", lines, out)
	}
}
