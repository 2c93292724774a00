package release

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

type config struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		Formats []string `yaml:"formats"`
		Files   []string `yaml:"files"`
	} `yaml:"archives"`
}

// TestGoreleaserConfig: .goreleaser.yaml is goreleaser's version 2 format,
// builds the relabel command pure Go, names only platforms Go supports, and
// every target's packages resolve (go list -deps under its GOOS/GOARCH with
// CGO off): what `goreleaser release --snapshot` would fail on first.
func TestGoreleaserConfig(t *testing.T) {
	b, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c config
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	// Top-level keys goreleaser v2 knows (of those relabel may use): a
	// misspelt one would be ignored by a lenient reader, and is caught here.
	var top map[string]any
	if err := yaml.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	known := []string{"version", "project_name", "before", "builds", "archives", "checksum", "snapshot", "changelog", "release", "signs", "sboms", "dockers", "nfpms", "brews", "env", "dist", "gomod", "metadata"}
	for k := range top {
		if !slices.Contains(known, k) {
			t.Errorf("top-level key %q is not one goreleaser v2 reads", k)
		}
	}
	if c.Version != 2 {
		t.Errorf("version %d, want 2 (goreleaser v2's format)", c.Version)
	}
	if len(c.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(c.Builds))
	}
	bd := c.Builds[0]
	if bd.Main != "./cmd/relabel" || bd.Binary != "relabel" {
		t.Errorf("build main %q binary %q, want ./cmd/relabel, relabel", bd.Main, bd.Binary)
	}
	if !slices.Contains(bd.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %v: want CGO_ENABLED=0 (binaries that need no C libraries)", bd.Env)
	}
	if len(c.Archives) == 0 || !slices.Contains(c.Archives[0].Files, "README.md") {
		t.Errorf("archives %+v: want README.md shipped", c.Archives)
	}
	for _, f := range c.Archives[0].Files {
		if _, err := os.Stat("../../" + f); err != nil {
			t.Errorf("archive file %s: %v", f, err)
		}
	}
	out, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	platforms := strings.Fields(string(out))
	if len(bd.Goos)*len(bd.Goarch) == 0 {
		t.Fatal("no targets")
	}
	for _, goos := range bd.Goos {
		for _, goarch := range bd.Goarch {
			if !slices.Contains(platforms, goos+"/"+goarch) {
				t.Errorf("%s/%s is not a Go platform", goos, goarch)
				continue
			}
			cmd := exec.Command("go", append(append([]string{"list", "-deps"}, bd.Flags...), "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}", bd.Main)...)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-buildvcs=false")
			cmd.Env = append(cmd.Env, bd.Env...)
			// Errors come on stdout (the template) or as the exit status;
			// stderr may also say "go: downloading" for a module only
			// another platform needs, which is not one.
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			got, err := cmd.Output()
			if err != nil || strings.TrimSpace(string(got)) != "" {
				t.Errorf("%s/%s: go list -deps %s: %v\n%s%s", goos, goarch, bd.Main, err, got, stderr.Bytes())
			}
		}
	}
}
