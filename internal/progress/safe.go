package progress

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Safe returns s as it may be printed to a terminal: every byte or rune a
// terminal would act on rather than show is written as a Go escape, so that
// data (ids, class names, annotator names) and file names in messages can
// neither move the cursor, clear the screen, set a window title (ESC, CSI,
// OSC, BEL), nor break a line or a table (\n, \r, \t), nor reorder what
// follows (Unicode bidirectional controls). Escaped are C0 controls and DEL
// (\x1b, \n, \t, ...), C1 controls (U+0080..U+009F, which some terminals
// take as CSI), bidi controls (\u202e, ...) and bytes that are not UTF-8
// (\xff); a backslash stays as it is, so an escaped string is for reading,
// not for parsing back. Text needing none of this is returned unchanged
// (the common case, without allocating).
//
// strconv.Quote was looked at: it escapes the same, but also every quote
// and backslash and adds quotes of its own, which changes ordinary names
// and paths in tables and messages.
func Safe(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r, n):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether the rune r, n bytes long, is one Safe escapes.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n <= 1:
		return true // not UTF-8
	case r < 0x20 || r == 0x7f:
		return true // C0 controls, DEL
	case r >= 0x80 && r <= 0x9f:
		return true // C1 controls
	case r == 0x061c || r == 0x200e || r == 0x200f:
		return true // bidi marks
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidi embeddings, overrides and isolates
	}
	return false
}
