package prism

import (
	"bytes"
	"go/format"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestStartListensOnLoopback: the job server's address is 127.0.0.1, and
// it accepts connections there until closed.
func TestStartListensOnLoopback(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(s.Endpoint())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Endpoint() = %q: want 127.0.0.1:PORT", s.Endpoint())
	}
	c, err := net.Dial("tcp", s.Endpoint())
	if err != nil {
		t.Fatalf("dialling the job server: %v", err)
	}
	c.Close()
	s.Close()
	if c, err := net.Dial("tcp", s.Endpoint()); err == nil {
		c.Close()
		t.Errorf("the job server still accepts connections after Close")
	}
}

// TestForkMatchesBeam keeps the copy honest: internal/ must be Beam's Prism
// of the Beam version in go.mod (BEAM_VERSION), rewritten as
// scripts/prism-fork.sh does, with only the files patches.diff names
// differing (and each of those differing). After a Beam upgrade it fails
// until scripts/prism-fork.sh is run again.
func TestForkMatchesBeam(t *testing.T) {
	const mod = "github.com/apache/beam/sdks/v2"
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", mod).Output()
	if err != nil {
		t.Skipf("go list -m %s: %v (no module source to compare with)", mod, err)
	}
	dir, version, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	have, err := os.ReadFile("internal/BEAM_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(have)); got != version {
		t.Fatalf("the copy is of Beam %s, go.mod has %s: run scripts/prism-fork.sh", got, version)
	}
	src := filepath.Join(dir, "go/pkg/beam/runners/prism/internal")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no Beam source in the module cache: %v", err)
	}
	diff, err := os.ReadFile("patches.diff")
	if err != nil {
		t.Fatal(err)
	}
	patched := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\+\+\+ b/(\S+)`).FindAllSubmatch(diff, -1) {
		patched[string(m[1])] = true
	}
	upstream := map[string]bool{}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "web" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		upstream[rel] = true
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		want, err := format.Source(rewrite(b))
		if err != nil {
			t.Errorf("%s: the rewritten upstream file does not format: %v", rel, err)
			return nil
		}
		got, err := os.ReadFile(filepath.Join("internal", rel))
		if err != nil {
			t.Errorf("%s: not in the copy: %v (run scripts/prism-fork.sh)", rel, err)
			return nil
		}
		switch same := bytes.Equal(got, want); {
		case !same && !patched[rel]:
			t.Errorf("%s differs from Beam %s's but patches.diff does not patch it: run scripts/prism-fork.sh (or scripts/prism-fork.sh --diff > patches.diff)", rel, version)
		case same && patched[rel]:
			t.Errorf("%s is Beam %s's unchanged but patches.diff patches it: the patch is lost", rel, version)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	filepath.WalkDir("internal", func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel("internal", p)
		if err == nil && !d.IsDir() && strings.HasSuffix(rel, ".go") && !upstream[filepath.ToSlash(rel)] {
			extra = append(extra, rel)
		}
		return nil
	})
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("the copy holds files Beam %s has not: %v", version, extra)
	}
}

// rewrite is scripts/prism-fork.sh's sed: the import paths of the copy, and
// Beam's internal errors package (not importable from here) replaced by fmt.
func rewrite(b []byte) []byte {
	const mod = "github.com/apache/beam/sdks/v2"
	s := strings.ReplaceAll(string(b), mod+"/go/pkg/beam/runners/prism/internal", "github.com/relabel/relabel/runners/internal/prism/internal")
	var lines []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.Contains(l, `"`+mod+`/go/pkg/beam/internal/errors"`) {
			continue
		}
		lines = append(lines, l)
	}
	s = strings.ReplaceAll(strings.Join(lines, ""), "errors.Errorf(", "fmt.Errorf(")
	return []byte(s)
}
