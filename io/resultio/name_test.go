package resultio

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/relabel/relabel/io/shardio"
)

// TestOutputNameBounded: short names keep today's exact form; a name that
// with ReportSuffix would pass MaxNameBytes is cut to fit, at a character
// boundary, deterministically, and distinct long names stay distinct.
func TestOutputNameBounded(t *testing.T) {
	for _, c := range []struct {
		in   string
		f    shardio.Format
		want string
	}{
		{"data/noisy-idn-0.4-part-0000.parquet", shardio.ArrowFile, "noisy-idn-0.4-part-0000.arrow"},
		{`C:\\data\\a.b.parquet`, shardio.Parquet, "a.b.parquet"},
		{"gs://bucket/x/shard", shardio.ArrowStream, "shard.arrow"},
		{strings.Repeat("a", 237) + ".parquet", shardio.ArrowFile, strings.Repeat("a", 237) + ".arrow"},
	} {
		if got := OutputName(c.in, c.f); got != c.want {
			t.Errorf("OutputName(%q, %v) = %q, want %q", c.in, c.f, got, c.want)
		}
	}
	long := func(s string) string { return "/in/" + strings.Repeat("x", 240) + s + ".parquet" }
	seen := map[string]string{}
	for _, in := range []string{long("a"), long("b"), long("ab"), "/in/" + strings.Repeat("é", 123) + "z.parquet", "/in/" + strings.Repeat("é", 123) + "y.parquet"} {
		for _, f := range []shardio.Format{shardio.ArrowFile, shardio.Parquet} {
			got := OutputName(in, f)
			if n := len(got + ReportSuffix); n > MaxNameBytes {
				t.Errorf("OutputName(%q) + report = %d bytes, want <= %d", in, n, MaxNameBytes)
			}
			if !utf8.ValidString(got) || !strings.HasSuffix(got, f.Ext()) {
				t.Errorf("OutputName(%q) = %q: not valid UTF-8 ending in %s", in, got, f.Ext())
			}
			if again := OutputName(in, f); again != got {
				t.Errorf("OutputName(%q) not deterministic: %q then %q", in, got, again)
			}
			if other, ok := seen[got]; ok && other != in {
				t.Errorf("OutputName(%q) = OutputName(%q) = %q", in, other, got)
			}
			seen[got] = in
		}
	}
}

// TestOutputNameNotAnnotators: an input named like the annotators file gets
// another output name in every format, so readers that skip the annotators
// file keep its rows and an annotator-aware run's annotators file cannot
// replace it.
func TestOutputNameNotAnnotators(t *testing.T) {
	for _, in := range []string{"crowd/annotators.parquet", "annotators.arrow", "gs://b/annotators"} {
		for _, f := range []shardio.Format{shardio.ArrowFile, shardio.Parquet} {
			got := OutputName(in, f)
			if got == AnnotatorsBase+f.Ext() || !strings.HasPrefix(got, AnnotatorsBase+"-") || !strings.HasSuffix(got, f.Ext()) {
				t.Errorf("OutputName(%q, %v) = %q, want %s-HASH%s", in, f, got, AnnotatorsBase, f.Ext())
			}
		}
	}
	if got := OutputName("annotators-5.parquet", shardio.ArrowFile); got != "annotators-5.arrow" {
		t.Errorf("OutputName(annotators-5.parquet) = %q, want annotators-5.arrow unchanged", got)
	}
}
