package reportio

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestText checks the terminal report against the report it summarises: the
// noisiest classes in order of estimated noise, the top pairs and suspects.
func TestText(t *testing.T) {
	f := goldenFixture()
	dir := t.TempDir()
	f.write(t, dir, nil)
	r, err := Build(context.Background(), dir, Options{Top: 20})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Text(&b, 3); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	section := func(head string) []string {
		for i, l := range lines {
			if strings.HasPrefix(l, head) {
				var body []string
				for _, m := range lines[i+1:] {
					if strings.TrimSpace(m) == "" {
						break
					}
					body = append(body, m)
				}
				return body
			}
		}
		t.Fatalf("no section %q in:\n%s", head, out)
		return nil
	}
	classes := section("Noisiest classes")
	if len(classes) != 4 { // header + 3
		t.Fatalf("noisiest classes has %d lines, want header + 3:\n%s", len(classes), out)
	}
	// The rows are in decreasing noise rate: check against the report.
	prev := 2.0
	for _, l := range classes[1:] {
		var name string
		for _, c := range r.Classes {
			if strings.HasPrefix(strings.TrimSpace(l), c.Name+" ") || strings.Contains(l, "  "+c.Name+"  ") {
				name = c.Name
				if c.NoiseRate > prev {
					t.Errorf("class %s (noise %.3f) listed after one of %.3f", c.Name, c.NoiseRate, prev)
				}
				prev = c.NoiseRate
				if !strings.Contains(l, pct(c.NoiseRate)) {
					t.Errorf("line %q lacks class %s's noise %s", l, c.Name, pct(c.NoiseRate))
				}
			}
		}
		if name == "" {
			t.Errorf("line %q names no class", l)
		}
	}
	pairs := section("Most changed pairs")
	if want := min(3, len(r.Pairs)); len(pairs) != want {
		t.Errorf("pairs has %d lines, want %d", len(pairs), want)
	}
	if len(r.Pairs) > 0 {
		p := r.Pairs[0]
		if !strings.Contains(pairs[0], fmt.Sprintf("%s -> %s", r.name(int(p.Given)), r.name(int(p.Clean)))) ||
			!strings.Contains(pairs[0], fmt.Sprintf("%d rows", p.Count)) {
			t.Errorf("first pair line %q, want %+v", pairs[0], p)
		}
	}
	sus := section("Likeliest wrong labels")
	if len(sus) != 4 {
		t.Fatalf("suspects has %d lines, want header + 3", len(sus))
	}
	for i, s := range r.Suspects[:3] {
		if f := strings.Fields(sus[i+1]); f[0] != s.ID || f[len(f)-2] != fmt.Sprintf("%.3f", s.GivenProb) {
			t.Errorf("suspect %d line %q, want id %s given_label_prob %.3f", i, sus[i+1], s.ID, s.GivenProb)
		}
	}
	if r.Labelled < r.Rows && !strings.Contains(out, "were unlabelled") {
		t.Errorf("report does not say that %d rows were unlabelled", r.Rows-r.Labelled)
	}
}
